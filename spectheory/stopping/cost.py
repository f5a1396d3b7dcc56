"""The cost model of a round (:class:`Cost`, :func:`as_cost`); defined in :mod:`spectheory.cost`
(``docs/cost.md``), re-exported here where the draft-length policies use it."""

from ..cost.base import Cost, as_cost

__all__ = ["Cost", "as_cost"]

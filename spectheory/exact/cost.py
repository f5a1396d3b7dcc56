"""The cost model of a round (:class:`Cost`, :func:`as_cost`), re-exported from its room
:mod:`spectheory.cost` (``docs/cost.md``), where cost models (:class:`~spectheory.cost.CostModel`)
live too; kept so that ``from spectheory.exact.cost import Cost`` keeps working."""

from ..cost.base import Cost, as_cost

__all__ = ["Cost", "as_cost"]

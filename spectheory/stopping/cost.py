"""The cost model of a round (:class:`Cost`, :func:`as_cost`); defined in :mod:`spectheory.exact.cost`
so that every result type (exact, Monte Carlo, decoder) can take it, re-exported here where the
draft-length policies use it."""

from ..exact.cost import Cost, as_cost

__all__ = ["Cost", "as_cost"]

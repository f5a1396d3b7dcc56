r"""Helpers for rules that act one position at a time (rejection-based, batch, biased): the
per-kernel cache of their tables and the draft length of a round. Their Monte Carlo is
:func:`spectheory.simulate` (a path round, or a ``BatchRound`` for batch decoding); their
exact values come from
:func:`spectheory.exact.phase_recursion`.
"""

from __future__ import annotations

from .._guards import check_int
from ..laws.sampling import sample_categorical

__all__ = ["per_kernel", "round_length"]


def per_kernel(chain, build):
    """``n -> build(target_n, draft_n)``, computed once per distinct kernel and cached.

    Homogeneous chains share one kernel for every position; otherwise the value is cached
    per position index ``n``.
    """
    cache = {}

    def get(n):
        key = 0 if chain.is_homogeneous else n
        if key not in cache:
            cache[key] = build(*chain.kernels(n))
        return cache[key]

    return get


def round_length(gamma: int | None, horizon: int, n0: int) -> int:
    """Draft length ``k = min(gamma, T - n0)`` of a round at ``n0`` (``gamma=None``: ``T - n0``)."""
    return horizon - n0 if gamma is None else min(gamma, horizon - n0)


def _check_gamma(gamma):
    return None if gamma is None else check_int(gamma, "gamma", 1)


def _categorical(probs, u):
    """Inverse-CDF sampling (:func:`spectheory.laws.sampling.sample_categorical`)."""
    return sample_categorical(probs, u)

r"""Leviathan et al.'s i.i.d. formula against the exact value on a chain.

Leviathan et al. (2023) predict the tokens per target call from one number, the average
acceptance :math:`\alpha`: :math:`(1 - \alpha^{\gamma+1})/(1 - \alpha)`
(:func:`spectheory.laws.closed_form.expected_tokens_per_call`). On a chain whose acceptance
depends on the context this is only an approximation; :func:`leviathan_gap` computes both
(the exact value by :mod:`spectheory.exact.expectations`) and :func:`easy_hard_chain` builds chains
with the same average acceptance and any amount of context dependence. The names are
re-exported by :mod:`spectheory.exact.expectations`.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_int, check_nonneg
from .expectations import expected_tokens_per_call, predicted_speedup, tv_profile
from ..laws.closed_form import expected_tokens_per_call as _formula_tokens_per_call

__all__ = ["LeviathanGap", "leviathan_gap", "easy_hard_chain"]


@dataclass(frozen=True)
class LeviathanGap:
    r"""Exact chain value against Leviathan et al.'s i.i.d. formula.

    ``alpha`` = average acceptance ``1 - mean(tv_profile)``; ``formula`` =
    ``(1 - alpha**(gamma+1)) / (1 - alpha)``; ``exact`` = ``T / E[calls]`` on the chain;
    ``iid_exact`` = the same protocol on a one-state chain with acceptance ``alpha`` and
    the same ``T`` (isolates the effect of context from the end-of-horizon truncation);
    ``relative_error`` = ``formula / exact - 1``. Speedups are given when ``c`` is.
    """

    horizon: int
    gamma: int
    alpha: float
    exact: float
    formula: float
    iid_exact: float
    relative_error: float
    c: float | None = None
    exact_speedup: float | None = None
    formula_speedup: float | None = None


def leviathan_gap(chain, horizon, gamma, bonus=True, c=None) -> LeviathanGap:
    """How far Leviathan's formula with ``alpha`` = average acceptance is from the chain.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])
    >>> gap = chain.leviathan_gap(4000, 3)
    >>> round(gap.formula, 6), abs(gap.relative_error) < 1e-3
    (1.875, True)
    """
    from ..chain.core import DecodingChain

    T = chain.check_horizon(horizon)
    G = check_int(gamma, "gamma", 1)
    alpha = float(np.clip(1.0 - tv_profile(chain, T).mean(), 0.0, 1.0))
    exact = expected_tokens_per_call(chain, T, G, bonus)
    formula = float(_formula_tokens_per_call(alpha, G))
    iid = DecodingChain.iid([1.0, 0.0], [alpha, 1.0 - alpha])
    iid_exact = expected_tokens_per_call(iid, T, G, bonus)
    kw = {}
    if c is not None:
        cc = float(check_nonneg(c, "c"))
        kw = dict(c=cc, exact_speedup=predicted_speedup(chain, T, G, cc, bonus),
                  formula_speedup=formula / (G * cc + 1.0))
    return LeviathanGap(T, G, alpha, exact, formula, iid_exact, formula / exact - 1.0, **kw)


def easy_hard_chain(stay, easy_accept=0.95, hard_accept=0.3, group_size=4):
    r"""A chain whose acceptance depends on context: easy and hard token groups.

    Tokens ``0..m-1`` are *easy*, ``m..2m-1`` *hard* (``m = group_size``); token ``2m``
    is a junk token the target never emits. The state is the last token. In a state of
    group ``g`` the target emits a uniform token of the same group with probability
    ``stay`` and of the other group otherwise; the draft is
    ``a_g * target + (1 - a_g) * junk``, so the acceptance is exactly ``a_g``
    (``easy_accept`` or ``hard_accept``). The initial state is uniform over real tokens,
    so by symmetry every position has average acceptance
    ``alpha = (easy_accept + hard_accept) / 2`` whatever ``stay``; ``stay`` only sets how
    long easy and hard stretches last (``stay = 1/2``: i.i.d. groups).

    Examples
    --------
    >>> from spectheory.exact.iid_gap import easy_hard_chain
    >>> chain = easy_hard_chain(0.9)
    >>> round(float(1 - chain.tv_profile(5).mean()), 12)
    0.625
    """
    from ..chain.core import DecodingChain

    st_ = float(stay)
    if not 0.0 <= st_ <= 1.0:
        raise ValueError(f"stay: must lie in [0, 1], got {stay!r}")
    for name, a in (("easy_accept", easy_accept), ("hard_accept", hard_accept)):
        if not 0.0 <= float(a) <= 1.0:
            raise ValueError(f"{name}: must lie in [0, 1], got {a!r}")
    m = check_int(group_size, "group_size", 1)
    V = 2 * m + 1
    target = np.zeros((V, V))
    draft = np.zeros((V, V))
    for s in range(V):
        g = 0 if s < m else 1  # the junk state behaves like a hard one (never visited)
        same = slice(0, m) if g == 0 else slice(m, 2 * m)
        other = slice(m, 2 * m) if g == 0 else slice(0, m)
        target[s, same] = st_ / m
        target[s, other] = (1.0 - st_) / m
        a = float(easy_accept) if g == 0 else float(hard_accept)
        draft[s] = a * target[s]
        draft[s, 2 * m] += 1.0 - a
    initial = np.r_[np.full(2 * m, 1.0 / (2 * m)), 0.0]
    return DecodingChain(target, draft, initial)

r"""Leviathan et al.'s i.i.d. formula against the exact value on a chain.

Leviathan et al. (2023) predict the tokens per target call from one number, the average
acceptance :math:`\alpha`: :math:`(1 - \alpha^{\gamma+1})/(1 - \alpha)`
(:func:`spectheory.laws.closed_form.iid_tokens_per_call`). On a chain whose acceptance
depends on the context this is only an approximation; :func:`leviathan_gap` computes both
(the exact value by the chain's :meth:`~spectheory.DecodingChain.protocol`), and
:func:`spectheory.chain.examples.easy_hard_chain` builds chains with the same average
acceptance and any amount of context dependence.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from .._guards import check_int, check_nonneg
from ..laws.closed_form import iid_tokens_per_call as _formula_tokens_per_call
from .expectations import tv_profile

if TYPE_CHECKING:
    from .._protocols import ChainWithViews

__all__ = ["LeviathanGap", "leviathan_gap"]


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


def leviathan_gap(
    chain: ChainWithViews, horizon: int, gamma: int, bonus: bool = True, c: float | None = None
) -> LeviathanGap:
    """How far Leviathan's formula with ``alpha`` = average acceptance is from the chain.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])
    >>> gap = chain.leviathan_gap(4000, 3)
    >>> round(gap.formula, 6), abs(gap.relative_error) < 1e-3
    (1.875, True)
    """
    T = chain.check_horizon(horizon)
    G = check_int(gamma, "gamma", 1)
    alpha = float(np.clip(1.0 - tv_profile(chain, T).mean(), 0.0, 1.0))
    exact = chain.expected_tokens_per_call(T, G, bonus=bonus)
    formula = float(_formula_tokens_per_call(alpha, G))
    iid = type(chain).iid([1.0, 0.0], [alpha, 1.0 - alpha])  # same class: no import of chain/
    iid_exact = iid.expected_tokens_per_call(T, G, bonus=bonus)
    kw = {}
    if c is not None:
        cc = float(check_nonneg(c, "c"))
        kw = dict(
            c=cc,
            exact_speedup=chain.predicted_speedup(T, G, cc, bonus=bonus),
            formula_speedup=formula / (G * cc + 1.0),
        )
    return LeviathanGap(T, G, alpha, exact, formula, iid_exact, formula / exact - 1.0, **kw)

r"""Batch speculative decoding on a chain (first-token construction): exact expected rejections.
Its Monte Carlo is ``st.simulate(chain, T, BatchRound(M, gamma))`` (:class:`spectheory.trees.BatchRound`).

The one-position rule is :mod:`spectheory.verifiers.batch_step`.
Notation: p = target, q = draft.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..verifiers._positional import _check_gamma, per_kernel
from ..verifiers.batch_step import _check_M, batch_first_token_masses

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["BatchRejections", "batch_expected_rejections"]


@dataclass
class BatchRejections:
    """Exact expected rejections of batch speculative decoding on a chain.

    Attributes
    ----------
    total : float
        Expected rejections (from the phase recursion).
    theorem1 : float
        :math:`\\sum_n E[\\mathrm{TV}_n]` (expected rejections of standard decoding, bonus off).
    checked_tv : float
        :math:`\\sum_n E[\\mathrm{TV}_n; n \\text{ is a check}]` (= theorem1 when bonus is off).
    improvement : float
        :math:`\\sum_{n,s} P(\\text{start}_n, s)(\\mathrm{TV}_n(s) - Z_{M+1,n}(s)) \\ge 0`;
        ``total == checked_tv - improvement``.
    target_calls, draft_tokens : float
        Expected rounds, and drafted tokens (``M * k`` per round; ``inf`` for ``M = inf``).
    rejection_profile : ndarray, shape (T,)
    """

    total: float
    theorem1: float
    checked_tv: float
    improvement: float
    target_calls: float
    draft_tokens: float
    rejection_profile: np.ndarray


def batch_expected_rejections(
    chain: ChainLike, horizon: int, M: int, gamma: int | None = None, bonus: bool = True
) -> BatchRejections:
    r"""Exact expected rejections of batch speculative decoding with ``M`` drafts.

    Phase 0 of each round uses the batch first-token masses
    (:func:`batch_first_token_masses`), later phases the plain token masses
    ``min(p, q)`` and ``max(p - q, 0)``; the phase recursion
    (:func:`spectheory.exact.phase.phase_recursion`) gives the total and the round starts,
    which give the improvement term, and the check masses, which give ``checked_tv``;
    ``total == checked_tv - improvement`` relates the recursion's rejection count to its
    state masses. ``M = numpy.inf`` gives the limit. ``gamma=None`` drafts to the end of
    the horizon (then ``bonus`` has no effect).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.analysis import batch_expected_rejections
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> res = batch_expected_rejections(chain, 6, M=4)
    >>> bool(abs(res.total - (res.theorem1 - res.improvement)) < 1e-12), res.improvement > 0
    (True, True)
    """
    T = chain.check_horizon(horizon)
    M = _check_M(M, allow_inf=True)
    gamma = _check_gamma(gamma)
    tables = per_kernel(
        chain, lambda t, d: (batch_first_token_masses(t, d, M), (np.minimum(t, d), np.maximum(t - d, 0.0)))
    )

    def masses(n, i):
        first, plain = tables(n)
        return first if i == 0 else plain

    from ..exact import phase_recursion

    G = T if gamma is None else gamma
    res = phase_recursion(
        chain, T, G, bonus, lambda n, i: masses(n, i)[0], lambda n, i: masses(n, i)[1], phase_dependent=True
    )
    checks = res.check_mass
    tvs = np.stack([chain.tv_table if chain.is_homogeneous else chain.tv_table[n] for n in range(T)])
    zb = np.stack([tables(n)[0][1].sum(-1) for n in range(T)])
    theorem1 = float(np.einsum("ns,ns->", chain.state_marginals(T), tvs))
    checked = float(np.einsum("ns,ns->", checks, tvs))
    imp = float(np.einsum("ns,ns->", res.round_starts, tvs - zb))
    # the limit M = inf drafts infinitely many tokens per round
    drafted = np.inf if np.isinf(M) else res.draft_tokens * M
    return BatchRejections(
        res.rejections, theorem1, checked, imp, res.target_calls, drafted, res.rejection_by_position
    )

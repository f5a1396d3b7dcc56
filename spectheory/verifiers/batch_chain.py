r"""Batch speculative decoding on a chain: exact expected rejections and Monte Carlo.

The math is in :mod:`spectheory.verifiers` (which re-exports these names).
Notation: p = target, q = draft.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._positional import per_kernel, simulate_positional, _categorical, _check_gamma
from .batch_step import _batch_tables, _batch_verify_first, _check_M, batch_first_token_masses
from .rejection import optimal_rejection_law, rejection_verify, standard_acceptance

__all__ = ["BatchRejections", "batch_expected_rejections", "simulate_batch", "holey_chain"]


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


def batch_expected_rejections(chain, horizon, M, gamma=None, bonus=False) -> BatchRejections:
    r"""Exact expected rejections of batch speculative decoding with ``M`` drafts.

    Phase 0 of each round uses the batch first-token masses
    (:func:`batch_first_token_masses`), later phases the plain token masses
    ``min(p, q)`` and ``max(p - q, 0)``; the phase recursion
    (:func:`spectheory.exact.expectations.phase_recursion`) gives the total and the round starts,
    which give the improvement term, and the check masses, which give ``checked_tv``;
    ``total == checked_tv - improvement`` relates the recursion's rejection count to its
    state masses. ``M = numpy.inf`` gives the limit. ``gamma=None`` drafts to the end of
    the horizon (then ``bonus`` has no effect).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.verifiers import batch_expected_rejections
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> res = batch_expected_rejections(chain, 6, M=4)
    >>> bool(abs(res.total - (res.theorem1 - res.improvement)) < 1e-12), res.improvement > 0
    (True, True)
    """
    T = chain.check_horizon(horizon)
    M = _check_M(M, allow_inf=True)
    gamma = _check_gamma(gamma)
    tables = per_kernel(chain, lambda t, d: (batch_first_token_masses(t, d, M),
                                             (np.minimum(t, d), np.maximum(t - d, 0.0))))

    def masses(n, i):
        first, plain = tables(n)
        return first if i == 0 else plain

    from ..exact.expectations import phase_recursion
    G = T if gamma is None else gamma
    res = phase_recursion(chain, T, G, bonus, lambda n, i: masses(n, i)[0],
                          lambda n, i: masses(n, i)[1], phase_dependent=True)
    checks = res.check_mass
    tvs = np.stack([chain.tv_table if chain.is_homogeneous else chain.tv_table[n] for n in range(T)])
    zb = np.stack([tables(n)[0][1].sum(-1) for n in range(T)])
    theorem1 = float(np.einsum("ns,ns->", chain.state_marginals(T), tvs))
    checked = float(np.einsum("ns,ns->", checks, tvs))
    imp = float(np.einsum("ns,ns->", res.round_starts, tvs - zb))
    # the limit M = inf drafts infinitely many tokens per round
    drafted = np.inf if np.isinf(M) else res.draft_tokens * M
    return BatchRejections(res.rejections, theorem1, checked, imp, res.target_calls,
                           drafted, res.rejection_by_position)


def simulate_batch(chain, horizon, gamma, M, n_runs, rng=None, bonus=False, return_tokens=False,
                   progress=None):
    """Monte Carlo of batch speculative decoding, vectorised over runs.

    Each round start draws ``M`` first-token candidates from the draft and applies
    :func:`batch_verify_first`; the rest of the accepted sequence is checked token by
    token (:func:`~spectheory.verifiers.rejection.rejection_verify` with the standard
    rule). Only the accepted sequence's continuation is drafted (the other ``M - 1``
    continuations are never looked at, so not drawing them leaves the law unchanged);
    ``draft_tokens`` still counts ``M * k`` per round.

    Returns a :class:`~spectheory.verifiers._positional.PositionalResult`.
    """
    M = _check_M(M)

    def build(t, d):
        acc, final = _batch_tables(t, d, M)
        b = standard_acceptance(t, d)
        return d, acc, final, b, optimal_rejection_law(t, d, b)
    tables = per_kernel(chain, build)

    def step(n, states, first, rng_):
        d, acc, final, b, res = tables(n)
        R = states.size
        if first:
            cand = _categorical(np.broadcast_to(d[states][:, None, :], (R, M, d.shape[-1])),
                                rng_.random((R, M)))
            p_acc = acc[np.arange(M)[None, :], states[:, None], cand]
            tok, rej, _ = _batch_verify_first(p_acc, cand, final[states], rng_.random((R, M)),
                                              rng_.random(R))
            return tok, rej
        x = _categorical(d[states], rng_.random(R))
        return rejection_verify(b[states, x], res[states], x, rng_.random(R), rng_.random(R))

    return simulate_positional(chain, horizon, gamma, n_runs, rng, step, bonus=bonus,
                               return_tokens=return_tokens, drafts_per_token=M, progress=progress)


def holey_chain(seed=7, vocab_size=7, horizon=50):
    """A random non-stationary chain whose draft puts no mass on token 0 in half of the states.

    :meth:`DecodingChain.random` with ``vocab_size`` tokens and ``horizon`` positions, then
    the draft's token-0 mass is removed (rows renormalised) in the even states. The target
    mass outside the draft's support keeps a rejection mass as ``M -> infinity`` (the
    batch example of ``simulations/batch_rejections.py`` and ``figures/fig2_batch.py``).

    Examples
    --------
    >>> from spectheory.verifiers import holey_chain
    >>> chain = holey_chain(vocab_size=3, horizon=4)
    >>> float(chain.draft[:, ::2, 0].max()), chain.vocab_size
    (0.0, 3)
    """
    from ..chain.core import DecodingChain

    base = DecodingChain.random(vocab_size, horizon=horizon, rng=seed)
    d = np.array(base.draft)
    d[:, ::2, 0] = 0.0
    d /= d.sum(-1, keepdims=True)
    return DecodingChain(base.target, d, base.initial)

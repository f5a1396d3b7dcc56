r"""Batch speculative decoding: M draft sequences per round (Yin et al. 2024, Theorem 3).

Notation: p = target, q = draft. The rule (Yin et al. 2024, arXiv 2411.00841, batch
algorithm; the construction below is the one REFERENCES.md marks "derived", proved here)::

    at a round start (state s, k = min(gamma, T - n0) tokens to draft):
        draw M draft sequences i.i.d. from the draft, first tokens x_1..x_M ~ q
        r_1 = p
        for m = 1..M:                       # recursive rejection over the first tokens
            accept x_m with probability min(1, r_m(x_m) / q(x_m))
            if accepted: emit x_m, continue along sequence m with plain token checks
                         (accept with min(1, p/q), residual norm(max(p - q, 0))) ; stop
            r_{m+1} = norm(max(r_m - q, 0))
        if all M rejected: emit y ~ r_{M+1}, count one rejection, end the round

**Scale form of the residuals.** By induction :math:`r_m = (p - c_m q)_+ / Z_m` with
:math:`c_1 = 0`, :math:`Z_m = \sum_x (p - c_m q)_+`, :math:`c_{m+1} = c_m + Z_m`: where
:math:`p > c_m q`, :math:`r_m - q = (p - (c_m + Z_m) q)/Z_m`, elsewhere
:math:`r_m - q = -q \le 0`. Hence :math:`\mathrm{TV}(q, r_m) = \sum (r_m - q)_+ =
Z_{m+1}/Z_m` and

.. math:: P(\text{all } M \text{ rejected}) = \prod_{m=1}^M \mathrm{TV}(q, r_m)
          = \prod_{m=1}^M \Big(1 - \sum_x \min(r_m, q)\Big) = Z_{M+1},

a telescoping product (:math:`Z_1 = 1`). Since :math:`\min(r_m, q) + \mathrm{TV}(q, r_m)
r_{m+1} = r_m`, the first token's law is :math:`r_1 = p` (**unbiased**), and the first
token is accepted with mass :math:`\min(p, c_{M+1} q)` and rejected with mass
:math:`(p - c_{M+1} q)_+`: one batch step acts like a standard step whose draft is
scaled by :math:`c_{M+1} \ge 1`. The rest of the accepted sequence is draft-distributed
given its first token (the selection used only first tokens), so later tokens are plain
token checks and prefixes stay target-distributed.

**Expected rejections.** With ``bonus=False`` every position is a check; it rejects with
:math:`\mathrm{TV}_n(s)` unless it starts a round, where it rejects with :math:`Z_{M+1,n}(s)
\le \mathrm{TV}_n(s)` (:math:`Z_2 = \mathrm{TV}`, :math:`Z` decreasing). So

.. math:: E[\text{rejections}] = \underbrace{\sum_n E[\mathrm{TV}_n]}_{\text{Theorem 1}}
   - \underbrace{\sum_n \sum_s P(\text{round starts at } n, s)\,(\mathrm{TV}_n(s) - Z_{M+1,n}(s))}_{\text{batch improvement} \;\ge 0}.

**Limit** :math:`M \to \infty`: :math:`c_m \uparrow` and :math:`Z_m \downarrow Z_\infty =
p(\{x: q(x) = 0\})`, the target mass outside the draft's support (if that mass is
positive, :math:`c_m \ge (m - 1) Z_\infty \to \infty`; otherwise :math:`Z_m \to 0`).
Round starts keep that rejection and later positions keep their TV: rejections do not
vanish.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import as_law_pair, check_int
from ._positional import per_kernel, simulate_positional, _categorical, _check_gamma
from .batch_closed_form import (bernoulli_batch_rejection, iid_batch_expected_rejections,
                                uniform_batch_rejection, uniform_instance)
from .rejection import optimal_rejection_law, rejection_verify, standard_acceptance

__all__ = [
    "batch_scales", "batch_residuals", "BatchStep", "batch_first_token", "batch_rejection_probability",
    "batch_first_token_masses", "batch_limit_rejection", "bernoulli_batch_rejection",
    "uniform_batch_rejection", "uniform_instance", "iid_batch_expected_rejections", "BatchRejections",
    "batch_expected_rejections", "batch_verify_first", "sample_batch_first_token", "simulate_batch",
    "holey_chain",
]


def _check_M(M, allow_inf=False):
    if allow_inf and isinstance(M, float) and np.isinf(M) and M > 0:
        return np.inf
    return check_int(M, "M", 1)


def batch_scales(target, draft, M):
    r"""Scales :math:`c_m` and masses :math:`Z_m`, ``m = 1..M+1`` (see the module docstring).

    Returns
    -------
    c, Z : ndarray, shape (M + 1, ...)
        ``Z[M]`` is the probability that all ``M`` candidates are rejected.

    Examples
    --------
    >>> from spectheory.verifiers.batch import batch_scales
    >>> c, Z = batch_scales([0.2, 0.8], [0.5, 0.5], 2)
    >>> c.round(12).tolist(), Z.round(12).tolist()
    ([0.0, 1.0, 1.3], [1.0, 0.3, 0.15])
    """
    t, d = as_law_pair(target, draft)
    M = _check_M(M)
    c = np.zeros((M + 1,) + t.shape[:-1])
    Z = np.zeros_like(c)
    for m in range(M + 1):
        if m:
            c[m] = c[m - 1] + Z[m - 1]
        Z[m] = np.clip(np.maximum(t - c[m][..., None] * d, 0.0).sum(-1), 0.0, 1.0)
    return c, Z


def batch_residuals(target, draft, M) -> np.ndarray:
    r"""Explicit recursion :math:`r_1 = p`, :math:`r_{m+1} = \mathrm{norm}(\max(r_m - q, 0))`.

    When :math:`r_m = q` (zero excess) candidate ``m`` is always accepted and
    :math:`r_{m+1}` is never used; it is then set to :math:`r_m`.

    Returns
    -------
    ndarray, shape (M + 1, ..., V)
    """
    t, d = as_law_pair(target, draft)
    M = _check_M(M)
    r = np.empty((M + 1,) + t.shape)
    r[0] = t
    for m in range(M):
        ex = np.maximum(r[m] - d, 0.0)
        mass = ex.sum(-1, keepdims=True)
        safe = mass > 1e-15
        r[m + 1] = np.where(safe, ex / np.where(safe, mass, 1.0), r[m])
    return r


@dataclass
class BatchStep:
    """Exact first-token behaviour of batch verification.

    Attributes
    ----------
    candidate_accepted : ndarray, shape (M, ..., V)
        Mass of "candidate ``m`` is the first accepted and it is ``x``".
    reach : ndarray, shape (M + 1, ...)
        Probability that candidate ``m`` is examined (``reach[M]``: all rejected).
    rejection : ndarray, shape (...)
        :math:`\\prod_m \\mathrm{TV}(q, r_m)`.
    final_law : ndarray, shape (..., V)
        :math:`r_{M+1}`, sampled when all are rejected.
    output : ndarray, shape (..., V)
        Law of the emitted first token (equals the target).
    """

    candidate_accepted: np.ndarray
    reach: np.ndarray
    rejection: np.ndarray
    final_law: np.ndarray
    output: np.ndarray


def batch_first_token(target, draft, M) -> BatchStep:
    r"""Exact law of the first token of a batch round, from the explicit residuals.

    .. math:: P(\text{emit } x) = \sum_{m=1}^M \Big[\prod_{j<m} \mathrm{TV}(q, r_j)\Big] \min(r_m(x), q(x))
              + \Big[\prod_{m=1}^M \mathrm{TV}(q, r_m)\Big] r_{M+1}(x) = p(x).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.batch import batch_first_token
    >>> step = batch_first_token([0.2, 0.8], [0.5, 0.5], 3)
    >>> round(float(step.rejection), 12), step.output.round(12).tolist()
    (0.075, [0.2, 0.8])
    """
    t, d = as_law_pair(target, draft)
    M = _check_M(M)
    r = batch_residuals(t, d, M)
    reach = np.ones((M + 1,) + t.shape[:-1])
    cand = np.empty((M,) + t.shape)
    for m in range(M):
        cand[m] = reach[m][..., None] * np.minimum(r[m], d)
        tv_m = np.clip(1.0 - np.minimum(r[m], d).sum(-1), 0.0, 1.0)
        reach[m + 1] = reach[m] * tv_m
    out = cand.sum(0) + reach[M][..., None] * r[M]
    return BatchStep(cand, reach, reach[M][()], r[M], out)


def batch_rejection_probability(target, draft, M):
    r"""Probability that all ``M`` first tokens are rejected, :math:`Z_{M+1}` (scale form).

    ``M = numpy.inf`` gives the limit :func:`batch_limit_rejection`.
    """
    M = _check_M(M, allow_inf=True)
    if np.isinf(M):
        return batch_limit_rejection(target, draft)
    return batch_scales(target, draft, M)[1][M][()]


def batch_first_token_masses(target, draft, M):
    r"""``(accepted, rejected)`` masses of a batch round's first token, each ``[..., V]``.

    accepted :math:`= \min(p, c_{M+1} q)`, rejected :math:`= (p - c_{M+1} q)_+`;
    ``M = numpy.inf``: accepted :math:`= p\,[q > 0]`, rejected :math:`= p\,[q = 0]`.
    """
    t, d = as_law_pair(target, draft)
    M = _check_M(M, allow_inf=True)
    if np.isinf(M):
        return np.where(d > 0, t, 0.0), np.where(d > 0, 0.0, t)
    c = batch_scales(t, d, M)[0][M][..., None]
    return np.minimum(t, c * d), np.maximum(t - c * d, 0.0)


def batch_limit_rejection(target, draft):
    r"""Limit :math:`M \to \infty` of the all-rejected probability: :math:`p(\{q = 0\})`."""
    t, d = as_law_pair(target, draft)
    return np.where(d > 0, 0.0, t).sum(-1)[()]


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
        Expected rounds, and drafted tokens (``M * k`` per round).
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
    (:func:`spectheory.analysis.phase_recursion`) gives the total and the round starts,
    which give the improvement term, and the check masses, which give ``checked_tv``;
    ``total == checked_tv - improvement`` relates the recursion's rejection count to its
    state masses. ``M = numpy.inf`` gives the limit. ``gamma=None`` drafts to the end of
    the horizon (then ``bonus`` has no effect).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.verifiers.batch import batch_expected_rejections
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

    from ..analysis import phase_recursion
    G = T if gamma is None else gamma
    res = phase_recursion(chain, T, G, bonus, lambda n, i: masses(n, i)[0],
                          lambda n, i: masses(n, i)[1], phase_dependent=True)
    checks = res.check_mass
    tvs = np.stack([chain.tv_table if chain.is_homogeneous else chain.tv_table[n] for n in range(T)])
    zb = np.stack([tables(n)[0][1].sum(-1) for n in range(T)])
    theorem1 = float(np.einsum("ns,ns->", chain.state_marginals(T), tvs))
    checked = float(np.einsum("ns,ns->", checks, tvs))
    imp = float(np.einsum("ns,ns->", res.round_starts, tvs - zb))
    mult = 1 if np.isinf(M) else M
    return BatchRejections(res.rejections, theorem1, checked, imp, res.target_calls,
                           res.draft_tokens * mult, res.rejection_by_position)


def batch_verify_first(candidate_accept_prob, candidates, final_law, u_accept, u_final):
    """The recursive-rejection rule over ``M`` candidates, on hand-given uniforms.

    Parameters
    ----------
    candidate_accept_prob : array_like, shape (R, M)
        :math:`\\min(1, r_m(x_m)/q(x_m))` of each run's candidate ``m``.
    candidates : array_like of int, shape (R, M)
    final_law : array_like, shape (R, V)
        :math:`r_{M+1}`, sampled (inverse CDF at ``u_final``) when all are rejected.
    u_accept : array_like, shape (R, M)
    u_final : array_like, shape (R,)

    Returns
    -------
    token : ndarray of int, shape (R,)
    rejected : ndarray of bool, shape (R,)
    index : ndarray of int, shape (R,)
        The accepted candidate (``M`` when all were rejected).

    Examples
    --------
    >>> from spectheory.verifiers.batch import batch_verify_first
    >>> tok, rej, idx = batch_verify_first([[0.5, 0.9]], [[0, 1]], [[0.0, 0.0, 1.0]], [[0.7, 0.2]], [0.3])
    >>> tok.tolist(), rej.tolist(), idx.tolist()
    ([1], [False], [1])
    """
    acc = np.asarray(u_accept) < np.asarray(candidate_accept_prob)
    cand = np.asarray(candidates)
    R, M = acc.shape
    anyacc = acc.any(1)
    index = np.where(anyacc, np.argmax(acc, 1), M)
    y = _categorical(np.asarray(final_law, dtype=np.float64), np.asarray(u_final, dtype=np.float64))
    tok = np.where(anyacc, cand[np.arange(R), np.minimum(index, M - 1)], y)
    return tok, ~anyacc, index


def sample_batch_first_token(target, draft, M, size, rng=None):
    """Draw ``size`` independent first tokens of batch rounds at one position.

    Draws ``M`` candidates from the draft and the uniforms, then calls
    :func:`batch_verify_first`. Returns ``(tokens, rejected, index)``, each ``[size]``.
    """
    t, d = as_law_pair(target, draft)
    if t.ndim != 1:
        raise ValueError(f"target: expected a 1-d law, got shape {t.shape}")
    M = _check_M(M)
    n = check_int(size, "size", 1)
    rng = np.random.default_rng(rng)
    acc, final = _batch_tables(t[None], d[None], M)
    cand = _categorical(np.broadcast_to(d, (n, M, d.size)), rng.random((n, M)))
    p_acc = acc[np.arange(M)[None, :], 0, cand]
    return batch_verify_first(p_acc, cand, np.broadcast_to(final[0], (n, d.size)),
                              rng.random((n, M)), rng.random(n))


def _batch_tables(t, d, M):
    """Per-state candidate acceptance ``[M, S, V]`` and final law ``[S, V]``."""
    c, Z = batch_scales(t, d, M)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(d > 0, t / np.where(d > 0, d, 1.0), np.inf)
    acc = np.empty((M,) + t.shape)
    for m in range(M):
        zm = Z[m][:, None]
        num = np.maximum(ratio - c[m][:, None], 0.0)
        acc[m] = np.where(zm > 1e-15, np.minimum(1.0, num / np.where(zm > 1e-15, zm, 1.0)), 1.0)
    ex = np.maximum(t - c[M][:, None] * d, 0.0)
    mass = ex.sum(-1, keepdims=True)
    final = np.where(mass > 1e-15, ex / np.where(mass > 1e-15, mass, 1.0), t)
    return acc, final


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
            tok, rej, _ = batch_verify_first(p_acc, cand, final[states], rng_.random((R, M)),
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
    >>> from spectheory.verifiers.batch import holey_chain
    >>> chain = holey_chain(vocab_size=3, horizon=4)
    >>> float(chain.draft[:, ::2, 0].max()), chain.vocab_size
    (0.0, 3)
    """
    from ..chain import DecodingChain

    base = DecodingChain.random(vocab_size, horizon=horizon, rng=seed)
    d = np.array(base.draft)
    d[:, ::2, 0] = 0.0
    d /= d.sum(-1, keepdims=True)
    return DecodingChain(base.target, d, base.initial)

r"""Batch speculative decoding, first-token construction: scales, residuals, first-token law, rule.

Everything in :mod:`.batch_step`, :mod:`.batch_chain` and :mod:`.batch_closed_form` is about
one reading of batch decoding with ``M`` draft sequences: the **first-token construction**,
"derived, consistent with Yin et al. 2024 (arXiv 2411.00841), Theorem 3" (their pseudo-code
could not be read; this is the construction that fits what secondary sources report). The
other natural reading -- recursive rejection at *every* position over all drafts that agree
with the accepted prefix -- is :mod:`spectheory.kinds.batch.exact`; it never rejects more
and its limit differs (docs/trees.md). Formulas are written with ``target`` and ``draft``
(p = target, q = draft in the papers' letters)::

    at a round start (state s, k = min(gamma, T - n0) tokens to draft):
        draw M draft sequences i.i.d. from the draft, first tokens x_1..x_M ~ draft
        r_1 = target
        for m = 1..M:                       # recursive rejection over the first tokens
            accept x_m with probability min(1, r_m(x_m) / draft(x_m))
            if accepted: emit x_m, continue along sequence m with plain token checks
                         (accept with min(1, target/draft), residual norm(max(target - draft, 0))); stop
            r_{m+1} = norm(max(r_m - draft, 0))
        if all M rejected: emit y ~ r_{M+1}, count one rejection, end the round

**Scale form of the residuals.** By induction
:math:`r_m = (\mathrm{target} - c_m\,\mathrm{draft})_+ / Z_m` with :math:`c_1 = 0`,
:math:`Z_m = \sum_x (\mathrm{target} - c_m\,\mathrm{draft})_+`, :math:`c_{m+1} = c_m + Z_m`.
Hence :math:`\mathrm{TV}(\mathrm{draft}, r_m) = Z_{m+1}/Z_m` and
:math:`P(\text{all } M \text{ first tokens rejected}) = Z_{M+1}` (a telescoping product,
:math:`Z_1 = 1`). Since :math:`\min(r_m, \mathrm{draft}) + \mathrm{TV}(\mathrm{draft}, r_m)\,
r_{m+1} = r_m`, the first token's law is ``target`` (unbiased); it is accepted with mass
:math:`\min(\mathrm{target}, c_{M+1}\,\mathrm{draft})`: one batch step acts like a standard
step whose draft is scaled by :math:`c_{M+1} \ge 1`. The rest of the accepted sequence is
draft-distributed given its first token, so later tokens are plain token checks.

**Expected rejections** (``bonus=False``): every position is a check; it rejects with
:math:`\mathrm{TV}_n(s)` unless it starts a round, where it rejects with
:math:`Z_{M+1,n}(s) \le \mathrm{TV}_n(s)`; so under this construction the improvement over
Theorem 1's :math:`\sum_n E[\mathrm{TV}_n]` comes only from round starts.

**Limit** :math:`M \to \infty` (of this construction): :math:`Z_m \downarrow Z_\infty =
\mathrm{target}(\{x: \mathrm{draft}(x) = 0\})`; round starts keep that rejection and later
positions keep their TV, so rejections saturate above zero. Under the tree reading the limit
is the target mass outside the draft's support at *every* position instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law_pair, as_rng, check_int
from .._typing import RNGLike
from ..laws.sampling import MASS_TOL, normalize_or, safe_ratio
from ._positional import _categorical

__all__ = [
    "batch_scales",
    "batch_residuals",
    "BatchStep",
    "batch_first_token",
    "batch_rejection_probability",
    "batch_first_token_masses",
    "batch_limit_rejection",
    "batch_verify_first",
    "sample_batch_first_token",
]


def _check_M(M, allow_inf=False):
    if allow_inf and isinstance(M, float) and np.isinf(M) and M > 0:
        return np.inf
    return check_int(M, "M", 1)


def batch_scales(target: ArrayLike, draft: ArrayLike, M: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Scales :math:`c_m` and masses :math:`Z_m`, ``m = 1..M+1`` (see the module docstring).

    Returns
    -------
    c, Z : ndarray, shape (M + 1, ...)
        ``Z[M]`` is the probability that all ``M`` candidates are rejected.

    Examples
    --------
    >>> from spectheory.verifiers.batch_step import batch_scales
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


def batch_residuals(target: ArrayLike, draft: ArrayLike, M: int) -> np.ndarray:
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
        r[m + 1] = normalize_or(np.maximum(r[m] - d, 0.0), r[m])[0]
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


def batch_first_token(target: ArrayLike, draft: ArrayLike, M: int) -> BatchStep:
    r"""Exact law of the first token of a batch round, from the explicit residuals.

    .. math:: P(\text{emit } x) = \sum_{m=1}^M \Big[\prod_{j<m} \mathrm{TV}(q, r_j)\Big] \min(r_m(x), q(x))
              + \Big[\prod_{m=1}^M \mathrm{TV}(q, r_m)\Big] r_{M+1}(x) = p(x).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.batch_step import batch_first_token
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


def batch_rejection_probability(target: ArrayLike, draft: ArrayLike, M: int) -> np.ndarray | float:
    r"""Probability that all ``M`` first tokens are rejected, :math:`Z_{M+1}` (scale form).

    ``M = numpy.inf`` gives the limit :func:`batch_limit_rejection`.
    """
    M = _check_M(M, allow_inf=True)
    if np.isinf(M):
        return batch_limit_rejection(target, draft)
    return batch_scales(target, draft, M)[1][M][()]


def batch_first_token_masses(target: ArrayLike, draft: ArrayLike, M: int) -> tuple[np.ndarray, np.ndarray]:
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


def batch_limit_rejection(target: ArrayLike, draft: ArrayLike) -> np.ndarray | float:
    r"""Limit :math:`M \to \infty` of the all-rejected probability: :math:`p(\{q = 0\})`."""
    t, d = as_law_pair(target, draft)
    return np.where(d > 0, 0.0, t).sum(-1)[()]


def batch_verify_first(
    candidate_accept_prob: ArrayLike,
    candidates: ArrayLike,
    final_law: ArrayLike,
    u_accept: ArrayLike,
    u_final: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
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
    >>> from spectheory.verifiers.batch_step import batch_verify_first
    >>> tok, rej, idx = batch_verify_first([[0.5, 0.9]], [[0, 1]], [[0.0, 0.0, 1.0]], [[0.7, 0.2]], [0.3])
    >>> tok.tolist(), rej.tolist(), idx.tolist()
    ([1], [False], [1])
    """
    p = np.asarray(candidate_accept_prob, dtype=np.float64)
    cand = np.asarray(candidates)
    law = np.asarray(final_law, dtype=np.float64)
    ua = np.asarray(u_accept, dtype=np.float64)
    uf = np.asarray(u_final, dtype=np.float64)
    if p.ndim != 2:
        raise ValueError(f"candidate_accept_prob: expected shape (R, M), got {p.shape}")
    R, M = p.shape
    for a, name, shape in ((cand, "candidates", (R, M)), (ua, "u_accept", (R, M)), (uf, "u_final", (R,))):
        if a.shape != shape:
            raise ValueError(f"{name}: expected shape {shape}, got {a.shape}")
    if law.ndim != 2 or law.shape[0] != R or law.shape[1] == 0:
        raise ValueError(f"final_law: expected shape ({R}, V), got {law.shape}")
    if not np.all((p >= 0) & (p <= 1)):
        raise ValueError("candidate_accept_prob: acceptance probabilities must lie in [0, 1]")
    if not np.issubdtype(cand.dtype, np.integer) or (
        cand.size and (cand.min() < 0 or cand.max() >= law.shape[1])
    ):
        raise ValueError(f"candidates: expected integer tokens in [0, {law.shape[1]})")
    if not np.all(np.isfinite(law) & (law >= 0)):
        raise ValueError("final_law: laws must be finite and non-negative")
    return _batch_verify_first(p, cand, law, ua, uf)


def _batch_verify_first(candidate_accept_prob, candidates, final_law, u_accept, u_final):
    """:func:`batch_verify_first` without the input checks (the simulator's hot path: its
    tables come from a validated chain)."""
    acc = np.asarray(u_accept) < np.asarray(candidate_accept_prob)
    cand = np.asarray(candidates)
    R, M = acc.shape
    anyacc = acc.any(1)
    index = np.where(anyacc, np.argmax(acc, 1), M)
    y = _categorical(np.asarray(final_law, dtype=np.float64), np.asarray(u_final, dtype=np.float64))
    tok = np.where(anyacc, cand[np.arange(R), np.minimum(index, M - 1)], y)
    return tok, ~anyacc, index


def sample_batch_first_token(
    target: ArrayLike, draft: ArrayLike, M: int, size: int, rng: RNGLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``size`` independent first tokens of batch rounds at one position.

    Draws ``M`` candidates from the draft and the uniforms, then calls
    :func:`batch_verify_first`. Returns ``(tokens, rejected, index)``, each ``[size]``.
    """
    t, d = as_law_pair(target, draft)
    if t.ndim != 1:
        raise ValueError(f"target: expected a 1-d law, got shape {t.shape}")
    M = _check_M(M)
    n = check_int(size, "size", 1)
    rng = as_rng(rng)
    acc, final = _batch_tables(t[None], d[None], M)
    cand = _categorical(np.broadcast_to(d, (n, M, d.size)), rng.random((n, M)))
    p_acc = acc[np.arange(M)[None, :], 0, cand]
    return _batch_verify_first(
        p_acc, cand, np.broadcast_to(final[0], (n, d.size)), rng.random((n, M)), rng.random(n)
    )


def _batch_tables(t, d, M):
    """Per-state candidate acceptance ``[M, S, V]`` and final law ``[S, V]``."""
    c, Z = batch_scales(t, d, M)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = safe_ratio(t, d)
    acc = np.empty((M,) + t.shape)
    for m in range(M):
        zm = Z[m][:, None]
        num = np.maximum(ratio - c[m][:, None], 0.0)
        acc[m] = np.where(zm > MASS_TOL, np.minimum(1.0, safe_ratio(num, zm, 1.0)), 1.0)
    final = normalize_or(np.maximum(t - c[M][:, None] * d, 0.0), t)[0]
    return acc, final

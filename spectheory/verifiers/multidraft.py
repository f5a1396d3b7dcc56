r"""Multi-draft verification at one position: recursive rejection sampling (RRS).

``k`` candidate tokens are drafted from the draft law at one position and verified
against the target; exactly one token is emitted and its law is exactly the target.
Notation: p = target, q = draft (code says ``target``/``draft``).

Two candidate schemes:

- **with replacement** (SpecInfer, Miao et al. 2024): ``x_1..x_k ~ draft`` i.i.d.;
- **without replacement** (Sequoia, Chen et al. 2024; recursive speculative decoding,
  Jeon et al. 2024): successive sampling, candidate ``i`` is drawn from the draft with
  the earlier candidates removed and renormalised (``draft_i``).

Rule (pseudo-code)::

    r_1 = target
    for i = 1..k:
        accept x_i with probability min(1, r_i(x_i) / draft_i(x_i)); if accepted emit x_i, stop
        r_{i+1} = norm(max(r_i - draft_i, 0))     # draft_i = draft with replacement
    emit y ~ r_{k+1}

Losslessness, by induction from the last step: whatever ``draft_i`` is, one speculative
step with target ``r_i`` followed by *any* procedure that emits ``r_{i+1}`` emits
``min(r_i, draft_i) + TV(r_i, draft_i) r_{i+1} = r_i``. The continuation after rejecting
``x_i`` emits ``r_{i+1}`` whatever ``x_i`` was (induction), so the whole rule emits ``r_1 =
target``. A rejected token has ``r_i(x_i) < draft_i(x_i)``, so ``r_{i+1}(x_i) = 0``: the
final residual never emits a drafted token and the acceptance (a candidate is accepted)
equals ``P(output in the drafted set)``.

With replacement the residuals do not depend on the candidates, so
``P(accept) = 1 - prod_{i=1..k} TV(r_i, draft)``. Without replacement they do, and the exact
values enumerate the rejected candidate paths (``V! / (V - k)!`` at most; fine for small
``V``). Without replacement at most ``nnz(draft)`` candidates exist; for larger ``k``
only ``nnz(draft)`` are drafted (candidate slots beyond hold ``-1``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law_pair, as_rng, check_int
from .._sizes import MAX_PATHS, positive_branches
from .._typing import RNGLike
from ..laws.sampling import categorical as _categorical
from ..laws.sampling import norm_excess as _norm_excess
from ..laws.sampling import safe_ratio

__all__ = [
    "rrs_acceptance",
    "rrs_output_law",
    "rrs_residuals",
    "rrs_rule",
    "rrs_verify",
    "sample_candidates",
    "candidates_from_uniforms",
    "check_multidraft_args",
]

#: Residual mass below this is rounding noise of equal laws (see :func:`spectheory.residual`).


def check_multidraft_args(
    target: ArrayLike, draft: ArrayLike, k: int, replacement: bool = True
) -> tuple[np.ndarray, np.ndarray, int]:
    """Validate ``(target, draft, k)``: two 1-d laws of equal length and ``k >= 1``
    (``k <= V`` without replacement). Returns float64 arrays and ``k``."""
    t, d = as_law_pair(target, draft)
    if t.ndim != 1:
        raise ValueError(f"target and draft: expected 1-d laws over the vocabulary, got shape {t.shape}")
    k = check_int(k, "k", 1)
    if not replacement and k > t.size:
        raise ValueError(f"k: without replacement k must be <= vocabulary size {t.size}, got {k}")
    return t, d, k


def rrs_residuals(target: ArrayLike, draft: ArrayLike, k: int) -> np.ndarray:
    r"""Residual targets ``r_1 = target, ..., r_{k+1}`` of RRS **with replacement**.

    ``r_{i+1} = norm(max(r_i - draft, 0))`` (``r_i`` itself when that mass is 0, i.e. when a
    rejection at step ``i`` is impossible). Shape ``[k + 1, V]``.
    """
    t, d, k = check_multidraft_args(target, draft, k)
    out = np.empty((k + 1, t.size))
    out[0] = t
    for i in range(k):
        out[i + 1] = _norm_excess(out[i], d)[0]
    return out


def _wo_paths(t, d, k):
    """Enumerate RRS without replacement. Yields per step ``(prob_reach, r, d_cur)`` arrays.

    Returns ``(accept_mass [V], final_mass [V], reject_prob)``: the probability that token
    ``x`` is emitted by acceptance, by the final residual, and the total final probability.
    """
    V = t.size
    acc = np.zeros(V)
    fin = np.zeros(V)
    fail = 0.0
    # frontier of paths: arrays of prob [P], r [P, V], draft_cur [P, V]
    prob = np.ones(1)
    r = t[None].copy()
    dc = d[None].copy()
    n_paths = 1
    for _ in range(k):
        mass = dc.sum(-1)  # summed directly over the tokens left
        live = mass > 0  # any positive mass is drafted, as by the sampler
        # paths whose draft support is exhausted draft nothing more: they go to the residual
        fin += (prob[~live, None] * r[~live]).sum(0)
        fail += float(prob[~live].sum())
        prob, r, dc = prob[live], r[live], dc[live] / mass[live, None]
        if prob.size == 0:
            break
        acc += (prob[:, None] * np.minimum(r, dc)).sum(0)
        rej = prob[:, None] * np.maximum(dc - r, 0.0)  # [P, V]: x drafted and rejected
        r_next, _ = _norm_excess(r, dc)
        p_idx, x_idx, n_paths = positive_branches(
            rej,
            n_paths,
            MAX_PATHS,
            lambda: (
                f"k: exact RRS without replacement needs more than {MAX_PATHS} paths (V={V}, k={k}); use Monte Carlo"
            ),
        )
        prob = rej[p_idx, x_idx]
        r = r_next[p_idx]
        dc = dc[p_idx].copy()
        dc[np.arange(p_idx.size), x_idx] = 0.0
    fin += (prob[:, None] * r).sum(0)
    return acc, fin, fail + float(prob.sum())


def rrs_acceptance(target: ArrayLike, draft: ArrayLike, k: int, replacement: bool = True) -> float:
    r"""Probability that recursive rejection sampling accepts one of ``k`` candidates.

    With replacement (SpecInfer): :math:`1 - \prod_{i=1}^{k} \mathrm{TV}(r_i, q)` with
    :math:`r_1 = p`, :math:`r_{i+1} = \mathrm{norm}(\max(r_i - q, 0))`. Without replacement
    (Sequoia): exact enumeration of the rejected-candidate paths (see the module docstring).
    For ``k = 1`` both are :math:`\sum_x \min(p(x), q(x))`.

    Parameters
    ----------
    target, draft : array_like, shape (V,)
    k : int >= 1 (``<= V`` without replacement)
    replacement : bool

    Returns
    -------
    float

    Examples
    --------
    >>> from spectheory.verifiers.multidraft import rrs_acceptance
    >>> round(rrs_acceptance([0.5, 0.5], [0.9, 0.1], 1), 6)
    0.6
    >>> round(rrs_acceptance([0.5, 0.5], [0.9, 0.1], 2), 6)
    0.64
    >>> round(rrs_acceptance([0.5, 0.5], [0.9, 0.1], 2, replacement=False), 6)
    1.0
    """
    t, d, k = check_multidraft_args(target, draft, k, replacement)
    if replacement:
        res = rrs_residuals(t, d, k)
        tvs = 0.5 * np.abs(res[:k] - d).sum(-1)
        return float(np.clip(1.0 - np.prod(tvs), 0.0, 1.0))
    _, _, rej = _wo_paths(t, d, k)
    return float(np.clip(1.0 - rej, 0.0, 1.0))


def rrs_output_law(
    target: ArrayLike, draft: ArrayLike, k: int, replacement: bool = True, parts: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    r"""Exact law of the token emitted by RRS (computed, not assumed: it equals ``target``).

    :math:`P(Y = y) = \sum_i P(\text{reach } i) \min(r_i(y), q_i(y)) + P(\text{all rejected}) r_{k+1}(y)`
    (averaged over candidate paths without replacement).

    Parameters
    ----------
    parts : bool
        If True return ``(accepted [V], residual [V])``, the mass emitted by acceptance and
        by the final residual (their sum is the law).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.multidraft import rrs_output_law
    >>> t, d = np.array([0.2, 0.5, 0.3]), np.array([0.6, 0.1, 0.3])
    >>> np.testing.assert_allclose(rrs_output_law(t, d, 2), t)
    >>> np.testing.assert_allclose(rrs_output_law(t, d, 3, replacement=False), t)
    """
    t, d, k = check_multidraft_args(target, draft, k, replacement)
    if replacement:
        res = rrs_residuals(t, d, k)
        tvs = 0.5 * np.abs(res[:k] - d).sum(-1)
        reach = np.concatenate([[1.0], np.cumprod(tvs)])
        acc = (reach[:k, None] * np.minimum(res[:k], d)).sum(0)
        fin = reach[k] * res[k]
    else:
        acc, fin, _ = _wo_paths(t, d, k)
    return (acc, fin) if parts else acc + fin


def candidates_from_uniforms(draft: ArrayLike, k: int, u: np.ndarray, replacement: bool = True) -> np.ndarray:
    r"""Map uniforms to ``k`` candidates per run (random draws kept apart from rules).

    With replacement ``u`` has shape ``[R, k]`` (inverse CDF per candidate). Without
    replacement ``u`` has shape ``[R, V]``: Gumbel top-k, ``argsort(-(log q + G))`` with
    ``G = -log(-log u)``, which is exactly successive sampling (Vieira 2014; Kool et al.
    2019). Slots beyond ``nnz(draft)`` hold ``-1``.

    Returns
    -------
    ndarray of int64, shape (R, k)
    """
    d = np.asarray(draft, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    if replacement:
        return _categorical(np.broadcast_to(d, u.shape + d.shape), u)
    with np.errstate(divide="ignore"):
        keys = np.log(d) - np.log(-np.log(np.clip(u, 1e-300, 1.0 - 1e-16)))
    order = np.argsort(-keys, axis=-1, kind="stable")[..., :k]
    valid = d[order] > 0
    return np.where(valid, order, -1).astype(np.int64)


def sample_candidates(
    draft: ArrayLike, k: int, n: int, rng: RNGLike = None, replacement: bool = True
) -> np.ndarray:
    """Draw ``n`` independent sets of ``k`` candidates from ``draft``; shape ``[n, k]``.

    Examples
    --------
    >>> from spectheory.verifiers.multidraft import sample_candidates
    >>> sample_candidates([0.5, 0.5, 0.0], 3, 2, rng=0, replacement=False)[:, 2].tolist()
    [-1, -1]
    """
    d = np.asarray(draft, dtype=np.float64)
    k = check_int(k, "k", 1)
    rng = as_rng(rng)
    u = rng.random((n, k) if replacement else (n, d.size))
    return candidates_from_uniforms(d, k, u, replacement)


def rrs_rule(
    target: ArrayLike,
    draft: ArrayLike,
    candidates: ArrayLike,
    u_accept: ArrayLike,
    u_final: ArrayLike,
    replacement: bool = True,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Pure RRS rule on hand-given uniforms, vectorised over runs.

    Parameters
    ----------
    target, draft : array_like, shape (V,)
    candidates : int array, shape (R, k)
        Drafted tokens (``-1`` = no candidate, only without replacement).
    u_accept : array, shape (R, k)
        Uniforms of the acceptance tests: candidate ``i`` is accepted iff
        ``u_accept[:, i] < r_i(x_i) / draft_i(x_i)``.
    u_final : array, shape (R,)
        Uniform for the final residual sample (inverse CDF).

    Returns
    -------
    accepted_index : ndarray of int, shape (R,)
        Index of the accepted candidate, ``-1`` if all were rejected.
    token : ndarray of int, shape (R,)
        The emitted token.
    """
    t, d = as_law_pair(target, draft)
    x = np.asarray(candidates, dtype=np.int64)
    R, k = x.shape
    ua = np.asarray(u_accept, dtype=np.float64)
    uf = np.asarray(u_final, dtype=np.float64)
    if ua.shape != (R, k) or uf.shape != (R,):
        raise ValueError(
            f"u_accept, u_final: expected shapes {(R, k)} and {(R,)}, got {ua.shape}, {uf.shape}"
        )
    if x.size and (x.min() < -1 or x.max() >= t.size):
        raise ValueError(f"candidates: entries must lie in [0, {t.size}) (or -1 for no candidate)")
    r = np.broadcast_to(t, (R, t.size)).copy()
    dc = np.broadcast_to(d, (R, d.size)).copy()
    idx = np.full(R, -1, dtype=np.int64)
    token = np.full(R, -1, dtype=np.int64)
    active = np.ones(R, dtype=bool)
    rows = np.arange(R)
    for i in range(k):
        xi = x[:, i]
        has = active & (xi >= 0)
        xs = np.where(has, xi, 0)
        dx = dc[rows, xs]
        ratio = safe_ratio(r[rows, xs], dx, 0.0)
        acc = has & (ua[:, i] < ratio)
        idx[acc] = i
        token[acc] = xs[acc]
        active &= ~acc
        rej = has & ~acc
        if np.any(rej):
            new_r, _ = _norm_excess(r[rej], dc[rej])
            r[rej] = new_r
            if not replacement:
                dsub = dc[rej]
                dsub[np.arange(dsub.shape[0]), xs[rej]] = 0.0
                dc[rej] = dsub / dsub.sum(-1, keepdims=True).clip(min=1e-300)
    if np.any(active):
        token[active] = _categorical(r[active], uf[active])
    return idx, token


def rrs_verify(
    target: ArrayLike, draft: ArrayLike, k: int, n: int, rng: RNGLike = None, replacement: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n`` RRS rounds: draw candidates and uniforms, apply :func:`rrs_rule`.

    Returns ``(accepted_index [n], token [n])``.

    Examples
    --------
    >>> from spectheory.verifiers.multidraft import rrs_verify
    >>> idx, tok = rrs_verify([0.5, 0.5], [0.9, 0.1], 2, 1000, rng=0)
    >>> idx.shape, tok.shape
    ((1000,), (1000,))
    """
    t, d, k = check_multidraft_args(target, draft, k, replacement)
    n = check_int(n, "n", 1)
    rng = as_rng(rng)
    cand = sample_candidates(d, k, n, rng, replacement)
    ua = rng.random((n, k))
    uf = rng.random(n)
    return rrs_rule(t, d, cand, ua, uf, replacement)

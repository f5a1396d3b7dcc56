r"""K-SEQ multi-draft verification (SpecTr, Sun et al., NeurIPS 2023, Algorithm 3).

``k`` candidates are drafted i.i.d. from the draft law at one position. Notation: p = target,
q = draft (code says ``target``/``draft``). For a division factor ``rho in [1, k]`` let

.. math::
    \beta(\rho) = \sum_x \min\big(q(x), p(x)/\rho\big), \qquad
    c(\rho) = \frac{1 - (1 - \beta)^k}{\beta} = \sum_{j=0}^{k-1} (1-\beta)^j .

Rule (pseudo-code)::

    for i = 1..k:
        accept x_i with probability min(1, p(x_i) / (rho q(x_i))); if accepted emit x_i, stop
    emit y ~ p_res,  p_res(y) = (p(y) - min(q(y), p(y)/rho) c) / (1 - beta)^k

A candidate is accepted with probability ``1 - (1 - beta)^k``; token ``y`` is emitted by
acceptance with probability ``min(q(y), p(y)/rho) c``, so the emitted law is exactly ``p``
whenever ``p_res >= 0``. Validity (``p_res >= 0``): for tokens with ``q >= p/rho`` it needs
``c <= rho``, for the others it follows from ``c <= rho``. So ``rho`` is valid iff
``f(rho) = rho beta(rho) - (1 - (1 - beta(rho))^k) >= 0`` (the rare tokens-only case where a
smaller ``rho`` would also be valid gives the same ``beta``, see below).
``rho beta(rho) = sum_x min(rho q, p)`` increases with ``rho`` and ``beta`` decreases, so
``f`` is increasing: the valid ``rho`` form an interval ``[rho*, k]`` (``f(k) >= 0`` since
``c <= k``) and, ``beta`` being decreasing, the best acceptance is at ``rho*``, found by
bisection. (If ``p_res >= 0`` held at some ``rho < rho*``, then no token with ``p > 0``
would have ``q >= p/rho``, so ``beta = q(supp p)`` is constant on ``[rho, rho*]``: same acceptance.)

SpecTr (Theorem 3) shows K-SEQ attains at least ``1 - (1 - 1/k)^k >= 1 - 1/e`` of the optimal
acceptance :func:`spectheory.analysis.optimal_transport.optimal_multidraft_acceptance`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_rng, check_int
from .._typing import RNGLike
from ..laws.sampling import normalize_or, safe_ratio
from .multidraft import _categorical, check_multidraft_args, sample_candidates

__all__ = [
    "kseq_rho",
    "kseq_beta",
    "kseq_acceptance",
    "kseq_output_law",
    "kseq_residual",
    "kseq_rule",
    "kseq_verify",
]


def kseq_beta(target: ArrayLike, draft: ArrayLike, rho: float) -> float:
    r""":math:`\beta(\rho) = \sum_x \min(q(x), p(x)/\rho)`."""
    t = np.asarray(target, dtype=np.float64)
    d = np.asarray(draft, dtype=np.float64)
    return float(np.minimum(d, t / rho).sum())


def _validity(t, d, k, rho):
    b = kseq_beta(t, d, rho)
    return rho * b - (1.0 - (1.0 - b) ** k)


def kseq_rho(target: ArrayLike, draft: ArrayLike, k: int, tol: float = 1e-14) -> float:
    r"""Smallest valid division factor :math:`\rho^* \in [1, k]` (bisection on ``f(rho) >= 0``).

    The returned value always satisfies ``f(rho) >= 0`` (the upper end of the final bracket).

    Examples
    --------
    >>> from spectheory.verifiers.kseq import kseq_rho
    >>> kseq_rho([0.3, 0.7], [0.6, 0.4], 1)
    1.0
    >>> 1.0 < kseq_rho([0.3, 0.7], [0.6, 0.4], 2) < 2.0
    True
    """
    t, d, k = check_multidraft_args(target, draft, k)
    if _validity(t, d, k, 1.0) >= 0.0:
        return 1.0
    lo, hi = 1.0, float(k)
    for _ in range(200):
        if hi - lo <= tol * hi:
            break
        mid = 0.5 * (lo + hi)
        if _validity(t, d, k, mid) >= 0.0:
            hi = mid
        else:
            lo = mid
    return hi


def _resolve_rho(t, d, k, rho):
    if rho is None:
        return kseq_rho(t, d, k)
    try:
        rho = float(rho)
    except (TypeError, ValueError):
        raise ValueError(f"rho: expected a number in [1, k], got {rho!r}") from None
    if not np.isfinite(rho) or rho < 1.0 or rho > k:
        raise ValueError(f"rho: the division factor must lie in [1, k] = [1, {k}], got {rho!r}")
    if _validity(t, d, k, rho) < -1e-12:
        raise ValueError(
            f"rho: {rho} is not valid for K-SEQ (1 - (1 - beta)^k > rho * beta: the rule would be biased)"
        )
    return rho


def kseq_acceptance(target: ArrayLike, draft: ArrayLike, k: int, rho: float | None = None) -> float:
    r"""K-SEQ acceptance :math:`1 - (1 - \beta(\rho))^k` at the optimal (or a given valid) ``rho`` in [1, k].

    Examples
    --------
    >>> from spectheory.verifiers.kseq import kseq_acceptance
    >>> round(kseq_acceptance([0.3, 0.7], [0.6, 0.4], 1), 6)   # k = 1: sum min(p, q)
    0.7
    """
    t, d, k = check_multidraft_args(target, draft, k)
    b = kseq_beta(t, d, _resolve_rho(t, d, k, rho))
    return float(np.clip(1.0 - (1.0 - b) ** k, 0.0, 1.0))


def _parts(t, d, k, rho):
    rho = _resolve_rho(t, d, k, rho)
    a = np.minimum(d, t / rho)
    b = a.sum()
    c = k if b <= 0 else (1.0 - (1.0 - b) ** k) / b
    fail = (1.0 - b) ** k
    num = np.maximum(t - a * c, 0.0)  # clip rounding (>= -1e-15 at a valid rho)
    res = normalize_or(num, t)[0]
    return rho, a * c, fail, res


def kseq_residual(target: ArrayLike, draft: ArrayLike, k: int, rho: float | None = None) -> np.ndarray:
    r"""Residual law ``p_res`` sampled when all ``k`` candidates are rejected (shape ``[V]``)."""
    t, d, k = check_multidraft_args(target, draft, k)
    return _parts(t, d, k, rho)[3]


def kseq_output_law(
    target: ArrayLike, draft: ArrayLike, k: int, rho: float | None = None, parts: bool = False
) -> np.ndarray | tuple[np.ndarray, np.ndarray]:
    r"""Exact law of the emitted token: ``min(q, p/rho) c + (1 - beta)^k p_res`` (equals ``p``).

    With ``parts=True`` returns ``(accepted [V], residual_part [V])``.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.kseq import kseq_output_law
    >>> t, d = np.array([0.2, 0.5, 0.3]), np.array([0.6, 0.1, 0.3])
    >>> np.testing.assert_allclose(kseq_output_law(t, d, 3), t)
    """
    t, d, k = check_multidraft_args(target, draft, k)
    _, acc, fail, res = _parts(t, d, k, rho)
    return (acc, fail * res) if parts else acc + fail * res


def kseq_rule(
    target: ArrayLike,
    draft: ArrayLike,
    candidates: ArrayLike,
    u_accept: ArrayLike,
    u_final: ArrayLike,
    rho: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Pure K-SEQ rule on hand-given uniforms, vectorised over runs.

    Candidate ``i`` is accepted iff ``u_accept[:, i] < p(x_i) / (rho q(x_i))``; the first
    accepted one is emitted, otherwise ``p_res`` is sampled by inverse CDF with ``u_final``.

    Parameters
    ----------
    candidates : int array, shape (R, k) (drawn i.i.d. from ``draft``)
    rho : float in [1, k], optional
        Division factor (default :func:`kseq_rho`); ValueError outside [1, k] or if invalid.
    u_accept : array, shape (R, k)
    u_final : array, shape (R,)

    Returns
    -------
    accepted_index [R] (``-1`` if none), token [R]
    """
    x = np.asarray(candidates, dtype=np.int64)
    R, k = x.shape
    t, d, k = check_multidraft_args(target, draft, k)
    if x.size and (x.min() < 0 or x.max() >= t.size):
        raise ValueError(f"candidates: entries must lie in [0, {t.size})")
    rho, _, _, res = _parts(t, d, k, rho)
    ua = np.asarray(u_accept, dtype=np.float64)
    uf = np.asarray(u_final, dtype=np.float64)
    if ua.shape != (R, k) or uf.shape != (R,):
        raise ValueError(
            f"u_accept, u_final: expected shapes {(R, k)} and {(R,)}, got {ua.shape}, {uf.shape}"
        )
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = safe_ratio(t, rho * d, 0.0)
    acc = ua < ratio[x]  # [R, k]
    any_acc = acc.any(1)
    first = np.argmax(acc, axis=1)
    idx = np.where(any_acc, first, -1)
    token = np.where(any_acc, x[np.arange(R), first], _categorical(np.broadcast_to(res, (R, res.size)), uf))
    return idx.astype(np.int64), token.astype(np.int64)


def kseq_verify(
    target: ArrayLike, draft: ArrayLike, k: int, n: int, rng: RNGLike = None, rho: float | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n`` K-SEQ rounds (candidates, uniforms, :func:`kseq_rule`)."""
    t, d, k = check_multidraft_args(target, draft, k)
    n = check_int(n, "n", 1)
    rng = as_rng(rng)
    cand = sample_candidates(d, k, n, rng, True)
    return kseq_rule(t, d, cand, rng.random((n, k)), rng.random(n), rho)

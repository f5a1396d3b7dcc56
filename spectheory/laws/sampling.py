r"""Sampling primitives shared by every simulator, vectorised over rows.

Random draws are kept apart from the rules: :func:`sample_categorical`, :func:`sample_from_cdf`
and :class:`CdfTable` are pure functions of hand-given uniforms (inverse CDF). The round
verification rules that use them live in :mod:`spectheory.verifiers` (see
:mod:`spectheory.verifiers.base` for the round signature).
Notation: p = target, q = draft (code says ``target``/``draft``).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "sample_categorical",
    "sample_from_cdf",
    "CdfTable",
    "normalized_cdf",
    "residual_weights",
    "normalize_or",
    "safe_ratio",
    "categorical",
    "norm_excess",
    "check_round_laws",
    "MASS_TOL",
]

#: A residual (or any left-over) mass at or below this is rounding noise of (near-)equal laws:
#: the law is then taken to be the fallback, e.g. the target itself (the convention of
#: :func:`spectheory.residual`). The one threshold of the package.
MASS_TOL = 1e-15


def normalize_or(weights: ArrayLike, fallback: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r"""``weights / sum(weights)`` along the last axis, or ``fallback`` where that mass is at most
    :data:`MASS_TOL`; also returns the mass (last axis dropped).

    The one "normalise, fall back on no mass" rule (residuals, recursive-rejection residuals,
    block and batch final laws, optimal rejection laws). Shapes ``(..., V)``; ``fallback``
    broadcasts against ``weights``.

    Examples
    --------
    >>> law, mass = normalize_or([[0.2, 0.0, 0.2], [0.0, 0.0, 1e-17]], [[1.0, 0.0, 0.0]] * 2)
    >>> law.tolist(), mass.round(3).tolist()
    ([[0.5, 0.0, 0.5], [1.0, 0.0, 0.0]], [0.4, 0.0])
    """
    w = np.asarray(weights, dtype=np.float64)
    mass = w.sum(axis=-1, keepdims=True)
    ok = mass > MASS_TOL
    return np.where(ok, w / np.where(ok, mass, 1.0), fallback), mass[..., 0]


def safe_ratio(num: ArrayLike, den: ArrayLike, where_zero: float = np.inf) -> np.ndarray:
    """``num / den`` elementwise, ``where_zero`` where ``den == 0`` (no division warning).

    Examples
    --------
    >>> safe_ratio([1.0, 2.0], [4.0, 0.0]).tolist()
    [0.25, inf]
    """
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    return np.where(den > 0, num / np.where(den > 0, den, 1.0), where_zero)


def sample_categorical(probs: ArrayLike, u: ArrayLike) -> np.ndarray:
    r"""Inverse-CDF categorical sampling, batched over leading axes.

    Returns, for each row, the smallest index ``x`` with :math:`F(x) > u`, where
    :math:`F = \mathrm{cumsum}(w) / \sum w` is the row's normalised CDF (last entry
    exactly 1). Rows need not be normalised (they are non-negative weights with positive
    total). A token of weight zero is
    never returned, and ``u`` in ``[0, 1)`` always gives an index in ``[0, V)``.

    Parameters
    ----------
    probs : array_like, shape (..., V)
        Non-negative weights with positive row sums (not checked, for speed).
    u : array_like, shape (...)
        Uniforms in ``[0, 1)``.

    Returns
    -------
    ndarray of int64, shape (...)

    Examples
    --------
    >>> from spectheory.laws.sampling import sample_categorical
    >>> sample_categorical([[0.2, 0.0, 0.8], [0.2, 0.0, 0.8]], [0.19, 0.2]).tolist()
    [0, 2]
    """
    probs = np.asarray(probs, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    if probs.shape[:-1] != u.shape:
        raise ValueError(f"u: expected shape {probs.shape[:-1]}, got {u.shape}")
    return sample_from_cdf(normalized_cdf(probs), u)


def normalized_cdf(weights: ArrayLike) -> np.ndarray:
    r"""Row-wise CDF ``cumsum(w) / sum(w)`` over the last axis; the last entry is exactly 1.

    Equal consecutive entries (zero-weight tokens) stay equal, so :func:`sample_from_cdf`
    never returns a zero-weight token. Shapes ``(..., V)``; row sums must be positive.
    """
    cdf = np.cumsum(weights, axis=-1)
    cdf /= cdf[..., -1:]
    return cdf


def sample_from_cdf(cdf: np.ndarray, u: np.ndarray) -> np.ndarray:
    r"""Inverse CDF: the number of entries ``<= u`` of each row of a normalised CDF.

    ``cdf`` ``(..., V)`` as from :func:`normalized_cdf` (last entry exactly 1), ``u``
    ``(...)`` in ``[0, 1)``. The result is the first index whose CDF exceeds ``u``: a
    token of positive weight, in ``[0, V)``.
    """
    return np.count_nonzero(cdf <= u[..., None], axis=-1).astype(np.int64)


class CdfTable:
    r"""Rows of normalised CDFs with a guide table, for exact O(1)-expected inverse CDF.

    Guide-table (cutpoint) method: ``guide[r, c]`` is the first index ``x`` with
    ``cdf[r, x] > c / V``. For ``u`` in ``[c/V, (c+1)/V)`` the inverse CDF (first ``x``
    with ``cdf[r, x] > u``) is at or after ``guide[r, c]``, and a short forward scan finds
    it (on average at most about one step). Results are identical to
    ``sample_from_cdf(cdf[rows], u)`` for every ``u``.

    Parameters
    ----------
    weights : array_like, shape (..., V)
        Non-negative weights with positive row sums; flattened to ``M`` rows.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.laws.sampling import CdfTable
    >>> table = CdfTable([[0.2, 0.0, 0.8], [0.0, 0.5, 0.5]])
    >>> table.sample(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.0, 0.5])).tolist()
    [0, 2, 1, 2]
    """

    def __init__(self, weights: ArrayLike) -> None:
        w = np.asarray(weights, dtype=np.float64)
        V = w.shape[-1]
        self.cdf = np.ascontiguousarray(normalized_cdf(w).reshape(-1, V))
        M = self.cdf.shape[0]
        self.grid = np.arange(V) / V
        # e[r, x]: first cell c with grid[c] >= cdf[r, x]; guide[r, c] = #{x : e[r, x] <= c}
        #        = #{x : cdf[r, x] <= grid[c]}  (comparisons in floating point, as at sampling)
        e = np.searchsorted(self.grid, self.cdf.ravel(), side="left")
        cnt = np.bincount(np.repeat(np.arange(M) * (V + 1), V) + e, minlength=M * (V + 1))
        self.guide = np.cumsum(cnt.reshape(M, V + 1)[:, :V], axis=1).astype(np.int32).ravel()
        self.flat = self.cdf.ravel()
        self.V = V
        for a in (self.cdf, self.grid, self.guide):
            a.setflags(write=False)

    def sample(self, rows: ArrayLike, u: ArrayLike) -> np.ndarray:
        """Inverse CDF of rows ``rows`` ``[R]`` at uniforms ``u`` ``[R]`` in ``[0, 1)``."""
        V = self.V
        u = np.asarray(u, dtype=np.float64)
        c = np.minimum((u * V).astype(np.int64), V - 1)
        c -= self.grid[c] > u  # guard against rounding of u * V
        base = np.asarray(rows, dtype=np.int64) * V
        x = np.take(self.guide, base + c).astype(np.int64)  # first x with cdf > grid[c] <= u
        idx = np.flatnonzero(np.take(self.flat, base + x) <= u)
        while idx.size:  # forward scan; cdf[V-1] = 1 > u stops it
            x[idx] += 1
            idx = idx[np.take(self.flat, base[idx] + x[idx]) <= u[idx]]
        return x


def residual_weights(target: np.ndarray, draft: np.ndarray) -> np.ndarray:
    r"""Unnormalised residual :math:`\max(p - q, 0)`, or ``target`` where its mass is zero.

    A zero residual mass means target == draft up to rounding, in which case a rejection
    has probability zero (or rounding size) and the target law is the correct fallback,
    as in :func:`spectheory.residual`. Shapes ``(..., V)``.
    """
    excess = np.maximum(target - draft, 0.0)
    mass = excess.sum(axis=-1, keepdims=True)
    return np.where(mass > MASS_TOL, excess, target)


def check_round_laws(target_laws: np.ndarray, draft_laws: np.ndarray) -> None:
    """Raise ValueError if a round's laws have NaN, infinite or negative entries (argument
    named). Row sums are not checked (inverse-CDF sampling normalises)."""
    for a, name in ((target_laws, "target_laws"), (draft_laws, "draft_laws")):
        if a.size and not a.min() >= 0:  # NaN fails the comparison too
            raise ValueError(f"{name}: laws must be finite and non-negative")
        if a.size and not np.isfinite(a.max()):
            raise ValueError(f"{name}: laws must be finite and non-negative")


def norm_excess(r: ArrayLike, d: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``norm(max(r - d, 0))`` and its mass, along the last axis; ``r`` where the mass is 0
    (the residual step of recursive rejection).

    Examples
    --------
    >>> law, mass = norm_excess([0.5, 0.5], [0.9, 0.1])
    >>> law.tolist(), round(float(mass), 12)
    ([0.0, 1.0], 0.4)
    """
    return normalize_or(np.maximum(np.asarray(r) - np.asarray(d), 0.0), r)


def categorical(weights: ArrayLike, u: ArrayLike) -> np.ndarray:
    """Inverse-CDF sampling of unnormalised non-negative ``weights [..., V]`` with uniforms
    ``u`` broadcast to ``weights.shape[:-1]`` (:func:`sample_categorical` on any leading shape).

    Examples
    --------
    >>> categorical([[1.0, 3.0], [2.0, 2.0]], 0.3).tolist()
    [1, 0]
    """
    w = np.asarray(weights, dtype=np.float64)
    return sample_categorical(w, np.broadcast_to(np.asarray(u, dtype=np.float64), w.shape[:-1]))

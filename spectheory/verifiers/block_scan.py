r"""Block verification's backward scan (Sun et al. 2024, Algorithm 2): the weights ``h_i``, the
law of the accepted length ``tau`` and the final token's weights, as pure array functions.

Shared by the rule (:class:`~spectheory.verifiers.block.BlockVerifier`), the exact laws by
enumeration (:mod:`spectheory.verifiers.block_exact`) and the rules that reuse the scan
(:mod:`spectheory.verifiers.hsd`). The algorithm and notation: :mod:`spectheory.verifiers.block`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..laws.sampling import normalize_or, safe_ratio
from .base import check_round_arrays

__all__ = ["block_weights", "backward_scan_law"]


def block_weights(
    target_laws: np.ndarray, draft_laws: np.ndarray, draft_tokens: np.ndarray, k: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Exact per-block quantities of block verification, vectorised over runs.

    Parameters
    ----------
    target_laws : array, shape (R, g+1, V)
        Row ``i`` is :math:`p_{i+1}`, the target law at the ``(i+1)``-th drafted position;
        row ``k[r]`` is the law after the block (bonus).
    draft_laws : array, shape (R, g, V)
        Row ``i`` is :math:`q_{i+1}`.
    draft_tokens : int array, shape (R, g)
    k : int array, shape (R,) (or scalar)
        Number of drafts that count per run (``1 <= k <= g``); later slots are padding.

    Returns
    -------
    h : ndarray, shape (R, g)
        Stopping probabilities :math:`h_1..h_g` (0 beyond ``k``).
    tau_law : ndarray, shape (R, g+1)
        :math:`P(\tau = j \mid \text{block})` for ``j = 0..g`` (0 beyond ``k``).
    final_weights : ndarray, shape (R, g+1, V)
        Law of the token emitted after :math:`X_1..X_j` when :math:`\tau = j`: the residual
        ``norm(max(w_j p_{j+1} - q_{j+1}, 0))`` for ``j < k`` and :math:`p_{k+1}` for ``j = k``.
    """
    t, d, x, kk = check_round_arrays(target_laws, draft_laws, draft_tokens, k)
    R, g = d.shape[:2]
    rows = np.arange(R)
    w = np.ones((R, g + 1))
    for i in range(1, g + 1):
        xi = x[:, i - 1]
        tx = t[rows, i - 1, xi]
        dx = d[rows, i - 1, xi]
        with np.errstate(over="ignore", invalid="ignore"):  # p/q may overflow to inf
            ratio = safe_ratio(tx, dx, 0.0)
            prev = w[:, i - 1]
            # a zero prefix weight stays zero (0 * inf would be NaN)
            w[:, i] = np.where(prev > 0, np.minimum(1.0, prev * ratio), 0.0)
    h = np.zeros((R, g))
    final = t.copy()
    for j in range(0, g):
        ex = np.maximum(w[:, j, None] * t[:, j] - d[:, j], 0.0)  # residual weights after j
        final[:, j], mass = normalize_or(ex, t[:, j])
        if j >= 1:
            den = mass + 1.0 - w[:, j]
            hj = np.where(den > 0, mass / np.where(den > 0, den, 1.0), 1.0)
            h[:, j - 1] = np.where(j < kk, np.clip(hj, 0.0, 1.0), 0.0)
    h[rows, kk - 1] = w[rows, kk]
    final[rows, kk] = t[rows, kk]
    return h, backward_scan_law(h, kk), final


def backward_scan_law(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    r"""Law of :math:`\tau = \max\{i \le k : \eta_i = 1\}` (0 if none) for independent
    :math:`\eta_i \sim \mathrm{Bernoulli}(h_i)`: :math:`P(\tau = j) = h_j \prod_{i=j+1}^k (1 - h_i)`,
    :math:`h_0 := 1`. Shapes: ``h [R, g]`` (``h[:, i-1] = h_i``), ``k [R]``; returns ``[R, g+1]``
    (0 beyond ``k``). The backward scan of block verification and of HSD (:mod:`.hsd`).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.block_scan import backward_scan_law
    >>> backward_scan_law(np.array([[0.5, 0.5]]), np.array([2])).tolist()
    [[0.25, 0.25, 0.5]]
    """
    R, g = h.shape
    idx = np.arange(g + 1)[None, :]
    h_ext = np.concatenate([np.ones((R, 1)), h], 1)  # [R, g+1], h_ext[:, j] = h_j
    one_minus = np.where(idx[:, 1:] <= k[:, None], 1.0 - h, 1.0)  # [R, g]
    tail = np.ones((R, g + 1))
    for j in range(g - 1, -1, -1):
        tail[:, j] = tail[:, j + 1] * one_minus[:, j]
    return np.where(idx <= k[:, None], h_ext * tail, 0.0)

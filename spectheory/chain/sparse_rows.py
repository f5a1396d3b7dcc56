r"""Sparse next-token rows: CSR kernels with the mass they leave out (the tail).

A sparse kernel is a scipy CSR matrix ``[S, V]`` whose row ``s`` is a law over the tokens it
stores; ``tail[s]`` bounds the total-variation distance between that stored row and the true
row it stands for. Truncating a true row :math:`p` to a set :math:`K` of tokens and
renormalising gives :math:`\tilde p = p\,1_K / p(K)` and

.. math:: \mathrm{TV}(p, \tilde p) = \sum_{x \in K} (\tilde p(x) - p(x)) = 1 - p(K),

the dropped mass: the ``tail`` of a row is exactly its dropped mass
(``docs/sparse_chains.md``). Two builders:

- :func:`truncate_rows`: from dense rows, keep the ``top_k`` largest entries and/or the fewest
  largest entries whose mass reaches ``mass`` (zeros are always dropped);
- :func:`rows_from_top_k`: from per-state token ids and probabilities (what a real model's
  top-k gives), with the tail each row reports.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._guards import SUM_TOL, check_int, check_prob

__all__ = ["truncate_rows", "rows_from_top_k", "check_sparse_rows", "check_tail"]


def check_sparse_rows(
    rows: ArrayLike | sp.spmatrix, name: str, shape: tuple[int, int] | None = None, *, atol: float = SUM_TOL
) -> sp.csr_matrix:
    """``rows`` (dense ``[S, V]`` or scipy sparse) as a CSR float64 matrix of laws, zeros dropped,
    indices sorted; raise ``ValueError`` naming ``name`` on a bad shape, negative or non-finite
    entries, duplicate entries, or a row not summing to 1 within ``atol``."""
    if sp.issparse(rows):
        m = sp.csr_matrix(rows, dtype=np.float64, copy=True)
        if not m.has_canonical_format:
            m.sum_duplicates()
    else:
        a = np.asarray(rows, dtype=np.float64)
        if a.ndim != 2:
            raise ValueError(f"{name}: expected a matrix [S, V], got shape {a.shape}")
        m = sp.csr_matrix(a)
    if shape is not None and m.shape != shape:
        raise ValueError(f"{name}: expected shape {shape}, got {m.shape}")
    if m.shape[0] == 0 or m.shape[1] == 0:
        raise ValueError(f"{name}: empty kernel (shape {m.shape})")
    if not np.all(np.isfinite(m.data)):
        raise ValueError(f"{name}: contains NaN or infinite entries")
    if m.data.size and m.data.min() < 0:
        raise ValueError(f"{name}: contains negative entries (min {m.data.min():.3g})")
    m.eliminate_zeros()
    m.sort_indices()
    sums = np.asarray(m.sum(axis=1)).ravel()
    bad = np.abs(sums - 1.0) > atol
    if np.any(bad):
        s = int(np.argmax(bad))
        raise ValueError(f"{name}: rows must sum to 1 within {atol:g} (row {s} sums to {sums[s]:.10g})")
    return m


def truncate_rows(
    rows: ArrayLike, *, top_k: int | None = None, mass: float | None = None, name: str = "rows"
) -> tuple[sp.csr_matrix, np.ndarray]:
    r"""Sparse form of dense rows, optionally truncated, and each row's dropped mass.

    Parameters
    ----------
    rows : array_like, shape (S, V)
        Laws (rows summing to 1 within ``1e-6``).
    top_k : int, optional
        Keep at most the ``top_k`` largest entries of each row.
    mass : float in (0, 1], optional
        Keep the fewest largest entries whose sum reaches ``mass`` (times the row's sum).
        With both, a row keeps the smaller of the two sets. Ties: the lower token id first.

    Returns
    -------
    kernel : scipy.sparse.csr_matrix, shape (S, V)
        A truncated row renormalised to sum 1; a row that keeps all its non-zero entries is
        stored exactly as given (so the sparse chain equals the dense one bit for bit).
    tail : ndarray, shape (S,)
        :math:`1 - p(K)/p(V)`, the TV distance between the stored row and the given one.

    Examples
    --------
    >>> k, tail = truncate_rows([[0.5, 0.3, 0.2, 0.0], [0.25, 0.25, 0.25, 0.25]], top_k=2)
    >>> k.toarray().round(4).tolist(), tail.round(4).tolist()
    ([[0.625, 0.375, 0.0, 0.0], [0.5, 0.5, 0.0, 0.0]], [0.2, 0.5])
    >>> truncate_rows([[0.5, 0.3, 0.2, 0.0]], mass=0.8)[0].toarray().round(4).tolist()
    [[0.625, 0.375, 0.0, 0.0]]
    """
    m = check_sparse_rows(rows, name)
    if top_k is None and mass is None:
        return m, np.zeros(m.shape[0])
    a = m.toarray()
    S, V = a.shape
    order = np.argsort(-a, axis=1, kind="stable")  # largest first, ties by token id
    sorted_a = np.take_along_axis(a, order, axis=1)
    keep = np.count_nonzero(sorted_a > 0, axis=1)
    if top_k is not None:
        keep = np.minimum(keep, check_int(top_k, "top_k", 1))
    totals = sorted_a.sum(1)
    if mass is not None:
        level = float(check_prob(mass, "mass", open_low=True))
        cum = np.cumsum(sorted_a, axis=1)
        reach = np.argmax(cum >= level * totals[:, None] * (1 - 1e-12), axis=1) + 1
        keep = np.minimum(keep, reach)
    mask = np.arange(V)[None, :] < keep[:, None]
    kept = np.where(mask, sorted_a, 0.0)
    kept_sum = kept.sum(1)
    full = keep == np.count_nonzero(sorted_a > 0, axis=1)
    scale = np.where(full, 1.0, 1.0 / kept_sum)
    out = np.zeros_like(a)
    np.put_along_axis(out, order, kept * scale[:, None], axis=1)
    tail = np.where(full, 0.0, np.clip(1.0 - kept_sum / totals, 0.0, 1.0))
    k = sp.csr_matrix(out)
    k.sort_indices()
    return k, tail


def rows_from_top_k(
    ids: ArrayLike,
    probs: ArrayLike,
    vocab_size: int,
    tail: ArrayLike | None = None,
    *,
    name: str = "rows",
    atol: float = SUM_TOL,
) -> tuple[sp.csr_matrix, np.ndarray]:
    r"""A CSR kernel from each state's kept token ids and probabilities, and each row's tail.

    Parameters
    ----------
    ids : array_like of int, shape (S, k)
        Kept token ids of each state (any order, no repeats within a row); an id of ``-1``
        pads a row that keeps fewer than ``k`` tokens (its probability must be 0).
    probs : array_like, shape (S, k)
        Their probabilities under the true (untruncated) law, or already renormalised.
    vocab_size : int
    tail : array_like, shape (S,), optional
        The mass left out of each row. Default ``1 - probs.sum(1)``; given, the bound used is
        ``max(tail, 1 - probs.sum(1))`` (sound whether ``probs`` are raw or renormalised).

    Returns
    -------
    kernel : scipy.sparse.csr_matrix, shape (S, V)
        Each row renormalised to sum 1.
    tail : ndarray, shape (S,)
        The TV distance between each stored row and the true row (the dropped mass).

    Examples
    --------
    >>> k, tail = rows_from_top_k([[2, 0], [1, -1]], [[0.6, 0.3], [1.0, 0.0]], 3)
    >>> k.toarray().round(4).tolist(), tail.round(4).tolist()
    ([[0.3333, 0.0, 0.6667], [0.0, 1.0, 0.0]], [0.1, 0.0])
    """
    V = check_int(vocab_size, "vocab_size", 1)
    i = np.asarray(ids)
    p = np.asarray(probs, dtype=np.float64)
    if i.ndim != 2 or p.shape != i.shape:
        raise ValueError(
            f"{name}: ids and probs must be matrices of one shape [S, k], got {i.shape}, {p.shape}"
        )
    if i.size and not np.issubdtype(i.dtype, np.integer):
        raise ValueError(f"{name}: ids must be integers, got dtype {i.dtype}")
    i = i.astype(np.int64)
    if not np.all(np.isfinite(p)) or (p.size and p.min() < 0):
        raise ValueError(f"{name}: probs must be finite and >= 0")
    if i.size and (i.min() < -1 or i.max() >= V):
        raise ValueError(f"{name}: ids must lie in [0, {V}) (or -1 for padding)")
    pad = i < 0
    if np.any(p[pad] > 0):
        raise ValueError(f"{name}: a padding id (-1) has a positive probability")
    S = i.shape[0]
    kept = p.sum(1)
    if S == 0 or np.any(kept <= 0):
        raise ValueError(f"{name}: every row must keep a positive probability")
    if np.any(kept > 1 + atol):
        s = int(np.argmax(kept))
        raise ValueError(f"{name}: row {s} keeps probability {kept[s]:.10g} > 1")
    eps = np.clip(1.0 - kept, 0.0, 1.0)
    if tail is not None:
        t = np.asarray(tail, dtype=np.float64)
        if t.shape != (S,) or not np.all(np.isfinite(t)) or np.any(t < 0) or np.any(t > 1):
            raise ValueError(f"{name}: tail must be {S} numbers in [0, 1], got shape {t.shape}")
        eps = np.maximum(eps, t)
    rows = np.repeat(np.arange(S), i.shape[1])
    live = ~pad.ravel()
    srt = np.sort(i, axis=1)
    if np.any((srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)):
        raise ValueError(f"{name}: a row repeats a token id")
    m = sp.csr_matrix(((p / kept[:, None]).ravel()[live], (rows[live], i.ravel()[live])), shape=(S, V))
    m.eliminate_zeros()
    m.sort_indices()
    return m, eps


def check_tail(tail: ArrayLike | None, S: int, name: str) -> np.ndarray:
    """``tail`` as a read-only float64 ``[S]`` array of numbers in ``[0, 1]`` (None: zeros)."""
    if tail is None:
        out = np.zeros(S)
    else:
        out = np.array(tail, dtype=np.float64)
        if out.shape != (S,) or not np.all(np.isfinite(out)) or np.any(out < 0) or np.any(out > 1):
            raise ValueError(f"{name}: expected {S} numbers in [0, 1], got shape {out.shape}")
    out.setflags(write=False)
    return out

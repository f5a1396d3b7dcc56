r"""How the children of a tree node are drawn: their exact joint law (:func:`node_laws`, for the
exact engines) and the sampler (:func:`draw_children`, for Monte Carlo) of each draw policy --
i.i.d. from the draft law, without replacement, or the draft's top-k.
Notation: p = target, q = draft.
"""

from __future__ import annotations

import numpy as np

from .._guards import check_int
from ..verifiers.multidraft import MAX_PATHS, _categorical, _norm_excess

__all__ = ["node_laws", "draw_children"]


def node_laws(target, draft, k, policy):
    r"""Exact per-node laws of recursive rejection with ``k`` children, per state.

    Parameters
    ----------
    target, draft : array, shape (S, V)
    k : int >= 1
    policy : {"iid", "wo", "topk"}

    Returns
    -------
    accept : ndarray, shape (k, S, V)
        ``accept[j, s, x]`` = P(child slot ``j`` is accepted and has token ``x``).
    residual : ndarray, shape (S, V)
        ``residual[s, y]`` = P(all children rejected and correction ``y``).
        ``accept.sum((0, 2)) + residual.sum(1) == 1`` and
        ``accept.sum(0) + residual == target`` (losslessness at a node).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.trees.children import node_laws
    >>> t, d = np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]])
    >>> A, R = node_laws(t, d, 2, "iid")
    >>> round(float(A.sum()), 6), np.round(A.sum(0) + R, 12).tolist()
    (0.64, [[0.5, 0.5]])
    """
    t = np.atleast_2d(np.asarray(target, dtype=np.float64))
    d = np.atleast_2d(np.asarray(draft, dtype=np.float64))
    k = check_int(k, "k", 1)
    S, V = t.shape
    A = np.zeros((k, S, V))
    if policy == "iid":
        r, reach = t.copy(), np.ones(S)
        for j in range(k):
            a = np.minimum(r, d)
            A[j] = reach[:, None] * a
            reach = reach * np.clip(1.0 - a.sum(-1), 0.0, 1.0)
            r = _norm_excess(r, d)[0]
        return A, reach[:, None] * r
    if policy == "topk":
        order = np.argsort(-d, axis=-1, kind="stable")
        rows = np.arange(S)
        res = t.copy()
        for j in range(min(k, V)):
            x = order[:, j]
            A[j, rows, x] = t[rows, x]
            res[rows, x] = 0.0
        return A, res
    if policy == "wo":
        # the last slot's rejections are never expanded: R = p - sum_j A_j (losslessness at a
        # node), so the enumeration holds at most V**(k-1) rejected prefixes per state; states
        # are taken in chunks of about _WO_CHUNK paths
        per_state = V ** (k - 1)
        step = max(1, _WO_CHUNK // per_state)
        for lo in range(0, S, step):
            hi = min(S, lo + step)
            A[:, lo:hi] = _wo_accept(t[lo:hi], d[lo:hi], k)
        return A, np.clip(t - A.sum(0), 0.0, None)
    raise ValueError(f"policy: expected one of ('iid', 'wo', 'topk'), got {policy!r}")


_WO_CHUNK = 65_536


def _wo_accept(t, d, k):
    """``accept [k, S, V]`` of recursive rejection without replacement (enumerates the
    rejected siblings of slots ``0..k-2``; slot ``k-1``'s rejections are not needed)."""
    S, V = t.shape
    A = np.zeros((k, S, V))
    sid, prob, r, dc = np.arange(S), np.ones(S), t.copy(), d.copy()
    n_paths = S
    for j in range(k):
        mass = dc.sum(-1)
        live = mass > 0  # draft support exhausted: no more children
        sid, prob, r, dc = sid[live], prob[live], r[live], dc[live] / mass[live, None]
        if prob.size == 0:
            break
        np.add.at(A[j], sid, prob[:, None] * np.minimum(r, dc))
        if j == k - 1:
            break
        rej = prob[:, None] * np.maximum(dc - r, 0.0)
        r_next = _norm_excess(r, dc)[0]
        p_idx, x_idx = np.nonzero(rej > 0)
        n_paths += p_idx.size
        if n_paths > MAX_PATHS:
            raise ValueError(
                f"k: exact recursive rejection without replacement needs more than {MAX_PATHS} "
                f"paths (S={S}, V={V}, k={k}); use Monte Carlo"
            )
        sid, prob, r = sid[p_idx], rej[p_idx, x_idx], r_next[p_idx]
        dc = dc[p_idx].copy()
        dc[np.arange(p_idx.size), x_idx] = 0.0
    return A


def draw_children(draft_rows, k, policy, rng):
    """``k`` children per row of ``draft_rows [R, V]`` under a child policy; ``[R, k]``.

    ``"iid"``: inverse CDF per child; ``"wo"``: Gumbel top-k (successive sampling; ``-1``
    past the draft's support); ``"topk"``: the ``k`` largest draft entries (stable order,
    ``-1`` past ``V``).
    """
    d = np.asarray(draft_rows, dtype=np.float64)
    R, V = d.shape
    if policy == "iid":
        w = np.broadcast_to(d[:, None, :], (R, k, V))
        return _categorical(w, rng.random((R, k))).astype(np.int64)
    if policy == "wo":
        if k > V:
            out = np.full((R, k), -1, dtype=np.int64)
            out[:, :V] = draw_children(d, V, "wo", rng)
            return out
        with np.errstate(divide="ignore"):
            keys = np.log(d) - np.log(-np.log(np.clip(rng.random((R, V)), 1e-300, 1.0 - 1e-16)))
        order = np.argsort(-keys, axis=-1, kind="stable")[:, :k]
        return np.where(np.take_along_axis(d, order, 1) > 0, order, -1).astype(np.int64)
    if policy == "topk":
        order = np.argsort(-d, axis=-1, kind="stable")[:, : min(k, V)]
        out = np.full((R, k), -1, dtype=np.int64)
        out[:, : order.shape[1]] = order
        return out
    raise ValueError(f"policy: expected one of ('iid', 'wo', 'topk'), got {policy!r}")

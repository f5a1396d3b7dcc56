r"""Recursive rejection without replacement along target paths, rejected prefixes pruned.

Exact node laws of ``tree_rrs_wo`` enumerate ``V**(k-1)`` rejected-sibling prefixes per node;
:func:`wo_node_laws_pruned` drops the prefixes below a probability ``min_prob`` (the dropped
mass bounds the error), and :func:`pruned_wo_tables` turns those laws into the tables of
:func:`spectheory.validation.tree_decoding.tree_round_dp`. The full-horizon predictions of other tree
verifiers are in :mod:`spectheory.validation.tree_rounds`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .tree_decoding import _child_counts, by_depth

if TYPE_CHECKING:
    from ..trees import DraftTree

__all__ = ["wo_node_laws_pruned", "pruned_wo_tables"]


def wo_node_laws_pruned(
    target: np.ndarray, draft: np.ndarray, k: int, min_prob: float = 1e-8, chunk: int = 8
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Per-node laws of recursive rejection without replacement, rejected prefixes pruned.

    As :meth:`WithoutReplacement().node_laws <spectheory.children.WithoutReplacement.node_laws>` (``accept [k, S, V]`` and
    ``residual [S, V]``), but a prefix of rejected siblings whose probability is below
    ``min_prob`` is not expanded: its later slots count as rejected, so ``accept`` is low by
    at most ``dropped [S]`` in total per state and ``residual = p - sum_j accept_j`` stays
    lossless. Returns ``(accept, residual, dropped)``; the error of a prediction built on these
    laws is bounded by the dropped mass (reported beside it). Exact when nothing is dropped
    (e.g. ``min_prob=0`` on small ``V``). ``chunk`` states are expanded at a time (the same
    numbers for any chunk; 8 keeps the prefix arrays small: 64 spent 4x the CPU in page faults).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.children.laws import node_laws
    >>> rng = np.random.default_rng(0)
    >>> t, d = rng.dirichlet(np.ones(5), 3), rng.dirichlet(np.ones(5), 3)
    >>> A, R, dropped = wo_node_laws_pruned(t, d, 3, min_prob=0.0)
    >>> bool(np.allclose(A, node_laws(t, d, 3, "wo")[0])), float(dropped.max())
    (True, 0.0)
    """
    from ..verifiers.multidraft import _norm_excess

    t_all = np.atleast_2d(np.asarray(target, dtype=np.float64))
    d_all = np.atleast_2d(np.asarray(draft, dtype=np.float64))
    S, V = t_all.shape
    A = np.zeros((k, S, V))
    dropped = np.zeros(S)
    for lo in range(0, S, chunk):
        t, d = t_all[lo : lo + chunk], d_all[lo : lo + chunk]
        sid, prob, r, dc = np.arange(len(t)), np.ones(len(t)), t.copy(), d.copy()
        for j in range(k):
            mass = dc.sum(-1)
            live = mass > 0
            sid, prob, r, dc = sid[live], prob[live], r[live], dc[live] / mass[live, None]
            if prob.size == 0:
                break
            np.add.at(A[j, lo : lo + chunk], sid, prob[:, None] * np.minimum(r, dc))
            if j == k - 1:
                break
            rej = prob[:, None] * np.maximum(dc - r, 0.0)
            small = (rej > 0) & (rej < min_prob)
            np.add.at(dropped[lo : lo + chunk], sid[np.nonzero(small)[0]], rej[small])
            r_next = _norm_excess(r, dc)[0]
            p_idx, x_idx = np.nonzero(rej >= max(min_prob, np.finfo(float).tiny))
            sid, prob, r = sid[p_idx], rej[p_idx, x_idx], r_next[p_idx]
            dc = dc[p_idx]  # fancy indexing copies: the zeroing below leaves the parents alone
            dc[np.arange(p_idx.size), x_idx] = 0.0
    return A, np.clip(t_all - A.sum(0), 0.0, None), dropped


def pruned_wo_tables(
    target_laws: np.ndarray,
    draft_laws: np.ndarray,
    tokens: np.ndarray,
    tree: DraftTree,
    min_prob: float = 1e-8,
) -> tuple[dict, np.ndarray]:
    """Tables of :func:`spectheory.validation.tree_decoding.tree_round_dp` for ``tree_rrs_wo`` from
    :func:`wo_node_laws_pruned` (laws along target paths, as
    :func:`spectheory.validation.tree_decoding.draft_tables`); returns ``(tables, dropped)`` with
    ``dropped [N, T]`` the pruned mass at each position's node with the most children. A
    round disagrees with the exact one with probability at most its dropped mass, so
    ``|error of E[target calls]| <= T * mean(dropped)`` (coupling)."""
    t = np.asarray(target_laws, dtype=np.float64)
    dr = np.asarray(draft_laws, dtype=np.float64)
    N, T, V = t.shape
    D = tree.max_depth
    x = np.asarray(tokens, dtype=np.int64).reshape(-1)
    rows = np.arange(x.size)
    out, worst = {}, np.zeros((N, T))
    for k in _child_counts(tree):
        A, R, dropped = wo_node_laws_pruned(t.reshape(-1, V), dr.reshape(-1, V), k, min_prob)
        worst = np.maximum(worst, dropped.reshape(N, T))
        px = t.reshape(-1, V)[rows, x]
        a = (A[:, rows, x] / px).reshape(k, N, T)
        res = (R[rows, x] / px).reshape(N, T)
        out[k] = by_depth(a, res, D)
    return out, worst

"""Medusa's sparse tree: the draft tree of the ``n`` rank paths of largest product of per-depth
rank accuracies (Cai et al. 2024), a pure function of the accuracies.

Used by the real decoder's Medusa heads (:mod:`spectheory.decoder.medusa`, which exports it)
and by block drafters' trees grown from per-depth marginals (:mod:`spectheory.kinds.block`).
"""

from __future__ import annotations

import heapq

import numpy as np
from numpy.typing import ArrayLike

from .draft_tree import DraftTree

__all__ = ["sparse_tree"]


def sparse_tree(accuracies: ArrayLike, n_nodes: int) -> DraftTree:
    """Medusa's sparse tree: the ``n_nodes`` rank paths of largest ``prod_d acc[d][rank_d]``.

    Parameters
    ----------
    accuracies : array [K, k]
        ``accuracies[d, r]``: held-out probability that head ``d + 1``'s rank-``r`` token is
        the true token (decreasing in ``r`` after sorting; sorted here).
    n_nodes : int
        Drafted nodes (the root excluded).

    Returns
    -------
    DraftTree
        Children in rank order (slot ``j`` = rank ``j``, as the :class:`~spectheory.children.TopK` policy drafts
        them); closed under parents and lower ranks, so it is a valid top-k tree.

    Examples
    --------
    >>> t = sparse_tree([[0.6, 0.2], [0.4, 0.1]], 3)
    >>> t.parents.tolist()
    [-1, 0, 1, 0]
    """
    acc = -np.sort(-np.asarray(accuracies, dtype=np.float64), axis=1)
    K, k = acc.shape
    chosen: list[tuple[int, ...]] = []
    heap: list[tuple[float, tuple[int, ...]]] = [(-acc[0, 0], (0,))]
    seen: set[tuple[int, ...]] = {(0,)}
    while heap and len(chosen) < n_nodes:
        negs, path = heapq.heappop(heap)
        chosen.append(path)
        cands = []
        if path[-1] + 1 < k:  # next sibling
            cands.append(path[:-1] + (path[-1] + 1,))
        if len(path) < K:  # first child
            cands.append(path + (0,))
        for c in cands:
            if c not in seen:
                seen.add(c)
                score = np.prod([acc[d, r] for d, r in enumerate(c)])
                heapq.heappush(heap, (-score, c))
    chosen.sort()  # lexicographic = pre-order, rank order
    index: dict[tuple[int, ...], int] = {(): 0}
    parents = [-1]
    for i, path in enumerate(chosen, start=1):
        index[path] = i
        parents.append(index[path[:-1]])
    return DraftTree(parents)

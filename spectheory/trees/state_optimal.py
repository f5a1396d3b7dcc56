r"""The per-state optimal draft tree: an exact dynamic programme over tree shapes.

Notation: p = target, q = draft; kernels at index ``m`` produce token ``m + 1``. Trees have the
draft's top-k children and ``tree_topk`` verification (:mod:`.dynamic`), so on a chain with a
deterministic ``next_state`` the node reached by a path is a state, and under ``tree_topk`` the
``j``-th child ``x_j = top_j(q(.|s))`` of a node in state ``s`` at position ``m`` is accepted with
mass ``p_m(x_j|s)`` (the residual after the top-k is ``p`` restricted to the other tokens). A
round at ``(n, s)`` drafting a tree of ``k`` nodes costs ``c k + t(k)`` (a
:class:`~spectheory.cost.Cost`; ``draft_call`` is refused: a level-by-level draft cost is not
additive over nodes) and is followed by the generation's remaining time ``W``.

Let ``F_m(s, r, u)`` be the least expected remaining time after the round, given that the
accepted path reached a node in state ``s`` at position ``m`` (``m`` tokens emitted) whose
subtree has ``u`` nodes (itself included) and depth at most ``r``. With
``B_m(s) = sum_y p_m(y|s) W_{m+1}(next(s, y))`` (``0`` at ``m = T``)::

    F_m(s, r, 1) = B_m(s)
    F_m(s, r, u) = B_m(s) + min over j children, u_1 + ... + u_j = u - 1, u_i >= 1 of
                   sum_{i <= j} p_m(x_i|s) [F_{m+1}(s_i, r - 1, u_i) - W_{m+1}(s_i)]
    W_n(s)       = min_{1 <= k <= budget} [ c k + t(k) + F_n(s, min(D, T - n), k + 1) ]

(``s_i = next(s, x_i)``; children need ``r >= 1`` and ``m < T``). The first line is a leaf: the
bonus token; a node with children emits its accepted child's subtree or the correction, and
replacing ``p(x_i) W_{m+1}(s_i)`` in ``B`` by the child's value is the second. The inner minimum
is a knapsack over the children in rank order (the children of a top-k node are a prefix of
the ranking), so the programme costs ``O(T D K S budget^2)``. By the Bellman principle over
round starts (a Markov decision process whose actions are trees) ``W`` is the least expected
time over every rule that picks a top-k tree from the round's start, with any memory: the
static top-k trees of at most ``budget`` nodes and :class:`~spectheory.trees.Eagle2Tree`,
:class:`~spectheory.trees.OptTree` with that budget among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._guards import check_int
from ..cost.base import as_cost
from ..kinds.dynamic.round import DynamicTreeRound, TreeTable
from ..kinds.tree.draft_tree import DraftTree

__all__ = ["OptimalTree", "TreeDPResult", "optimal_tree_dp"]


@dataclass(frozen=True)
class TreeDPResult:
    """The per-state optimal trees and their exact values.

    Attributes
    ----------
    value : ndarray, shape (T + 1, S)
        ``value[n, s]``: least expected remaining time from a round start at ``(n, s)``
        (``value[T] = 0``).
    sizes : ndarray of int, shape (T, S)
        Drafted nodes of the optimal tree at ``(n, s)``.
    table : TreeTable
        The optimal trees (ties: the fewest nodes, then the fewest children first).
    time : float
        ``initial @ value[0]``: the expected time of a generation.
    """

    value: np.ndarray
    sizes: np.ndarray
    table: TreeTable
    time: float


def optimal_tree_dp(
    chain: Any,
    horizon: int,
    budget: int,
    cost: Any = 0.0,
    *,
    max_depth: int | None = None,
    max_children: int | None = None,
) -> TreeDPResult:
    r"""Exact per-state optimal top-k trees of at most ``budget`` nodes (module docstring).

    Parameters
    ----------
    chain : DecodingChain
        Deterministic ``next_state``.
    horizon : int
    budget : int >= 1
        Most drafted nodes per round.
    cost : float or Cost
        ``c`` (draft step, units of one target call) or a :class:`~spectheory.cost.Cost` with
        ``target_call`` (no ``draft_call``).
    max_depth : int, optional
        Largest depth of a tree (default ``budget``).
    max_children : int, optional
        Most children per node (default: the vocabulary).

    Returns
    -------
    TreeDPResult

    Examples
    --------
    One node per round: the best round drafts the draft's top token (greedy drafting):

    >>> import numpy as np, spectheory as st
    >>> from spectheory.trees.state_optimal import optimal_tree_dp
    >>> chain = st.DecodingChain.iid([0.7, 0.3], [0.6, 0.4])
    >>> dp = optimal_tree_dp(chain, 2, 1)
    >>> float(np.round(dp.time, 12))  # 1 + P(x_1 = top token rejected) = 1 + 0.3
    1.3
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("optimal_tree_dp (token trees)")
    M = check_int(budget, "budget", 1)
    D = M if max_depth is None else min(check_int(max_depth, "max_depth", 1), M)
    V, S = chain.vocab_size, chain.n_states
    K = V if max_children is None else min(check_int(max_children, "max_children", 1), V)
    cost = as_cost(cost)
    if cost.draft_call is not None:
        raise ValueError("cost: draft_call (a level-by-level draft cost) is not additive over nodes; use c")
    round_cost = cost.c * np.arange(1, M + 1) + cost.call_times(M)  # [M]: k = 1..M
    U = M + 1  # subtree sizes 1..U (index u - 1)
    inf = np.inf
    nxt = chain.next_state
    rows = np.arange(S)
    W = np.zeros((T + 1, S))
    Fnext = np.full((D + 1, S, U), inf)  # F_{m+1}(., r, u); at m + 1 = T + 1 unused
    choice: dict = {}  # (m, r) -> (jbest [S, U], splits [K, S, U]) for the reconstruction
    sizes = np.zeros((T, S), dtype=np.int64)
    for m in range(T, -1, -1):
        F = np.full((D + 1, S, U), inf)
        if m == T:
            F[:, :, 0] = 0.0
        else:
            t_m, d_m = chain.kernels(m)
            B = (t_m * W[m + 1][nxt]).sum(-1)
            F[:, :, 0] = B[None, :]
            order = np.argsort(-d_m, axis=-1, kind="stable")[:, :K]  # TopK's children
            for r in range(1, D + 1):
                G = np.full((S, U), inf)  # best over the first j children, total size in [0, U)
                G[:, 0] = 0.0
                best, jbest = G.copy(), np.zeros((S, U), dtype=np.int64)
                splits = np.zeros((K, S, U), dtype=np.int64)
                for j in range(K):
                    x = order[:, j]
                    cs = nxt[rows, x]
                    pj = t_m[rows, x]
                    sub = Fnext[r - 1][cs]  # [S, U]: sizes 1..U
                    ok = np.isfinite(sub)
                    gain = np.where(ok, pj[:, None] * (np.where(ok, sub, 0.0) - W[m + 1][cs][:, None]), inf)
                    # G'[s, v] = min_{u >= 1} G[s, v - u] + gain[s, u - 1]
                    cand = np.full((S, U, U), inf)
                    for u in range(1, U):
                        cand[:, u:, u - 1] = G[:, : U - u] + gain[:, u - 1 : u]
                    G = cand.min(-1)
                    splits[j] = cand.argmin(-1) + 1
                    better = G < best - 1e-15
                    best = np.where(better, G, best)
                    jbest = np.where(better, j + 1, jbest)
                F[r] = B[:, None] + best  # a subtree of u nodes: children of u - 1 nodes
                choice[(m, r)] = (jbest, splits)
            r0 = min(D, T - m)
            tot = round_cost[None, :] + F[r0][:, 1:]  # [S, M]: k = 1..M nodes
            W[m] = tot.min(-1)
            sizes[m] = tot.argmin(-1) + 1
        Fnext = F

    def build(n: int, s: int) -> DraftTree:
        parents = [-1]

        def grow(m: int, r: int, st: int, u: int, me: int) -> None:
            if u == 1:
                return
            jbest, splits = choice[(m, r)]
            j = int(jbest[st, u - 1])
            _, d_m = chain.kernels(m)
            order = np.argsort(-d_m[st], kind="stable")
            parts, rem = [], u - 1
            for i in range(j - 1, -1, -1):
                ui = int(splits[i][st, rem])
                parts.append(ui)
                rem -= ui
            assert rem == 0
            for i, ui in enumerate(reversed(parts)):
                parents.append(me)
                grow(m + 1, r - 1, int(nxt[st, order[i]]), ui, len(parents) - 1)

        grow(n, min(D, T - n), s, int(sizes[n, s]) + 1, 0)
        return DraftTree(parents)

    table = TreeTable.from_function(T, S, build, homogeneous=False)
    return TreeDPResult(W, sizes, table, float(chain.initial @ W[0]))


class OptimalTree(DynamicTreeRound):
    """The per-state optimal top-k tree as a round (:func:`optimal_tree_dp`).

    Parameters
    ----------
    budget : int >= 1
        Most drafted nodes per round.
    cost : float or Cost
        The cost the trees are optimal under (also the default cost of its exact result).
    max_depth, max_children : int, optional
        As :func:`optimal_tree_dp`.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import OptimalTree, Eagle2Tree
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> best = chain.protocol(12, OptimalTree(4, cost=0.1)).time(0.1)
    >>> bool(best <= chain.protocol(12, Eagle2Tree(4, top_k=2)).time(0.1) + 1e-12)
    True
    """

    rule = "optimal_tree"

    def __init__(
        self,
        budget: int,
        cost: Any = 0.0,
        *,
        max_depth: int | None = None,
        max_children: int | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.budget = check_int(budget, "budget", 1)
        self.cost = as_cost(cost)
        self.depth_limit = max_depth
        self.max_children = max_children

    def dp(self, chain: Any, horizon: int) -> TreeDPResult:
        """The :class:`TreeDPResult` on ``chain`` (cached with the table)."""
        key = ("dp", id(chain), int(horizon))
        hit = self._tables.get(key)
        if hit is None or hit[0] is not chain:
            res = optimal_tree_dp(
                chain,
                horizon,
                self.budget,
                self.cost,
                max_depth=self.depth_limit,
                max_children=self.max_children,
            )
            if len(self._tables) > 8:
                self._tables.clear()
            hit = self._tables[key] = (chain, res)
        return hit[1]

    def table(self, chain: Any, horizon: int) -> TreeTable:
        return self.dp(chain, horizon).table

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """Exact result; ``bonus`` must be True (the programme assumes the bonus token)."""
        if not bonus:
            raise ValueError("bonus: the optimal tree programme assumes the bonus token (bonus=True)")
        return super().exact(chain, horizon, bonus=True, cost=self.cost if cost is None else cost, **options)

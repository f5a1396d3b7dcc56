r"""Draft-tree topologies: which nodes a tree round drafts, independent of the tokens.

A draft tree has a root (node 0, the current prefix, no token) and ``n`` drafted nodes
``1..n``; node ``i`` has a parent ``parents[i] < i``. The children of a node are *ordered*
(slot 1, 2, ...): tree verifiers try them in that order, and a node's subtree shape may
depend on its slot (Sequoia's shapes give the first child the largest subtree). How the
children's tokens are drawn (i.i.d. from the draft law, without replacement, or the draft's
top-k) is the *child policy* of a tree verifier, not part of the topology; see
:mod:`spectheory.verifiers.tree_rules` and docs/trees.md.

Examples
--------
>>> from spectheory.trees import DraftTree
>>> t = DraftTree.from_branching([2, 1])
>>> t.parents.tolist(), t.depth.tolist(), t.size
([-1, 0, 1, 0, 3], [0, 1, 2, 1, 2], 4)
>>> DraftTree.paths(2, 3).children[0]
(1, 4)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from ..._guards import check_int
from ..._sizes import check_size

__all__ = ["DraftTree"]


class DraftTree:
    """An ordered rooted tree of draft slots (root = node 0 = the prefix).

    Parameters
    ----------
    parents : sequence of int
        ``parents[i]`` for ``i = 1..n`` (``parents[0]`` is ignored and stored as -1);
        each parent must precede its child (``0 <= parents[i] < i``). The order of the
        nodes also orders the children of each node (slot order).
    """

    def __init__(self, parents: ArrayLike) -> None:
        par = np.asarray(parents, dtype=np.int64).copy()
        if par.ndim != 1 or par.size < 2:
            raise ValueError(
                f"parents: expected a 1-d list of at least 2 entries (root + one node), got shape {par.shape}"
            )
        par[0] = -1
        idx = np.arange(par.size)
        if np.any(par[1:] < 0) or np.any(par[1:] >= idx[1:]):
            raise ValueError("parents: each parents[i] must satisfy 0 <= parents[i] < i")
        par.setflags(write=False)
        self.parents = par

    # ------------------------------------------------------------ constructors
    @classmethod
    def from_parents(cls, parents: ArrayLike) -> DraftTree:
        """Tree from a parent list (``parents[0]`` is the root's and is ignored)."""
        return cls(parents)

    @classmethod
    def from_branching(cls, branching: Sequence[int]) -> DraftTree:
        """Complete tree: every node at depth ``d`` has ``branching[d]`` children.

        ``[4, 2, 1]`` gives 4 + 8 + 8 = 20 drafted nodes; ``[1] * g`` is a single path of
        ``g`` drafts (ordinary speculative decoding).
        """
        br = [check_int(b, "branching", 1) for b in branching]
        if not br:
            raise ValueError("branching: expected at least one level")
        check_size("tree", "branching", nodes=sum(math.prod(br[: d + 1]) for d in range(len(br))))
        parents = [-1]
        level = [0]
        for b in br:
            nxt = []
            for u in level:
                for _ in range(b):
                    parents.append(u)
                    nxt.append(len(parents) - 1)
            level = nxt
        return cls._from_nested(parents)

    @classmethod
    def paths(cls, M: int, depth: int) -> DraftTree:
        """``M`` disjoint paths of ``depth`` drafts from the root (batch decoding's tree).

        Node order is path by path, so the root's slot ``m`` starts path ``m``.
        """
        M = check_int(M, "M", 1)
        depth = check_int(depth, "depth", 1)
        check_size("tree", "M", nodes=M * depth)
        parents = [-1]
        for _ in range(M):
            prev = 0
            for _ in range(depth):
                parents.append(prev)
                prev = len(parents) - 1
        return cls(parents)

    @classmethod
    def _from_nested(cls, parents):
        """Renumber a parent list into depth-first (pre-order) order, keeping slot order."""
        par = np.asarray(parents)
        kids: list[list[int]] = [[] for _ in par]
        for i in range(1, par.size):
            kids[par[i]].append(i)
        order, stack = [], [0]
        while stack:
            u = stack.pop()
            order.append(u)
            stack.extend(reversed(kids[u]))
        new = {old: i for i, old in enumerate(order)}
        return cls([-1] + [new[par[old]] for old in order[1:]])

    # ------------------------------------------------------------ structure
    @property
    def n_nodes(self) -> int:
        """Number of nodes including the root."""
        return int(self.parents.size)

    @property
    def size(self) -> int:
        """Number of drafted nodes (the root excluded)."""
        return int(self.parents.size - 1)

    @cached_property
    def children(self) -> tuple:
        """``children[u]``: tuple of child node indices of ``u`` in slot order."""
        kids: list[list[int]] = [[] for _ in range(self.n_nodes)]
        for i in range(1, self.n_nodes):
            kids[self.parents[i]].append(i)
        return tuple(tuple(k) for k in kids)

    @cached_property
    def slot(self) -> np.ndarray:
        """``slot[i]``: 0-based position of node ``i`` among its siblings (-1 for the root)."""
        out = np.full(self.n_nodes, -1, dtype=np.int64)
        for kids in self.children:
            for j, c in enumerate(kids):
                out[c] = j
        return out

    @cached_property
    def depth(self) -> np.ndarray:
        """``depth[i]``: number of drafted tokens on the path root -> ``i`` (root: 0)."""
        d = np.zeros(self.n_nodes, dtype=np.int64)
        for i in range(1, self.n_nodes):
            d[i] = d[self.parents[i]] + 1
        return d

    @property
    def max_depth(self) -> int:
        return int(self.depth.max())

    @cached_property
    def n_children(self) -> np.ndarray:
        return np.array([len(k) for k in self.children], dtype=np.int64)

    def nodes_within(self, depth: int) -> int:
        """Number of drafted nodes with depth ``<= depth``."""
        return int(np.count_nonzero(self.depth[1:] <= depth))

    def path_to(self, node: int) -> list:
        """Node indices on the path root -> ``node`` (root excluded)."""
        out = []
        u = int(node)
        while u > 0:
            out.append(u)
            u = int(self.parents[u])
        return out[::-1]

    def truncated(self, depth: int) -> DraftTree:
        """The subtree of nodes with depth ``<= depth`` (node order kept), or ``self``."""
        depth = check_int(depth, "depth", 1)
        if depth >= self.max_depth:
            return self
        keep = np.flatnonzero(self.depth <= depth)
        new = {int(old): i for i, old in enumerate(keep)}
        return DraftTree([-1] + [new[int(self.parents[o])] for o in keep[1:]])

    def __eq__(self, other):
        return isinstance(other, DraftTree) and np.array_equal(self.parents, other.parents)

    def __hash__(self):
        return hash(self.parents.tobytes())

    def __repr__(self):
        return f"DraftTree(size={self.size}, depth={self.max_depth}, root_children={len(self.children[0])})"

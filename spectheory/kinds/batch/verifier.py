r"""Batch decoding's *tree reading* as a tree verifier (:data:`BATCH_TREE`) on the ``M``-path tree.

Notation: p = target, q = draft. A round drafts ``M`` sequences i.i.d. from the draft, a tree
of ``M`` disjoint paths (:meth:`~spectheory.trees.DraftTree.paths`). The tree reading checks
position by position: recursive rejection (with replacement, the i.i.d. rule) over the next
tokens of every draft that still agrees with the accepted prefix, in draft order; the accepted
token keeps the drafts that carry it, a rejection of all of them emits the residual, and when
no agreeing draft has a next token the round is complete (the bonus law at the last node).
The first-token reading is ``"tree_rrs"`` on the same tree (the accepted first token's
path alone goes on). Exact values: :func:`spectheory.kinds.batch.exact.batch_tree_expected`;
docs/trees.md.

The verifier is not in the tree registry: it is defined on ``M``-path trees only (on a general
tree the drafts share nodes and are not i.i.d.), and has no per-realisation exact law, so the
loops over every registered tree verifier (the tree engines, the conformance kit, the decoder's
tree verifiers) must not take it. :class:`~spectheory.trees.BatchRound` (``reading="tree"``)
uses it.

Examples
--------
>>> import numpy as np
>>> from spectheory.trees import DraftTree
>>> from spectheory.kinds.batch.verifier import BATCH_TREE as v
>>> tree = DraftTree.paths(2, 2)                       # nodes 1-2: path 0, nodes 3-4: path 1
>>> t = np.tile([0.5, 0.5], (1, 5, 1)); d = np.tile([0.5, 0.5], (1, 5, 1))
>>> node, y, res = v.verify(tree, [[-1, 0, 1, 0, 0]], t, d, np.zeros((1, 5)), [0.3])
>>> int(node[0]), bool(res[0])                         # draft == target: all accepted
(2, False)
"""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from ...children import IID
from ...verifiers.multidraft import _categorical
from ...verifiers.tree_base import TreeVerifier, check_realisation
from ...verifiers.tree_rules import _min1, _ratio, _update_rrs
from ..tree.draft_tree import DraftTree

if TYPE_CHECKING:
    from ..._protocols import TreeLike

__all__ = ["BatchTreeVerifier", "BATCH_TREE"]


@lru_cache(maxsize=64)
def _path_nodes(tree: TreeLike) -> np.ndarray:
    """``nodes [M, G]``: node of path ``m`` at depth ``d + 1``; ValueError unless ``tree`` is
    ``M`` disjoint paths of one length."""
    M, G = len(tree.children[0]), tree.max_depth
    if tree != DraftTree.paths(M, G):
        raise ValueError(f"tree: the batch_tree verifier needs DraftTree.paths(M, depth), got {tree!r}")
    return 1 + np.arange(M)[:, None] * G + np.arange(G)[None, :]


class BatchTreeVerifier(TreeVerifier):
    """Recursive rejection over all agreeing drafts at every position (the tree reading).

    A :class:`~spectheory.verifiers.TreeVerifier` (children i.i.d. from the draft) whose
    :meth:`verify` is the tree reading's rule; it is not node-local, and its exact values come
    from :func:`~spectheory.kinds.batch.exact.batch_tree_expected`, not the tree engines.
    """

    node_local = False

    def __init__(self, name: str = "batch_tree") -> None:
        super().__init__(name, IID())

    def verify(
        self,
        tree: TreeLike,
        tokens: Any,
        target_laws: Any,
        draft_laws: Any,
        u_accept: Any,
        u_final: Any,
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rule on given uniforms: ``(node [R], token [R], residual [R])`` as for
        :meth:`~spectheory.verifiers.tree_base.TreeVerifier.verify` (``u_accept[:, c]`` decides node ``c``)."""
        x, t, d = check_realisation(tree, tokens, target_laws, draft_laws)
        nodes = _path_nodes(tree)
        ua = np.asarray(u_accept, dtype=np.float64)
        R = x.shape[0]
        rows = np.arange(R)
        M, G = nodes.shape
        cur = np.zeros(R, dtype=np.int64)
        agree = np.ones((R, M), dtype=bool)
        done = np.zeros(R, dtype=bool)
        residual = np.zeros(R, dtype=bool)
        law = t[:, 0].astype(np.float64).copy()
        for depth in range(G + 1):
            cand = x[:, nodes[:, depth]] if depth < G else np.full((R, M), -1)
            present = agree & (cand >= 0) & ~done[:, None]
            leaf = ~done & ~present.any(1)
            law[leaf] = t[leaf, cur[leaf]]
            done |= leaf
            if depth == G or done.all():
                break
            r = t[rows, cur].astype(np.float64)
            q = d[rows, cur].astype(np.float64)
            slot = np.full(R, -1, dtype=np.int64)
            for i in range(M):
                here = present[:, i] & (slot < 0)
                a = _min1(_ratio(r, q, np.where(here, cand[:, i], -1)))
                acc = here & (ua[:, nodes[i, depth]] < a)
                slot[acc] = i
                r = _update_rrs(r, q, here & ~acc)
            rejected = ~done & (slot < 0)
            law[rejected] = r[rejected]
            residual |= rejected
            done |= rejected
            ok = np.flatnonzero(slot >= 0)
            tok = cand[ok, slot[ok]]
            agree[ok] &= cand[ok] == tok[:, None]
            cur[ok] = nodes[slot[ok], depth]
        return cur, _categorical(law, np.asarray(u_final, dtype=np.float64)), residual

    def outcome_law(self, tree: TreeLike, tokens: Any, target_laws: Any, draft_laws: Any) -> Any:
        raise ValueError("verifier: batch_tree has no per-realisation outcome law; use batch_tree_expected")

    def node_laws(self, target: Any, draft: Any, k: int) -> Any:
        raise ValueError("verifier: batch_tree is not node-local; use batch_tree_expected")


#: The instance :class:`~spectheory.trees.BatchRound` uses (``reading="tree"``).
BATCH_TREE = BatchTreeVerifier()

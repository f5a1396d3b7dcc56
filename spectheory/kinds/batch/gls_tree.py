r"""GLS multi-draft decoding (Rowan, Phan & Khisti 2025, Algorithm 2) on the ``M``-path tree.

Notation: p = target, q = draft. ``M`` drafts of ``gamma`` tokens are drawn i.i.d. from the draft
by exponential races (``X^(k)_j = argmin_i E^(j,k)_i / q_i``); position by position the target's
token is ``Y_j = argmin_i min_{k in S} E^(j,k)_i / p_i`` over the set ``S`` of drafts that agree
with ``Y_{1:j-1}``; ``S`` keeps the drafts with ``X^(k)_j = Y_j``; when ``S`` is empty the round
ends with ``Y_j`` (a correction), else after ``gamma`` positions a bonus token follows
(:mod:`spectheory.verifiers.gls`). Run it as ``BatchRound(M, gamma, reading="gls")``: its
``play`` is Algorithm 2 with the shared exponentials, its exact values are
:func:`~spectheory.kinds.batch.exact.batch_tree_expected` with ``coupling="gls"``.

GLS needs the randomness that drew the drafts, which a tree verifier's uniforms
(``u_accept [R, N]``) do not carry, so :class:`GumbelListTree` has no uniform-driven
``verify``; :meth:`GumbelListTree.kit_verify` is the conformance kit's callable: it draws the
exponentials from their exact conditional law given the drafted tokens
(:func:`~spectheory.verifiers.gls.gls_exponentials_given_drafts`), which gives the rule's law
exactly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...children import IID
from ...verifiers.gls import gls_exponentials_given_drafts
from ...verifiers.multidraft import _categorical
from ...verifiers.tree_base import TreeVerifier
from ..tree.draft_tree import DraftTree
from .verifier import _path_nodes

if TYPE_CHECKING:
    from ..._protocols import TreeLike

__all__ = ["GumbelListTree", "GLS"]


class GumbelListTree(TreeVerifier):
    """GLS on ``DraftTree.paths(M, gamma)``; drafts i.i.d. (module docstring); not registered."""

    node_local = False

    def __init__(self, name: str = "gls") -> None:
        super().__init__(name, IID())

    def verify(
        self, tree: TreeLike, tokens: Any, target_laws: Any, draft_laws: Any, u_accept: Any, u_final: Any
    ) -> Any:
        raise ValueError(
            "verifier: GLS couples the drafts with the randomness that drew them; run it as "
            "BatchRound(M, gamma, reading='gls') or check it with GumbelListTree.kit_verify"
        )

    def outcome_law(self, tree: TreeLike, tokens: Any, target_laws: Any, draft_laws: Any) -> Any:
        raise ValueError(
            "verifier: GLS has no per-realisation outcome law here; use batch_tree_expected(coupling='gls')"
        )

    def kit_verify(
        self,
        tree: DraftTree,
        tokens: np.ndarray,
        target_laws: np.ndarray,
        draft_laws: np.ndarray,
        rng: np.random.Generator,
    ) -> tuple[np.ndarray, np.ndarray]:
        """``(node [R], token [R])``: Algorithm 2 on drafted tokens, exponentials resampled given them."""
        nodes = _path_nodes(tree)
        x = np.asarray(tokens, dtype=np.int64)
        t = np.asarray(target_laws, dtype=np.float64)
        d = np.asarray(draft_laws, dtype=np.float64)
        R = x.shape[0]
        M, G = nodes.shape
        rows = np.arange(R)
        cur = np.zeros(R, dtype=np.int64)
        active = np.ones((R, M), dtype=bool)
        live = np.ones(R, dtype=bool)
        out = np.zeros(R, dtype=np.int64)
        for depth in range(G + 1):
            cand = x[:, nodes[:, depth]] if depth < G else np.full((R, M), -1)
            present = active & (cand >= 0) & live[:, None]
            leaf = live & ~present.any(1)
            if leaf.any():  # every position accepted: the bonus token
                out[leaf] = _categorical(t[leaf, cur[leaf]], rng.random(int(leaf.sum())))
                live &= ~leaf
            if not live.any():
                break
            p, q = t[rows, cur], d[rows, cur]
            V = p.shape[1]
            E = gls_exponentials_given_drafts(
                np.repeat(q, M, 0), np.where(present, cand, 0).ravel(), rng
            ).reshape(R, M, V)
            E = np.where(present[:, :, None], E, np.inf)
            with np.errstate(divide="ignore", invalid="ignore"):
                score = np.where(p > 0, E.min(1) / np.where(p > 0, p, 1.0), np.inf)
            y = np.argmin(score, axis=1)
            hit = present & (cand == y[:, None])
            miss = live & ~hit.any(1)
            out[miss] = y[miss]
            live &= ~miss
            first = np.argmax(hit, axis=1)
            go = live
            cur[go] = nodes[first[go], depth]
            active = hit
        return cur, out


#: The instance ``BatchRound(..., reading="gls")`` carries.
GLS = GumbelListTree()

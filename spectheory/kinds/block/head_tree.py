r"""Draft trees of a parallel head (DDTree-style): every node of depth d drafts its children from
the head's depth-(d + 1) law at the round start, valued exactly and by Monte Carlo.

A parallel head gives one law per depth, :math:`Q_{d+1}(\cdot \mid s)`, whatever the tree path
(:class:`~spectheory.kinds.block.BlockDrafter`). Trees grown from these per-depth marginals
(DDTree; Medusa's sparse trees are the same construction on held-out accuracies) draft, at each
node, children from that law: its top-k tokens (``"tree_topk"``, children in rank order) or
samples (``"tree_rrs"``). :func:`head_tree` grows the static tree of ``n`` nodes whose rank
paths have the largest product of the head's own rank probabilities, averaged over round
starts (:func:`~spectheory.kinds.tree.sparse.sparse_tree` on them).

Exact engine: the per-node engine of the tree kind
(:func:`spectheory.kinds.tree.exact.push_round`, node-local rules) pushed from one round start
at a time, with the draft law of every node of depth d replaced by :math:`Q_{d+1}(\cdot \mid s)`.
On a path-shaped tree with sampled children this is :class:`~.round.BlockRound`'s engine
(tested), an independent computation.

Examples
--------
>>> import spectheory as st
>>> from spectheory.kinds.block import BlockDrafter
>>> from spectheory.kinds.block.head_tree import BlockTreeRound
>>> chain = st.DecodingChain.random(4, concentration=0.5, rng=2)
>>> rnd = BlockTreeRound(BlockDrafter.marginals(chain, 3), n_nodes=6)
>>> rnd.tree.n_nodes - 1, rnd.tree.max_depth <= 3
(6, True)
>>> exact = chain.protocol(16, rnd).target_calls
>>> mc = st.simulate(chain, 16, rnd, 3000, rng=0).mean_se("target_calls")
>>> bool(abs(mc[0] - exact) < 5 * mc[1])
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...rounds.base import Round, RoundOutcome, RoundRuns, RoundTags
from ...verifiers.base import get_verifier
from ..tree.accumulate import _Accumulator, _result
from ..tree.draft_tree import DraftTree
from ..tree.exact import push_round
from ..tree.round import play_tree
from ..tree.sparse import sparse_tree
from .drafter import BlockDrafter

__all__ = ["BlockTreeRound", "head_tree", "block_tree_protocol"]


def head_tree(drafter: BlockDrafter, n_nodes: int, width: int = 4) -> DraftTree:
    """The tree of the ``n_nodes`` rank paths (ranks below ``width``) of largest product of the
    head's rank probabilities, each depth's sorted law averaged over round starts."""
    if drafter.markov:
        raise ValueError("drafter: a tree of per-depth laws needs a parallel head, not a Markov head")
    laws = [drafter.first] + [drafter.then[:, i] for i in range(drafter.depth - 1)]  # [S, V] each
    ranks = np.stack([-np.sort(-law, axis=1).mean(0) for law in laws])  # [D, V]
    return sparse_tree(ranks[:, : min(width, ranks.shape[1])], n_nodes)


class _StartKernels:
    """The chain as :func:`push_round` reads it, for one round start ``s`` at position ``n0``:
    the draft law of a node at position ``n`` is the head's law of depth ``n - n0 + 1``."""

    is_homogeneous = False

    def __init__(self, chain: Any, drafter: BlockDrafter, s: int, n0: int) -> None:
        self.chain, self.drafter, self.s, self.n0 = chain, drafter, s, n0

    def kernels(self, n: int) -> tuple[np.ndarray, np.ndarray]:
        t, _ = self.chain.kernels(n)
        law = self.drafter.law(self.s, min(n - self.n0, self.drafter.depth - 1), None)
        return t, np.ascontiguousarray(np.broadcast_to(law, np.shape(t)))

    def target_operator(self, n: int) -> Any:
        return self.chain.target_operator(n)

    def transition_operator(self, a: np.ndarray) -> Any:
        return self.chain.transition_operator(a)


def block_tree_protocol(
    chain: Any, horizon: int, tree: DraftTree, verifier: Any, drafter: BlockDrafter, bonus: bool = True
) -> Any:
    """Exact :class:`~spectheory.kinds.tree.TreeProtocolResult` of ``tree`` drafted by the
    parallel head ``drafter`` and checked by the node-local tree rule ``verifier``."""
    T = chain.check_horizon(horizon)
    chain.require_deterministic("block_tree_protocol")
    v = get_verifier(verifier).for_tree()
    if not v.node_local:
        raise ValueError(f"verifier: the per-node engine needs a node-local rule; {v.name!r} is not")
    acc = _Accumulator(T, tree.max_depth, chain.initial)
    S = chain.n_states
    for n0 in range(T):
        m0 = acc.starts[n0]
        for s in np.flatnonzero(m0):
            unit = np.zeros(S)
            unit[s] = m0[s]
            push_round(acc, _StartKernels(chain, drafter, int(s), n0), T, tree, v, bool(bonus), n0, unit, {})
    return _result(acc, T, tree, bonus)


class BlockTreeRound(Round):
    """A draft tree whose depth-d nodes draft from a parallel head's depth-(d + 1) law.

    Parameters
    ----------
    drafter : BlockDrafter
        A parallel head (no Markov head).
    tree : DraftTree, optional
        The tree (depth at most the head's); default :func:`head_tree` of ``n_nodes``.
    n_nodes : int, optional
        Drafted nodes of the default tree.
    verifier : str or TreeVerifier
        A tree rule (default ``"tree_topk"``: children are the head's top-k tokens); the exact
        engine needs a node-local one.
    """

    def __init__(
        self,
        drafter: BlockDrafter,
        tree: DraftTree | None = None,
        n_nodes: int | None = None,
        verifier: Any = "tree_topk",
    ) -> None:
        if not isinstance(drafter, BlockDrafter) or drafter.markov:
            raise TypeError("drafter: a parallel BlockDrafter (no Markov head)")
        if (tree is None) == (n_nodes is None):
            raise ValueError("tree, n_nodes: give exactly one")
        self.drafter = drafter
        self.tree = tree if tree is not None else head_tree(drafter, int(n_nodes or 0))
        if self.tree.max_depth > drafter.depth:
            raise ValueError(f"tree: depth {self.tree.max_depth} exceeds the head's {drafter.depth} depths")
        self.verifier = get_verifier(verifier).for_tree()

    @property
    def name(self) -> str:
        return f"block_tree(nodes={self.tree.n_nodes - 1}, drafter={self.drafter.name}, {self.verifier.name})"

    @property
    def max_depth(self) -> int:
        return int(self.tree.max_depth)

    def describe(self) -> str:
        return (
            f"a tree of {self.tree.n_nodes - 1} nodes drafted from a parallel head's per-depth laws, "
            f"checked by {self.verifier.name!r}"
        )

    def check(self, chain: Any, horizon: int) -> None:
        chain.require_deterministic("a block tree round")
        self.drafter.require_chain(chain)

    def tags(self) -> RoundTags:
        """As :meth:`Round.tags`; the exact engine needs a node-local rule."""
        why = {} if self.verifier.node_local else {"exact": f"{self.verifier.name!r} is not node-local"}
        return super().tags().refuse(why)

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        depth, start, drafter = self.tree.depth, runs.state, self.drafter

        def draft_rows(u: int, states: np.ndarray) -> np.ndarray:  # depth-d nodes: the law of depth d + 1
            return drafter.law(start, min(int(depth[u]), drafter.depth - 1), None)

        return play_tree(self.tree, self.verifier, sampler, runs, rng, draft_rows)

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """``block_tree_protocol`` (no options)."""
        if options:
            raise ValueError(f"options: a block tree round's exact engine takes none, got {sorted(options)}")
        self.require("exact")
        res = block_tree_protocol(chain, horizon, self.tree, self.verifier, self.drafter, bonus)
        return res if cost is None else res.with_cost(cost)

r"""Tree rounds: a draft tree checked by a tree verifier.

Notation: p = target, q = draft. A :class:`TreeRound` at position ``n`` drafts the tree
(truncated at ``T - n``) level by level with the verifier's child policy
(``verifier.sample_children``, in node order), gathers the target and draft laws at every
node and applies the verifier's rule (``verifier.verify``) to ``rng.random((R, nodes))`` and
``rng.random(R)``. The accepted path's last node gives ``j`` (its depth) and the state; the
rule's token is the correction (residual) or the bonus candidate. docs/trees.md.

:class:`~spectheory.trees.BatchRound` (:mod:`spectheory.kinds.batch`), batch decoding's ``M`` drafts, is a
tree round on ``DraftTree.paths(M, gamma)`` with a fast play of its own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._guards import check_int
from ...rounds.base import Round, RoundOutcome, RoundRuns, RoundTags
from ...verifiers.base import get_verifier
from ...verifiers.tree_rules import RecursiveRejectionTree
from .draft_tree import DraftTree
from .exact import tree_protocol

__all__ = ["TreeRound", "MAX_ELEMENTS"]

#: Upper bound on the entries of one chunk's node-law arrays ``[R, nodes, V]``.
MAX_ELEMENTS = 4_000_000


def _ancestors(tree: DraftTree) -> np.ndarray:
    """``anc [nodes, depth]``: the nodes on the path root -> node (root excluded, 0-padded)."""
    anc = np.zeros((tree.n_nodes, max(tree.max_depth, 1)), dtype=np.int64)
    for u in range(1, tree.n_nodes):
        path = tree.path_to(u)
        anc[u, : len(path)] = path
    return anc


class TreeRound(Round):
    """Draft a :class:`~spectheory.trees.DraftTree`; verify it with a tree verifier.

    Parameters
    ----------
    tree : DraftTree
    verifier : str or TreeVerifier
        A registered tree verifier (``"tree_rrs"``, ``"tree_rrs_wo"``, ``"tree_topk"``,
        ``"traversal"``, ...) or a :class:`~spectheory.verifiers.TreeVerifier`; it carries the
        child policy.
    max_elements : int
        Memory bound: a chunk of runs holds at most this many node-law entries.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree, TreeRound
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> rnd = TreeRound(DraftTree.from_branching([2, 1]), "traversal")
    >>> sim = st.simulate(chain, 10, rnd, 400, rng=1)
    >>> m, se = sim.mean_se("target_calls")
    >>> bool(abs(m - chain.protocol(10, tree=rnd.tree, verifier="traversal").target_calls) < 5 * se)
    True
    """

    #: :func:`~spectheory.kinds.as_round` turns a ``DraftTree`` (positional, or ``tree=``) into
    #: a tree round (:meth:`from_shorthand`).
    shorthand = DraftTree
    round_keyword = "tree"

    def __init__(
        self, tree: DraftTree, verifier: Any = "tree_rrs", *, max_elements: int = MAX_ELEMENTS
    ) -> None:
        if not isinstance(tree, DraftTree):
            raise ValueError(f"tree: expected a DraftTree, got {type(tree).__name__}")
        self.tree: DraftTree | None = tree
        self.verifier = get_verifier(verifier).for_tree()
        self.max_elements = check_int(max_elements, "max_elements", 1)
        self._anc: dict = {}

    @classmethod
    def from_shorthand(cls, tree: DraftTree, verifier: Any = None) -> TreeRound:
        """``as_round(tree, verifier=...)``: the tree round on ``tree`` (default ``"tree_rrs"``)."""
        return TreeRound(tree, "tree_rrs" if verifier is None else verifier)

    def tree_for(self, horizon: int) -> DraftTree:
        """The tree drafted at this horizon (before truncation at ``T - n``)."""
        assert self.tree is not None
        return self.tree

    @property
    def name(self) -> str:
        return f"tree({self.tree!r}, verifier={self.verifier.name})"

    def along_path(self, predictor: Any) -> Any:
        """Along-path prediction: the draft tree, checked node by node (``predictor.tree``)."""
        return predictor.tree(self.tree, self.verifier)

    def tags(self) -> RoundTags:
        """As :meth:`Round.tags`, and: along-path prediction needs a fixed tree checked by
        recursive rejection (its kernel multiplies each node's acceptances given the path)."""
        tags = super().tags()
        if self.tree is None:
            why = "its draft tree is drawn per horizon"
        elif not isinstance(self.verifier, RecursiveRejectionTree):
            why = f"along-path prediction checks each node by recursive rejection, not {self.verifier.name!r}"
        else:
            return tags
        return tags.refuse({"along_path": why})

    @property
    def max_depth(self) -> int | None:
        return None if self.tree is None else self.tree.max_depth

    def describe(self) -> str:
        return f"the draft tree {self.tree!r}, verified by {self.verifier.name!r}"

    def check(self, chain: Any, horizon: int) -> None:
        chain.require_deterministic("tree rounds (token trees)")

    def chunk_size(self, chain: Any, horizon: int) -> int:
        """Runs per chunk so that the node laws hold at most :data:`MAX_ELEMENTS` entries."""
        return max(1, int(self.max_elements // (self.tree_for(horizon).n_nodes * chain.vocab_size)))

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        tree, n = self.tree_for(runs.horizon), runs.n
        depth = tree.depth

        def draft_rows(u: int, states: np.ndarray) -> np.ndarray:
            return _laws(sampler, sampler.draft, n + depth[u], states)

        anc = self._anc.get(tree)
        if anc is None and runs.keep_path:
            anc = self._anc[tree] = _ancestors(tree)
        return play_tree(tree, self.verifier, sampler, runs, rng, draft_rows, anc)

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """Exact :class:`~spectheory.trees.TreeProtocolResult` (:func:`~spectheory.trees.tree_protocol`;
        ``options``: its ``method``)."""
        T = chain.check_horizon(horizon)
        res = tree_protocol(chain, T, self.tree_for(T), self.verifier, bonus, **options)
        return res if cost is None else res.with_cost(cost)

    def decode(
        self, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict[str, Any]
    ) -> Any:
        """The real decoder: ``loops.tree`` (:func:`~spectheory.decoder.tree_generate`) on the
        round's tree with its verifier."""
        return loops.tree(
            target, draft, prompts, max_new_tokens, self.tree, verifier=self.verifier, **options
        )

    def check_plan(self, kit: Any, options: dict[str, Any]) -> Any:
        """The tree kit (``kit.tree_verifier``) on the verifier's reference rule and child
        policy, drafting the round's own tree on every kit chain (unless ``options`` give
        ``instances``)."""
        return self._check_tree(kit, options, kit.reference_tree_verify(self.verifier))

    def _check_tree(self, kit: Any, options: dict[str, Any], verify: Any) -> Any:
        """``kit.tree_verifier(verify, ...)`` on the round's tree over the kit's chains."""
        if "instances" not in options:
            tree = self.tree
            options = {**options, "instances": [(f"{n}, {tree!r}", c, tree) for n, c in kit.chains()]}
        return kit.tree_verifier(verify, children=self.verifier.children, **options)

    def __repr__(self) -> str:
        return f"TreeRound({self.tree!r}, verifier={self.verifier.name!r})"


def play_tree(
    tree: DraftTree,
    verifier: Any,
    sampler: Any,
    runs: RoundRuns,
    rng: np.random.Generator,
    draft_rows: Any,
    ancestors: np.ndarray | None = None,
) -> RoundOutcome:
    """One tree round for the runs of ``runs``: node ``u``'s children are drawn by the rule's
    child policy from ``draft_rows(u, states) [R, V]`` (the law they are drawn from is the one
    the rule checks them against), the target's laws are read at every node's state, and the
    rule picks the accepted node. ``ancestors`` (``[N, D + 1]``, ``_ancestors``) gives
    :attr:`RoundOutcome.path` when the runs keep paths."""
    n = runs.n
    N, depth, A = tree.n_nodes, tree.depth, runs.size
    k = np.minimum(tree.max_depth, runs.horizon - n)
    tok = np.full((A, N), -1, dtype=np.int64)
    st_ = np.zeros((A, N), dtype=np.int64)
    st_[:, 0] = runs.state
    present = np.zeros((A, N), dtype=bool)
    present[:, 0] = True
    for u in range(N):
        kids = tree.children[u]
        if not kids:
            continue
        x = verifier.sample_children(draft_rows(u, st_[:, u]), len(kids), rng)
        for j, c in enumerate(kids):
            ok = present[:, u] & (depth[c] <= k) & (x[:, j] >= 0)
            present[:, c] = ok
            tok[:, c] = np.where(ok, x[:, j], -1)
            st_[ok, c] = sampler.next_state[st_[ok, u], x[ok, j]]
    t_laws = np.stack([_laws(sampler, sampler.target, n + depth[i], st_[:, i]) for i in range(N)], 1)
    d_laws = np.stack([draft_rows(i, st_[:, i]) for i in range(N)], 1)
    node, y, residual = verifier.verify(tree, tok, t_laws, d_laws, rng.random((A, N)), rng.random(A))
    node = np.asarray(node, dtype=np.int64)
    path = None
    if runs.keep_path and ancestors is not None:
        path = tok[np.arange(A)[:, None], ancestors[node]]
    return RoundOutcome(
        accepted=depth[node],
        final=np.asarray(y, dtype=np.int64),
        rejected=np.asarray(residual, dtype=bool),
        drafted=present[:, 1:].sum(1),
        end_state=st_[np.arange(A), node],
        path=path,
    )


def _laws(sampler: Any, kernel: np.ndarray, pos: np.ndarray, states: np.ndarray) -> np.ndarray:
    """``kernel[pos, states]`` (``kernel[states]`` if homogeneous), positions clipped to the kernels."""
    if kernel.ndim == 2:
        return kernel[states]
    return kernel[np.minimum(pos, kernel.shape[0] - 1), states]

r"""Dynamic draft trees: a tree chosen at every round start from the chain state.

Notation: p = target, q = draft. Engines such as EAGLE-2 and OPT-Tree build the draft tree
online from the draft's confidences; a per-state optimal tree is built from the target's laws
too (:mod:`spectheory.trees.state_optimal`: optimal among top-k trees of a node budget). On a
chain with a deterministic ``next_state`` and the draft's top-k children
(:class:`~spectheory.children.TopK`, the children of EAGLE and OPT-Tree), the tokens of every node
follow from the round's start position ``n`` and state ``s``, so a dynamic tree rule is a table
``tree(n, s)`` of :class:`~spectheory.trees.DraftTree` topologies: a
:class:`DynamicTreeRound` plays ``tree(n, s)`` as a :class:`~spectheory.trees.TreeRound`
verified by ``tree_topk`` (recursive rejection over the top-k children, lossless), and its
exact engine pushes the round-start mass of each group of states that draft the same tree
through the per-node engine (:func:`spectheory.kinds.tree.exact.push_round`), so every expectation
is exact (``O(T S nodes S V)``). The rules themselves live in :mod:`spectheory.kinds.dynamic.rules`;
docs/trees.md, section "Dynamic trees".

Counting: a round started at ``(n, s)`` drafts the nodes of ``tree(n, s)`` within the depth
``T - n`` (what the target call scores, ``t(k)``); drafting costs ``c`` per such node (or
``draft_call`` per level of that tree). Candidates an engine expands and then drops are not
charged (the reranked tree is what is drafted and scored).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..._guards import check_int
from ...exact.parts import blas_single_thread, check_engine_size
from ...rounds.base import Round, RoundOutcome, RoundRuns, RoundTags
from ...verifiers.base import get_verifier
from ..tree.accumulate import TreeProtocolResult, _Accumulator
from ..tree.draft_tree import DraftTree
from ..tree.exact import push_round
from ..tree.round import MAX_ELEMENTS, TreeRound

__all__ = ["DynamicTreeRound", "DynamicTreeResult", "TreeTable"]


@dataclass(frozen=True)
class TreeTable:
    """The trees of a dynamic rule on one chain and horizon.

    Attributes
    ----------
    trees : tuple of DraftTree
        The distinct trees, in order of first use.
    index : ndarray of int, shape (T, S)
        ``trees[index[n, s]]`` is drafted by a round starting at position ``n`` in state ``s``.
    """

    trees: tuple
    index: np.ndarray

    def tree(self, n: int, s: int) -> DraftTree:
        """The tree of a round starting at ``(n, s)``."""
        return self.trees[int(self.index[n, s])]

    @classmethod
    def from_function(cls, T: int, S: int, build: Any, homogeneous: bool) -> TreeTable:
        """Table of ``build(n, s)`` (called once per state when ``homogeneous``)."""
        trees: list = []
        where: dict = {}
        index = np.zeros((T, S), dtype=np.int64)
        for n in range(1 if homogeneous else T):
            for s in range(S):
                t = build(n, s)
                if t not in where:
                    where[t] = len(trees)
                    trees.append(t)
                index[n, s] = where[t]
        if homogeneous:
            index[:] = index[0]
        return cls(tuple(trees), index)


@dataclass(frozen=True, repr=False)
class DynamicTreeResult(TreeProtocolResult):
    """Exact expectations of a generation with a tree per round start (:class:`DynamicTreeRound`).

    A :class:`~spectheory.trees.TreeProtocolResult` whose drafts depend on the start state:
    ``state_drafts[n, s]`` is the number of nodes a round started at ``(n, s)`` drafts (within
    the depth ``T - n``) and ``state_widths[n, s, l]`` its nodes at depth ``l`` (``l = 0``: the
    root). ``draft_tokens`` is ``sum round_starts * state_drafts`` and the target-call time
    ``sum round_starts * t(state_drafts)``; ``drafts_per_round[n]`` is the mean over the states.
    """

    state_drafts: np.ndarray | None = None
    state_widths: np.ndarray | None = None

    @property
    def drafts_per_round(self) -> np.ndarray:
        prob = self.round_start_prob
        tot = (np.asarray(self.round_starts) * self.state_drafts).sum(-1)
        return np.divide(tot, prob, out=np.zeros_like(tot), where=prob > 0)

    @property
    def draft_tokens(self) -> float:
        return float((np.asarray(self.round_starts) * self.state_drafts).sum())

    def _draft_time(self, cost: Any) -> float:
        if cost.draft_call is None:
            return cost.c * self.draft_tokens if cost.c else 0.0
        starts = np.asarray(self.round_starts)
        assert self.state_widths is not None
        total = 0.0
        for n, s in zip(*np.nonzero(starts)):
            w = self.state_widths[n, s]
            total += starts[n, s] * cost.tree_draft_time(w[: int(np.max(np.nonzero(w)[0])) + 1])
        return float(total)

    def _call_time(self, cost: Any) -> float:
        if cost.target_call is None:
            return self.target_calls
        k = np.asarray(self.state_drafts, dtype=np.int64)
        t = np.concatenate([[0.0], cost.call_times(max(int(k.max()), 1))])
        return float((np.asarray(self.round_starts) * t[k]).sum())


class DynamicTreeRound(Round):
    """Base class: a draft tree per round start ``(n, s)``, top-k children, ``tree_topk``.

    A subclass implements :meth:`build` (the tree of a round at ``(n, s)``) and sets
    ``budget`` (most drafted nodes of a tree), ``rule`` and possibly ``depth_limit`` (the
    deepest tree, ``None``: ``budget``); it may override
    :meth:`table` when its trees are computed jointly (a dynamic programme). Tables are cached
    per chain and horizon (chains are immutable).

    Parameters
    ----------
    max_elements : int
        Memory bound of the Monte Carlo chunks (as :class:`~spectheory.trees.TreeRound`).
    """

    rule: str = "dynamic"
    budget: int = 1
    depth_limit: int | None = None

    def __init__(self, *, max_elements: int = MAX_ELEMENTS) -> None:
        self.verifier = get_verifier("tree_topk").for_tree()
        self.max_elements = check_int(max_elements, "max_elements", 1)
        self._tables: dict = {}
        self._rounds: dict = {}

    # ------------------------------------------------------------ the rule
    def build(self, chain: Any, horizon: int, n: int, s: int) -> DraftTree:
        """The tree of a round starting at position ``n`` in state ``s``."""
        raise NotImplementedError(f"{type(self).__name__}: define build")

    def builder(self, chain: Any, horizon: int) -> Callable[[int, int], DraftTree]:
        """``(n, s) -> tree`` for :meth:`table` (default: :meth:`build`)."""
        return lambda n, s: self.build(chain, horizon, n, s)

    def position_free(self, chain: Any) -> bool:
        """Whether the tree depends on the state only (default: on a homogeneous chain)."""
        return bool(chain.is_homogeneous)

    def table(self, chain: Any, horizon: int) -> TreeTable:
        """The :class:`TreeTable` of this rule on ``chain`` over ``horizon`` tokens (cached)."""
        key = (id(chain), int(horizon))
        hit = self._tables.get(key)
        if hit is not None and hit[0] is chain:
            return hit[1]
        chain.require_deterministic(f"{type(self).__name__} (token trees)")
        T = chain.check_horizon(horizon)
        tab = TreeTable.from_function(T, chain.n_states, self.builder(chain, T), self.position_free(chain))
        if len(self._tables) > 8:
            self._tables.clear()
        self._tables[key] = (chain, tab)
        return tab

    # ------------------------------------------------------------ Round protocol
    @property
    def name(self) -> str:
        return f"{self.rule}(budget={self.budget})"

    @property
    def max_depth(self) -> int | None:
        """``budget``, or ``depth_limit`` when that is smaller."""
        budget = int(self.budget)
        return budget if self.depth_limit is None else min(budget, int(self.depth_limit))

    def describe(self) -> str:
        return f"a {self.rule} draft tree of at most {self.budget} nodes per round start, verified by 'tree_topk'"

    def check(self, chain: Any, horizon: int) -> None:
        chain.require_deterministic("dynamic tree rounds (token trees)")

    def chunk_size(self, chain: Any, horizon: int) -> int:
        return max(1, int(self.max_elements // ((self.budget + 1) * chain.vocab_size)))

    def _round(self, tree: DraftTree) -> TreeRound:
        rnd = self._rounds.get(tree)
        if rnd is None:
            rnd = self._rounds[tree] = TreeRound(tree, self.verifier, max_elements=self.max_elements)
        return rnd

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        horizon, keep_path = runs.horizon, runs.keep_path
        tab = self.table(sampler.chain, horizon)
        which = tab.index[runs.n, runs.state]
        A = runs.size
        out = RoundOutcome(
            accepted=np.zeros(A, dtype=np.int64),
            final=np.zeros(A, dtype=np.int64),
            rejected=np.zeros(A, dtype=bool),
            drafted=np.zeros(A, dtype=np.int64),
            end_state=np.zeros(A, dtype=np.int64),
            path=np.full((A, self.depth(horizon)), -1, dtype=np.int64) if keep_path else None,
        )
        for i in np.unique(which):  # one tree round per group of runs drafting the same tree
            g = np.flatnonzero(which == i)
            o = self._round(tab.trees[int(i)]).play(sampler, runs.take(g), rng)
            out.accepted[g], out.final[g], out.rejected[g] = o.accepted, o.final, o.rejected
            out.drafted[g], out.end_state[g] = o.drafted, o.end_state
            if keep_path and o.path is not None:
                assert out.path is not None
                out.path[g, : o.path.shape[1]] = o.path
        return out

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """Exact :class:`DynamicTreeResult` (per-node engine per group of start states)."""
        if options:
            raise ValueError(f"options: a dynamic tree round takes none, got {sorted(options)}")
        T = chain.check_horizon(horizon)
        res = dynamic_tree_protocol(chain, T, self.table(chain, T), bonus, depth=self.max_depth)
        return res if cost is None else res.with_cost(cost)

    def check_plan(self, kit: Any, options: dict[str, Any]) -> Any:
        """The tree kit with ``tree_topk`` on the trees the rule drafts at the first position of
        each kit chain (unless ``options`` give ``instances``)."""
        if "instances" not in options:
            insts = []
            for n, c in kit.chains():
                tab = self.table(c, self.depth(1) + 1)
                trees = dict.fromkeys(tab.trees[int(i)] for i in tab.index[0])
                insts += [(f"{n}, {self.name}, {t!r}", c, t) for t in trees]
            options = {**options, "instances": insts}
        v = self.verifier
        return kit.tree_verifier(kit.reference_tree_verify(v), children=v.children, **options)

    def tags(self) -> RoundTags:
        """The defaults, with the decoder's reason spelt out: only a draft-only rule (one that
        defines :meth:`decode`, as ``Eagle2Tree`` and ``OptTree``) runs in the real decoder; a
        rule that reads the target or the chain state cannot be drafted by a model."""
        tags = super().tags()
        if tags.decoder:
            return tags
        why = (
            f"{type(self).__name__} is not a draft-only dynamic tree rule (Eagle2Tree, OptTree): "
            "its trees read the chain, which a model does not expose"
        )
        return tags.refuse({"decoder": why})

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def dynamic_tree_protocol(
    chain: Any, horizon: int, table: TreeTable, bonus: bool = True, depth: int | None = None
) -> DynamicTreeResult:
    r"""Exact expectations of a generation whose round at ``(n, s)`` drafts ``table.tree(n, s)``.

    Forward over round starts: the mass ``m_n`` of round starts at ``n`` is split by the tree
    each state drafts, and each part goes through one round of the per-node engine under
    ``tree_topk``. Exact because a round's outcome depends on its start only through
    ``(n, s)`` and the tree drafted there. ``depth`` (default: the deepest tree of the table)
    sets the width ``depth + 1`` of ``accepted_counts``.

    Examples
    --------
    A table with one tree everywhere is the static tree round:

    >>> import numpy as np, spectheory as st
    >>> from spectheory.trees import DraftTree, tree_protocol
    >>> from spectheory.kinds.dynamic.round import TreeTable, dynamic_tree_protocol
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> tree = DraftTree.from_branching([2, 1])
    >>> tab = TreeTable((tree,), np.zeros((8, 3), dtype=np.int64))
    >>> res = dynamic_tree_protocol(chain, 8, tab)
    >>> bool(np.isclose(res.target_calls, tree_protocol(chain, 8, tree, "tree_topk").target_calls))
    True
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("dynamic_tree_protocol (token trees)")
    v = get_verifier("tree_topk").for_tree()
    D = max([t.max_depth for t in table.trees] + ([] if depth is None else [int(depth)]))
    check_engine_size(chain, "tree_exact", T, nodes=max(t.size for t in table.trees) * len(table.trees))
    S = chain.n_states
    drafts = np.zeros((T, S), dtype=np.int64)
    widths = np.zeros((T, S, D + 1), dtype=np.int64)
    for n in range(T):
        for s in range(S):
            t = table.tree(n, s)
            k = min(t.max_depth, T - n)
            drafts[n, s] = t.nodes_within(k)
            w = np.bincount(t.depth, minlength=t.max_depth + 1)[: k + 1]
            widths[n, s, : w.size] = w
    acc = _Accumulator(T, D, chain.initial)
    cache: dict = {}
    with blas_single_thread(S):
        for n0 in range(T):
            m0 = acc.starts[n0]
            if not np.any(m0):
                continue
            idx = table.index[n0]
            for i in np.unique(idx[m0 > 0]):
                part = np.where(idx == i, m0, 0.0)
                push_round(acc, chain, T, table.trees[int(i)], v, bool(bonus), n0, part, cache)
    counts = acc.length.copy()
    return DynamicTreeResult(
        horizon=T,
        gamma=D,
        bonus=bool(bonus),
        round_starts=acc.starts[:T].copy(),
        rejection_by_position=acc.rejection_by_position.copy(),
        accepted_counts=counts,
        bonus_tokens=float(T - np.arange(counts.size) @ counts - acc.rejections) if bonus else 0.0,
        state_drafts=drafts,
        state_widths=widths,
    )

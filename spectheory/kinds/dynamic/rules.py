r"""Engines' dynamic tree rules on a chain: EAGLE-2's confidence tree and OPT-Tree's rule.

Notation: p = target, q = draft. Both rules score a drafted node by its *cumulative draft
probability* ``w(v) = prod_{u on the path to v} q(x_u | parent of u)`` (the draft's confidence
that the path is right) and expand a beam of the best-scoring nodes layer by layer; each node's
children are the draft's top-k tokens (:class:`~spectheory.children.TopK`), so the tree of a round
is a function of its start ``(n, s)`` on a chain with a deterministic ``next_state``
(:class:`~spectheory.kinds.dynamic.round.DynamicTreeRound`; verified by ``tree_topk``). Neither rule
reads the target.

**EAGLE-2** (Li et al. 2024, "EAGLE-2: Faster Inference of Language Models with Dynamic Draft
Trees", arXiv 2406.16858, Section 4, "Context-Aware Dynamic Draft Tree": 4.1 expansion phase,
4.2 reranking phase; reproduced from its ``topK_genrate``): the root's ``top_k`` children form
the first layer; ``depth - 1`` times, every node of the current layer (``top_k`` of them) gets
its ``top_k`` children and the ``top_k`` best of those ``top_k^2`` candidates by ``w`` form the
next layer. Reranking keeps the ``budget`` candidates with the largest ``w`` over all layers
(EAGLE-2's ``total_tokens``, the root excluded): a child's ``w`` never exceeds its parent's, so
they form a tree (ties go to the earlier candidate, which keeps parents and the draft's ranking
of siblings). ``depth`` here is the tree's depth in drafts (EAGLE-2's ``depth`` argument plus
one).

**OPT-Tree** (Wang et al. 2024, "OPT-Tree: Speculative Decoding with Adaptive Draft Tree
Structure", arXiv 2406.17276; reproduced from ``opt_classic/tree.py`` of its code): with a node
budget ``n``, every layer is the ``n`` best children (by ``w``) of the previous layer's ``n``
nodes; the tree ``T_L`` is the ``n`` best nodes of layers ``1..L``, and ``E(T_L) = sum_{v in T_L}
w(v)``, the draft's estimate of the expected accepted length, is what OPT-Tree maximises. It
deepens while ``E(T_L) - E(T_{L-1}) > threshold`` and ``L < max_depth`` and drafts the first
``T_L`` where that fails (``max_depth`` here is the tree's depth; the code's ``max_depth``
counts one more layer, drafted and not used).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..._guards import check_int, check_nonneg
from ..tree.draft_tree import DraftTree
from .round import DynamicTreeRound

__all__ = ["Eagle2Tree", "OptTree", "eagle2_tree", "opt_tree"]


class Candidates:
    """Drafted candidates of a beam expansion: parent, depth, cumulative draft probability,
    the token's rank among its parent's children (creation order = index) and a *key* that
    locates the candidate for ``law(key, depth)`` (its draft law) and ``child(key, x, j)``
    (the key of its rank-``j`` child with token ``x``): a chain state, or a node of the real
    decoder's drafted envelope tree."""

    def __init__(
        self, law: Callable[[Any, int], np.ndarray], child: Callable[[Any, int, int], Any], root: Any
    ):
        self.law, self.child = law, child
        self.parent, self.depth, self.w, self.key, self.rank = [-1], [0], [1.0], [root], [0]

    def expand(self, u: int, k: int) -> list:
        """Add the draft's top-``k`` children of candidate ``u``; return their indices."""
        q = np.asarray(self.law(self.key[u], self.depth[u]), dtype=np.float64)
        order = np.argsort(-q, kind="stable")[: min(k, q.size)]  # TopK's order
        out = []
        for j, x in enumerate(order):
            self.parent.append(u)
            self.depth.append(self.depth[u] + 1)
            self.w.append(self.w[u] * float(q[x]))
            self.key.append(self.child(self.key[u], int(x), j))
            self.rank.append(j)
            out.append(len(self.parent) - 1)
        return out

    def best(self, pool: list, m: int) -> list:
        """The ``m`` candidates of ``pool`` with the largest ``w`` (ties: earlier first)."""
        return sorted(pool, key=lambda i: (-self.w[i], i))[:m]

    def tree(self, chosen: list) -> DraftTree:
        """The DraftTree of ``chosen`` (a set closed under parents, siblings a rank prefix)."""
        keep = sorted(chosen)
        new = {0: 0} | {old: i + 1 for i, old in enumerate(keep)}
        kids: dict = {}
        for i in keep:
            p = self.parent[i]
            if p not in new:
                raise AssertionError("reranked candidates are not closed under parents")
            kids.setdefault(p, []).append(self.rank[i])
        for ranks in kids.values():
            if ranks != list(range(len(ranks))):
                raise AssertionError("a node's kept children are not a prefix of the draft's ranking")
        return DraftTree([-1] + [new[self.parent[i]] for i in keep])


def _chain_candidates(chain: Any, n: int, s: int) -> Candidates:
    """Candidates keyed by chain states: ``q(.|s)`` at kernel index ``n + depth``."""
    d, nxt = chain.draft, chain.next_state

    def law(state: int, depth: int) -> np.ndarray:
        return d[state] if d.ndim == 2 else d[min(n + depth, d.shape[0] - 1), state]

    return Candidates(law, lambda state, x, j: int(nxt[state, x]), int(s))


def eagle2_select(c: Candidates, budget: int, top_k: int, depth: int) -> list:
    """EAGLE-2's expansion and reranking on the candidates ``c``; the kept candidates."""
    frontier = c.expand(0, top_k)
    pool = list(frontier)
    for _ in range(depth - 1):
        layer = [v for u in frontier for v in c.expand(u, top_k)]
        pool += layer
        frontier = c.best(layer, top_k)
    return c.best(pool, budget)


def opt_select(c: Candidates, budget: int, threshold: float, max_depth: int) -> list:
    """OPT-Tree's layered selection on the candidates ``c``; the kept candidates."""
    pool: list = []
    layer: list = []
    value, L = 0.0, 0
    while True:
        kids = c.expand(0, budget) if L == 0 else [v for u in layer for v in c.expand(u, budget)]
        layer = c.best(kids, budget)
        pool += layer
        L += 1
        grown = float(sum(c.w[i] for i in c.best(pool, budget)))
        if grown - value > threshold and L < max_depth:
            value = grown
            continue
        return c.best(pool, budget)


def eagle2_tree(chain: Any, n: int, s: int, budget: int, top_k: int = 10, depth: int = 6) -> DraftTree:
    """EAGLE-2's tree for a round at position ``n`` in state ``s`` (module docstring).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.kinds.dynamic.rules import eagle2_tree
    >>> chain = st.DecodingChain.iid([0.5, 0.3, 0.2], [0.6, 0.3, 0.1])
    >>> eagle2_tree(chain, 0, 0, budget=4, top_k=2, depth=3).parents.tolist()
    [-1, 0, 0, 1, 3]
    """
    c = _chain_candidates(chain, n, s)
    return c.tree(eagle2_select(c, budget, top_k, depth))


def opt_tree(
    chain: Any, n: int, s: int, budget: int, threshold: float = 0.1, max_depth: int = 10
) -> DraftTree:
    """OPT-Tree's tree for a round at position ``n`` in state ``s`` (module docstring).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.kinds.dynamic.rules import opt_tree
    >>> chain = st.DecodingChain.iid([0.5, 0.3, 0.2], [0.6, 0.3, 0.1])
    >>> opt_tree(chain, 0, 0, budget=4, threshold=0.05).parents.tolist()
    [-1, 0, 0, 1, 3]
    """
    c = _chain_candidates(chain, n, s)
    return c.tree(opt_select(c, budget, threshold, max_depth))


class _DraftRule(DynamicTreeRound):
    """A rule that reads only the draft: built at every round start with the depth limited to
    the tokens left (``min(depth, T - n)``, as the real decoder drafts), and runnable in the real
    decoder (:func:`spectheory.decoder.dynamic_tree.dynamic_tree_generate`) on the envelope
    tree :meth:`envelope` (every candidate the rule may expand)."""

    width: int = 1  # children per expanded node

    def __init__(self, budget: int, depth_limit: int, depth_name: str, **kwargs: Any) -> None:
        """``budget`` and ``depth_limit`` checked (``depth_name``: the subclass's name for the
        depth limit, in the error); ``kwargs`` go to :class:`DynamicTreeRound`."""
        super().__init__(**kwargs)
        self.budget = check_int(budget, "budget", 1)
        self.depth_limit = check_int(depth_limit, depth_name, 1)

    def select(self, c: Candidates, depth: int) -> list:
        """The kept candidates of ``c`` with the tree's depth at most ``depth``."""
        raise NotImplementedError

    def position_free(self, chain: Any) -> bool:
        return False

    def builder(self, chain: Any, horizon: int) -> Callable[[int, int], DraftTree]:
        memo: dict = {}
        hom = chain.is_homogeneous

        def build(n: int, s: int) -> DraftTree:
            key = (0 if hom else n, s, min(self.depth(horizon), horizon - n))
            if key not in memo:
                c = _chain_candidates(chain, n, s)
                memo[key] = c.tree(self.select(c, key[2]))
            return memo[key]

        return build

    def envelope(self, vocab_size: int) -> DraftTree:
        """The complete ``min(width, V)``-ary tree of depth ``max_depth``: every candidate the
        rule can expand (slot ``j`` = the draft's rank ``j``)."""
        k = min(self.width, int(vocab_size))
        return DraftTree.from_branching([k] * self.depth(1))

    def decode(
        self, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict[str, Any]
    ) -> Any:
        """The real decoder: ``loops.dynamic_tree``
        (:func:`~spectheory.decoder.dynamic_tree.dynamic_tree_generate`) with this rule."""
        return loops.dynamic_tree(target, draft, prompts, max_new_tokens, self, **options)


class Eagle2Tree(_DraftRule):
    """EAGLE-2's confidence-expanded tree as a round (:func:`eagle2_tree` per round start).

    Parameters
    ----------
    budget : int >= 1
        Drafted nodes kept by the reranking (EAGLE-2's ``total_tokens``).
    top_k : int >= 1
        Children per expanded node and nodes expanded per layer (clipped to the vocabulary).
    depth : int >= 1
        Layers of the expansion = the tree's largest depth in drafts.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import Eagle2Tree
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> rnd = Eagle2Tree(4, top_k=2, depth=3)
    >>> sim = st.simulate(chain, 12, rnd, 400, rng=1)
    >>> m, se = sim.mean_se("target_calls")
    >>> bool(abs(m - chain.protocol(12, rnd).target_calls) < 5 * se)
    True
    """

    rule = "eagle2"

    def __init__(self, budget: int, top_k: int = 10, depth: int = 6, **kwargs: Any) -> None:
        super().__init__(budget, depth, "depth", **kwargs)
        self.top_k = check_int(top_k, "top_k", 1)

    @property
    def name(self) -> str:
        return f"eagle2(budget={self.budget}, top_k={self.top_k}, depth={self.depth_limit})"

    @property
    def width(self) -> int:  # type: ignore[override]
        return self.top_k

    def select(self, c: Candidates, depth: int) -> list:
        return eagle2_select(c, self.budget, self.top_k, depth)


class OptTree(_DraftRule):
    """OPT-Tree's adaptive tree as a round (:func:`opt_tree` per round start).

    Parameters
    ----------
    budget : int >= 1
        Drafted nodes of the tree (OPT-Tree's ``nnodes``).
    threshold : float >= 0
        Deepen while the draft's expected accepted length grows by more than this.
    max_depth : int >= 1
        Largest depth of the tree in drafts.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import OptTree
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> res = chain.protocol(12, OptTree(4))
    >>> 1 < res.tokens_per_call < 5
    True
    """

    rule = "opt_tree"

    def __init__(self, budget: int, threshold: float = 0.1, max_depth: int = 10, **kwargs: Any) -> None:
        super().__init__(budget, max_depth, "max_depth", **kwargs)
        self.threshold = float(check_nonneg(threshold, "threshold"))

    @property
    def name(self) -> str:
        return f"opt_tree(budget={self.budget}, threshold={self.threshold:g}, max_depth={self.depth_limit})"

    @property
    def width(self) -> int:  # type: ignore[override]
        return self.budget

    def select(self, c: Candidates, depth: int) -> list:
        return opt_select(c, self.budget, self.threshold, depth)

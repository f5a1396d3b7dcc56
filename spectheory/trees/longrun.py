r"""The long-run rate of a draft tree per chain state, exactly, and the long-run optimal trees.

Notation: p = target, q = draft. On a homogeneous chain with a deterministic ``next_state``
and the draft's top-k children verified by ``tree_topk`` (:mod:`.dynamic`), a rule that drafts
the tree ``tree(s)`` from a round starting in state ``s`` makes the round starts a Markov
chain. One round of ``tree(s)`` from ``s`` (the per-node engine,
:func:`spectheory.kinds.tree.exact.push_round`, far from the horizon: never truncated) gives the
law of (tokens emitted, next round's start state): the kernel ``P[s, s']``, the expected tokens
``e(s)`` (accepted drafts plus the correction or bonus token) and the round's time
``tau(s) = draft time + t(k_s)`` (``c k_s`` with ``k_s`` the tree's drafted nodes, or
``draft_call`` per level). With ``nu`` the stationary law of ``P`` the long-run tokens per unit
time is the renewal-reward ratio

.. math:: \rho = \frac{\nu \cdot e}{\nu \cdot \tau}

(docs/stopping.md, Theorem 3; :func:`long_run_trees`). Over every rule that drafts a top-k
tree of at most ``budget`` nodes from the round's start, with any memory, the best long-run
rate is that of a stationary rule ``s -> tree(s)`` (an average-reward Markov decision process
whose actions are the plane trees of at most ``budget`` nodes; finite and unichain, which the
code requires, where a stationary deterministic rule is optimal -- a standard result, not
re-proved here: the tests check the optimum against brute force over every stationary
per-state assignment of the shapes): :func:`long_run_tree_optimum`
enumerates the shapes (:func:`~spectheory.trees.sequoia.ordered_trees`) and solves it exactly
by Dinkelbach's method (:func:`spectheory.stopping.optimal.dinkelbach`); ``per_state=False``
gives the best static tree (one shape for every state). The per-state optimal trees of the
finite-horizon programme (:class:`~spectheory.trees.OptimalTree`) far from the horizon attain
the long-run optimum (value iteration over round starts; tested).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._guards import check_int
from ..chain.classes import require_one_closed_class, stationary_distribution
from ..cost.base import as_cost
from ..exact.parts import blas_single_thread
from ..kinds.dynamic.round import DynamicTreeRound
from ..kinds.tree.accumulate import _Accumulator
from ..kinds.tree.draft_tree import DraftTree
from ..kinds.tree.exact import push_round
from ..stopping.longrun import LongRunRate
from ..stopping.optimal import _gain, dinkelbach
from ..verifiers.base import get_verifier
from .sequoia import ordered_trees

__all__ = ["LongRunTrees", "StateTrees", "long_run_tree_optimum", "long_run_trees", "tree_round_chain"]


def _tree_time(tree: DraftTree, cost: Any) -> float:
    k = tree.size
    return float(cost.tree_draft_time(np.bincount(tree.depth)) + cost.call_times(k)[k - 1])


def tree_round_chain(
    chain: Any, trees: Sequence[DraftTree], cost: Any = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""One untruncated ``tree_topk`` round of ``trees[s]`` from each state ``s``: the round-start chain.

    Parameters
    ----------
    chain : DecodingChain
        Homogeneous, deterministic ``next_state``.
    trees : sequence of DraftTree, length S
        The tree drafted from a round starting in state ``s``.
    cost : float or Cost
        ``c`` per drafted node (or ``draft_call`` per level) plus ``t(k)`` per call.

    Returns
    -------
    trans : ndarray, shape (S, S)
        ``trans[s, s']``: P(the next round starts in ``s'`` | this one starts in ``s``).
    tokens : ndarray, shape (S,)
        Expected tokens the round emits.
    time : ndarray, shape (S,)
        The round's time.

    Examples
    --------
    One node, the draft's top token: accepted with ``p(top)``, then one more token:

    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree
    >>> from spectheory.trees.longrun import tree_round_chain
    >>> chain = st.DecodingChain.iid([0.7, 0.3], [0.6, 0.4])
    >>> P, e, tau = tree_round_chain(chain, [DraftTree.from_branching([1])], 0.1)
    >>> P.tolist(), round(float(e[0]), 12), round(float(tau[0]), 12)
    ([[1.0]], 1.7, 1.1)
    """
    if not chain.is_homogeneous:
        raise ValueError("chain: the long-run rate needs a homogeneous chain")
    chain.require_deterministic("tree_round_chain (token trees)")
    S = chain.n_states
    trees = list(trees)
    if len(trees) != S or not all(isinstance(t, DraftTree) for t in trees):
        raise ValueError(f"trees: expected {S} DraftTrees (one per state), got {len(trees)} items")
    cost = as_cost(cost)
    v = get_verifier("tree_topk").for_tree()
    eye = np.eye(S)
    trans, tokens = np.zeros((S, S)), np.zeros(S)
    time = np.array([_tree_time(t, cost) for t in trees])
    cache: dict = {}
    groups: dict = {}
    for s, t in enumerate(trees):
        groups.setdefault(t, []).append(s)
    with blas_single_thread(S):
        for tree, states in groups.items():
            T = tree.max_depth + 1  # never truncated: every leaf emits its bonus token
            acc = _Accumulator(T, tree.max_depth, eye[states])
            push_round(acc, chain, T, tree, v, True, 0, acc.starts[0], cache)
            nxt = acc.starts[1:]  # [T, G, S]: next round starts after n = 1..T tokens
            trans[states] = nxt.sum(0)
            tokens[states] = np.arange(1, T + 1) @ nxt.sum(-1)
    return trans, tokens, time


@dataclass(repr=False)
class LongRunTrees(LongRunRate):
    """Long-run value of drafting ``trees[s]`` from a round starting in state ``s``.

    Attributes
    ----------
    rate : float
        As :class:`~spectheory.stopping.longrun.LongRunRate`.
    trees : tuple of DraftTree
        ``trees[s]``: the tree drafted from state ``s``.
    stationary : ndarray, shape (S,)
        Stationary law of the round starts.
    tokens_per_round, time_per_round : float
        Expectations per round under ``stationary``.
    name : str
    """

    trees: tuple
    stationary: np.ndarray
    tokens_per_round: float
    time_per_round: float
    name: str = ""

    @property
    def tokens_per_call(self) -> float:
        """Long-run tokens per target call (``tokens_per_round``: one call per round)."""
        return self.tokens_per_round

    def __repr__(self) -> str:
        return (
            f"LongRunTrees(rate={self.rate:.6g}, tokens_per_round={self.tokens_per_round:.6g}, "
            f"time_per_round={self.time_per_round:.6g}, name={self.name!r})"
        )


def _stationary(P: np.ndarray) -> np.ndarray:
    require_one_closed_class(
        P,
        "the long-run rate of these trees",
        "their round starts never leave one of these sets, so the rate depends on the start state",
    )
    return stationary_distribution(P)


def _state_trees(chain: Any, rule: Any, horizon: int) -> tuple[tuple, str]:
    S = chain.n_states
    if isinstance(rule, DraftTree):
        return (rule,) * S, f"static tree (size {rule.size}, depth {rule.max_depth})"
    if isinstance(rule, DynamicTreeRound):
        T = check_int(horizon, "horizon", 1)
        tab = rule.table(chain, T)
        return tuple(tab.tree(0, s) for s in range(S)), rule.name
    trees = tuple(rule)
    return trees, "per-state trees"


def long_run_trees(chain: Any, rule: Any, cost: Any = None, *, horizon: int = 64) -> LongRunTrees:
    r"""Exact long-run tokens per unit time of a per-state tree rule (module docstring).

    Parameters
    ----------
    chain : DecodingChain
        Homogeneous, deterministic ``next_state``, unichain under the rule.
    rule : DraftTree, sequence of S DraftTrees, or DynamicTreeRound
        A static tree; ``trees[s]`` per start state; or a dynamic rule, which drafts the trees
        of its table at the first round start of a ``horizon``-token generation (far from the
        horizon: for :class:`~spectheory.trees.OptimalTree` the per-state optimal trees with
        ``horizon`` tokens to go; for the draft-only rules, their untruncated trees).
    cost : float or Cost
    horizon : int
        See ``rule``.

    Returns
    -------
    LongRunTrees

    Examples
    --------
    A path of one-hot drafts is token verification with the draft's top token:

    >>> import numpy as np, spectheory as st
    >>> from spectheory.stopping.optimal import long_run_rate
    >>> from spectheory.trees import DraftTree, long_run_trees
    >>> chain = st.DecodingChain.iid([0.8, 0.2], [1.0, 0.0])
    >>> r = long_run_trees(chain, DraftTree.from_branching([1, 1, 1]), 0.1).rate
    >>> bool(np.isclose(r, long_run_rate(chain, 3, 0.1), rtol=1e-12))
    True
    """
    trees, name = _state_trees(chain, rule, horizon)
    P, e, tau = tree_round_chain(chain, trees, cost)
    nu = _stationary(P)
    ge, gt = float(nu @ e), float(nu @ tau)
    return LongRunTrees(ge / gt, trees, nu, ge, gt, name)


def long_run_tree_optimum(
    chain: Any,
    budget: int,
    cost: Any = None,
    *,
    per_state: bool = True,
    max_depth: int | None = None,
    max_children: int | None = None,
) -> LongRunTrees:
    r"""The best long-run rate over top-k trees of at most ``budget`` drafted nodes (module docstring).

    Every plane tree of ``1..budget`` drafted nodes (depth at most ``max_depth``, at most
    ``max_children`` children per node, clipped to the vocabulary) is an action; its
    untruncated ``tree_topk`` round from each state (:func:`tree_round_chain`) gives the
    average-reward problem, solved exactly by Dinkelbach's method. ``per_state=False``: the
    best single tree for every state (the static optimum). Sizes: ``sum_{k=1}^{budget}
    Catalan(k)`` shapes (196 at ``budget = 6``; fewer under ``max_depth``, or when
    ``max_children`` or the vocabulary caps a node's children; counted exhaustively in
    ``tests/trees/test_tree_longrun.py``); small budgets.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import long_run_tree_optimum
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> dyn = long_run_tree_optimum(chain, 3, 0.1)
    >>> static = long_run_tree_optimum(chain, 3, 0.1, per_state=False)
    >>> bool(dyn.rate >= static.rate - 1e-12)
    True
    """
    M = check_int(budget, "budget", 1)
    if M > 8:
        raise ValueError(f"budget: at most 8 nodes (the shapes are enumerated: Catalan numbers), got {M}")
    D = M if max_depth is None else min(check_int(max_depth, "max_depth", 1), M)
    K = (
        chain.vocab_size
        if max_children is None
        else min(check_int(max_children, "max_children", 1), chain.vocab_size)
    )
    if not chain.is_homogeneous:
        raise ValueError("chain: the long-run rate needs a homogeneous chain")
    cost = as_cost(cost)
    shapes = [t for k in range(1, M + 1) for t in ordered_trees(k, D) if int(t.n_children.max()) <= K]
    S = chain.n_states
    trans = np.empty((len(shapes), S, S))
    tokens = np.empty((len(shapes), S))
    tau = np.empty(len(shapes))
    for a, t in enumerate(shapes):
        trans[a], tokens[a], both = tree_round_chain(chain, [t] * S, cost)
        tau[a] = both[0]
    if per_state:
        pol, rate, _, _, _ = dinkelbach(trans, tokens, tau)
        trees = tuple(shapes[int(a)] for a in pol)
        name = f"long-run optimal tree per state (budget {M})"
    else:
        rates = np.array([_gain(trans[a], tokens[a])[0] / tau[a] for a in range(len(shapes))])
        best = int(np.argmax(rates))
        trees = (shapes[best],) * S
        name = f"long-run optimal static tree (budget {M})"
    out = long_run_trees(chain, trees, cost)
    out.name = name
    return out


class StateTrees(DynamicTreeRound):
    """A fixed tree per chain state as a round: ``trees[s]`` from every round start in state ``s``.

    The per-state tree policy of the long run (:func:`long_run_trees`) played by the one round
    engine (``st.simulate``) and its finite-horizon exact engine (``chain.protocol``); trees are
    truncated at the tokens left.

    Parameters
    ----------
    trees : sequence of DraftTree
        One per state of the chain it is played on.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree, StateTrees
    >>> chain = st.DecodingChain.random(2, rng=0)
    >>> rnd = StateTrees([DraftTree.from_branching([2, 1]), DraftTree.from_branching([1])])
    >>> sim = st.simulate(chain, 12, rnd, 400, rng=1)
    >>> m, se = sim.mean_se("target_calls")
    >>> bool(abs(m - chain.protocol(12, rnd).target_calls) < 5 * se)
    True
    """

    rule = "state_trees"

    def __init__(self, trees: Sequence[DraftTree], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.trees = tuple(trees)
        if not self.trees or not all(isinstance(t, DraftTree) for t in self.trees):
            raise ValueError("trees: expected a non-empty sequence of DraftTrees (one per state)")
        self.budget = max(t.size for t in self.trees)

    @property
    def max_depth(self) -> int:
        return max(t.max_depth for t in self.trees)

    def position_free(self, chain: Any) -> bool:
        return True

    def build(self, chain: Any, horizon: int, n: int, s: int) -> DraftTree:
        if len(self.trees) != chain.n_states:
            raise ValueError(f"trees: {len(self.trees)} trees for a chain of {chain.n_states} states")
        return self.trees[s]

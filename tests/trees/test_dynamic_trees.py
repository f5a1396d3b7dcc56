"""Dynamic draft trees: a tree per round start (EAGLE-2, OPT-Tree, the per-state optimum).

docs/trees.md, "Dynamic trees": the dynamic engine against the static tree engine, exact
against Monte Carlo (5 SE) for every rule on homogeneous and position-dependent chains, the
optimal-tree programme against its own trees' exact value (1e-12), against every static top-k
tree and the engines' rules, and against brute force over all tree tables on a tiny chain.
"""

import itertools

import numpy as np
import pytest

import spectheory as st
from spectheory.chain.examples import easy_hard_chain
from spectheory.cost import Cost
from spectheory.kinds.dynamic.round import DynamicTreeResult, TreeTable, dynamic_tree_protocol
from spectheory.kinds.dynamic.rules import eagle2_tree, opt_tree
from spectheory.trees import (
    DraftTree,
    Eagle2Tree,
    OptimalTree,
    OptTree,
    optimal_tree_dp,
    tree_protocol,
    tree_round_law,
)
from spectheory.trees.sequoia import ordered_trees
from tests._helpers import assert_within_se

AFFINE = Cost(0.1, target_call=lambda k: 1.0 + 0.04 * k)


def _position_dependent(seed, T=10):
    g = np.random.default_rng(seed)
    base = st.DecodingChain.random(3, concentration=0.7, rng=seed)
    tgt = np.stack([base.target] * T)
    dr = g.dirichlet(np.ones(3), size=(T, 3))
    return st.DecodingChain(tgt, dr, base.initial)


@pytest.mark.parametrize("seed", [0, 1])
def test_constant_table_is_the_static_tree_round(seed):
    for chain, T in ((st.DecodingChain.random(4, rng=seed), 9), (_position_dependent(seed), 10)):
        tree = DraftTree.from_branching([2, 2])
        tab = TreeTable((tree,), np.zeros((T, chain.n_states), dtype=np.int64))
        dyn = dynamic_tree_protocol(chain, T, tab)
        ref = tree_protocol(chain, T, tree, "tree_topk")
        for name in ("target_calls", "rejections", "draft_tokens", "accepted", "bonus_tokens"):
            assert abs(getattr(dyn, name) - getattr(ref, name)) < 1e-12, name
        np.testing.assert_allclose(dyn.accepted_counts, ref.accepted_counts, atol=1e-12)
        np.testing.assert_allclose(dyn.rejection_by_position, ref.rejection_by_position, atol=1e-12)
        for cost in (0.2, AFFINE, Cost(0.1, draft_call=lambda w: 0.1 + 0.01 * w)):
            assert abs(dyn.time(cost) - ref.time(cost)) < 1e-12


RULES = [
    Eagle2Tree(5, top_k=2, depth=3),
    OptTree(5, threshold=0.05),
    OptimalTree(5, cost=AFFINE),
]


@pytest.mark.parametrize("rnd", RULES, ids=lambda r: r.rule)
@pytest.mark.parametrize("kind", ["homogeneous", "position"])
def test_dynamic_trees_exact_match_monte_carlo(rnd, kind):
    if kind == "homogeneous":
        chain, T = st.DecodingChain.random(4, n_states=5, concentration=0.8, rng=3), 14
    else:
        chain, T = _position_dependent(5), 10
    exact = chain.protocol(T, rnd, cost=AFFINE)
    assert isinstance(exact, DynamicTreeResult)
    sim = st.simulate(chain, T, rnd, 5000, rng=11, cost=AFFINE)
    for name in ("target_calls", "draft_tokens", "rejections", "accepted"):
        assert_within_se(*sim.mean_se(name), getattr(exact, name), name)
    t = sim.time()
    assert_within_se(t.mean(), t.std(ddof=1) / np.sqrt(t.size), exact.time(), "time")
    law = exact.accepted_count_law
    assert law.shape[0] == rnd.max_depth + 1 and abs(law.sum() - 1) < 1e-12
    assert abs(exact.tokens_per_call - T / exact.target_calls) < 1e-12


def test_dynamic_round_returns_tokens():
    chain = easy_hard_chain(0.9)
    sim = st.simulate(chain, 12, Eagle2Tree(4, top_k=2, depth=3), 50, rng=2, return_tokens=True)
    assert sim.tokens.shape == (50, 12) and sim.tokens.min() >= 0


@pytest.mark.parametrize("seed", range(4))
def test_optimal_tree_programme_is_exact_and_beats_every_static_and_engine_tree(seed):
    chain = st.DecodingChain.random(3, concentration=0.6, rng=seed)
    T, budget = 8, 4
    for cost in (0.05, AFFINE):
        dp = optimal_tree_dp(chain, T, budget, cost)
        res = chain.protocol(T, OptimalTree(budget, cost=cost))
        assert abs(res.time() - dp.time) < 1e-12
        for n in range(1, budget + 1):
            for tree in ordered_trees(n):
                if tree.n_children.max() > chain.vocab_size:
                    continue
                assert dp.time <= tree_protocol(chain, T, tree, "tree_topk").time(cost) + 1e-12
        for rnd in (Eagle2Tree(budget, top_k=2, depth=3), OptTree(budget, threshold=0.0)):
            assert dp.time <= chain.protocol(T, rnd).time(cost) + 1e-12


def test_optimal_tree_equals_brute_force_over_tree_tables():
    chain = st.DecodingChain.random(2, concentration=0.7, rng=7)
    T, S, cost = 3, chain.n_states, 0.3
    trees = [DraftTree([-1, 0]), DraftTree([-1, 0, 1]), DraftTree([-1, 0, 0])]
    best = np.inf
    # at n = T - 1 the path is truncated to one node: only trees 0 and 2 differ there
    for head, last in itertools.product(
        itertools.product(range(3), repeat=(T - 1) * S), itertools.product((0, 2), repeat=S)
    ):
        tab = TreeTable(tuple(trees), np.array(head + last).reshape(T, S))
        best = min(best, dynamic_tree_protocol(chain, T, tab).time(cost))
    assert abs(optimal_tree_dp(chain, T, 2, cost).time - best) < 1e-12


def test_optimal_tree_value_improves_with_the_budget_and_respects_limits():
    chain = easy_hard_chain(0.9)
    times = [optimal_tree_dp(chain, 12, b, 0.05).time for b in (1, 2, 4)]
    assert times[0] >= times[1] - 1e-12 >= times[2] - 2e-12
    dp = optimal_tree_dp(chain, 12, 6, 0.05, max_depth=2, max_children=2)
    for t in dp.table.trees:
        assert t.size <= 6 and t.max_depth <= 2 and t.n_children.max() <= 2


def test_engine_rules_shapes():
    chain = st.DecodingChain.random(4, rng=4)
    for s in range(chain.n_states):
        path = eagle2_tree(chain, 0, s, budget=5, top_k=1, depth=3)
        assert path.parents.tolist() == [-1, 0, 1, 2]  # top_k = 1: the greedy path
        t = eagle2_tree(chain, 0, s, budget=6, top_k=3, depth=3)
        assert t.size == 6 and t.max_depth <= 3
        o = opt_tree(chain, 0, s, budget=6, threshold=0.0, max_depth=4)
        assert o.size == 6 and o.max_depth <= 4
        # a huge threshold stops after the first layer: the root's top children
        assert opt_tree(chain, 0, s, budget=3, threshold=10.0).parents.tolist() == [-1, 0, 0, 0]


def test_eagle2_keeps_the_best_candidates_by_cumulative_draft_probability():
    # one-state chain: node weights are products of q over the ranked tokens
    q = np.array([0.5, 0.3, 0.2])
    chain = st.DecodingChain.iid([0.4, 0.4, 0.2], q)
    tree = eagle2_tree(chain, 0, 0, budget=4, top_k=2, depth=3)
    # candidates: depth 1: .5, .3; depth 2 (children of both): .25, .15, .15, .09;
    # the best four: .5, .3, .25 (0 -> 0), .15 (0 -> 1; ties go to the earlier candidate)
    assert tree.parents.tolist() == [-1, 0, 0, 1, 1]


def test_errors():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="draft_call"):
        optimal_tree_dp(chain, 5, 2, Cost(0.1, draft_call=lambda w: 0.1))
    with pytest.raises(ValueError, match="budget"):
        Eagle2Tree(0)
    with pytest.raises(ValueError, match="bonus"):
        chain.protocol(5, OptimalTree(2), bonus=False)
    with pytest.raises(ValueError, match="threshold"):
        OptTree(3, threshold=-1)


@pytest.mark.parametrize("rnd", RULES, ids=lambda r: r.rule)
def test_kit_checks_the_rules_trees(rnd):
    from spectheory.testing import check_round

    assert check_round(rnd, n_samples=2000, rng=0).passed


def test_best_deterministic_tree_is_the_brute_force_optimum():
    from spectheory.trees.speed_of_light import best_tree_accepted

    base = st.DecodingChain.random(3, concentration=0.7, rng=2)
    chain = st.DecodingChain(base.target, base.target, base.initial)  # draft = target: top-k = target's
    for P in range(1, 6):
        brute = max(
            float(tree_round_law(chain, t, "tree_topk")[s] @ np.arange(t.max_depth + 1))
            for t in ordered_trees(P)
            for s in [1]
        )
        assert abs(best_tree_accepted(chain, P, 1) - brute) < 1e-12


@pytest.mark.parametrize("p", [[0.5, 0.5], [0.7, 0.2, 0.1], [0.25] * 4])
def test_speed_of_light_leading_term_bounds_the_exact_optimum_whose_slope_is_one_over_mu(p):
    from spectheory.trees.speed_of_light import best_tree_accepted, entropy_moments, speed_of_light

    chain = st.DecodingChain.iid(p, p)
    mu, mu2 = entropy_moments(chain)
    exact = {P: best_tree_accepted(chain, P, 0) for P in (16, 256, 4096)}
    for P, value in exact.items():
        assert value <= speed_of_light(mu, mu2, P)
    slope = (exact[4096] - exact[256]) / np.log(16)
    assert abs(slope * mu - 1) < 0.01  # renewal: E[X] = log P / mu + O(1)

"""The long-run rate of per-state trees (spectheory.trees.longrun): against an independent
Fraction computation, against the single-path long run, the optimum against brute force over
every per-state assignment, the finite-horizon programme's trees far from the horizon, and
Monte Carlo of the one round engine playing the per-state trees."""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as st
from spectheory.stopping.optimal import long_run_optimum, long_run_rate
from spectheory.trees import (
    DraftTree,
    Eagle2Tree,
    OptimalTree,
    StateTrees,
    long_run_tree_optimum,
    long_run_trees,
)
from spectheory.trees.longrun import tree_round_chain
from spectheory.trees.sequoia import ordered_trees
from tests._helpers import assert_within_se


def _fraction_round(p, q, nxt, tree, s):
    """(next-state law, expected tokens) of one untruncated tree_topk round from ``s``, in Fractions."""
    S = len(p)
    law, tokens = [F(0)] * S, F(0)

    def visit(u, state, mass, emitted):
        nonlocal tokens
        kids = tree.children[u]
        ranked = sorted(range(len(q[state])), key=lambda x: (-q[state][x], x))
        drafted = ranked[: len(kids)]
        for y in range(len(p[state])):
            m = mass * p[state][y]
            if y in drafted:
                visit(kids[drafted.index(y)], nxt[state][y], m, emitted + 1)
            else:  # the correction (y not drafted) or, at a leaf, the bonus token
                law[nxt[state][y]] += m
                tokens += m * (emitted + 1)

    visit(0, s, F(1), 0)
    return law, tokens


def test_two_state_chain_equals_a_fraction_computation():
    p = [[F(3, 4), F(1, 4)], [F(1, 3), F(2, 3)]]
    q = [[F(1, 2), F(1, 2)], [F(1, 5), F(4, 5)]]
    nxt = [[0, 1], [0, 1]]
    chain = st.DecodingChain(np.array(p, dtype=float), np.array(q, dtype=float), [0.5, 0.5], np.array(nxt))
    c = F(1, 10)
    for trees in (
        [DraftTree.from_branching([2, 1]), DraftTree.from_branching([1, 1, 1])],
        [DraftTree([-1, 0, 1, 0]), DraftTree.from_branching([1])],
    ):
        rows = [_fraction_round(p, q, nxt, t, s) for s, t in enumerate(trees)]
        P01, P10 = rows[0][0][1], rows[1][0][0]
        nu = [P10 / (P01 + P10), P01 / (P01 + P10)]
        tau = [c * t.size + 1 for t in trees]
        rate = (nu[0] * rows[0][1] + nu[1] * rows[1][1]) / (nu[0] * tau[0] + nu[1] * tau[1])
        res = long_run_trees(chain, trees, float(c))
        assert abs(res.rate - float(rate)) < 1e-12
        assert np.allclose(res.stationary, [float(x) for x in nu], atol=1e-12)
        P, e, _ = tree_round_chain(chain, trees, float(c))
        assert np.allclose(P, [[float(x) for x in r[0]] for r in rows], atol=1e-14)
        assert np.allclose(e, [float(r[1]) for r in rows], atol=1e-14)


@pytest.mark.parametrize("seed", [0, 1])
def test_one_hot_draft_path_is_the_single_path_long_run(seed):
    base = st.DecodingChain.random(3, n_states=3, concentration=0.7, rng=seed)
    onehot = np.eye(3)[base.draft.argmax(-1)]
    chain = st.DecodingChain(base.target, onehot, base.initial, base.next_state)
    for k in (1, 3):
        r = long_run_trees(chain, DraftTree.from_branching([1] * k), 0.1).rate
        assert abs(r - long_run_rate(chain, k, 0.1)) < 1e-12 * r
    # and the best per-state path equals the long-run optimum over draft lengths
    paths = [DraftTree.from_branching([1] * k) for k in range(1, 5)]
    best = max(long_run_trees(chain, list(a), 0.1).rate for a in itertools.product(paths, repeat=3))
    assert abs(best - long_run_optimum(chain, 0.1, 4).rate) < 1e-10


def test_optimum_equals_brute_force_over_every_per_state_assignment():
    chain = st.DecodingChain.random(3, n_states=2, concentration=0.6, similarity=0.4, rng=5)
    shapes = [t for k in range(1, 4) for t in ordered_trees(k)]
    for c in (0.05, 0.3):
        rates = {a: long_run_trees(chain, list(a), c).rate for a in itertools.product(shapes, repeat=2)}
        dyn = long_run_tree_optimum(chain, 3, c)
        static = long_run_tree_optimum(chain, 3, c, per_state=False)
        assert abs(dyn.rate - max(rates.values())) < 1e-12
        assert abs(static.rate - max(rates[(t, t)] for t in shapes)) < 1e-12
        assert dyn.rate >= static.rate - 1e-15
        assert abs(dyn.rate * dyn.time_per_token() - 1) < 1e-15


def test_finite_horizon_optimal_trees_far_from_the_horizon_attain_the_long_run_optimum():
    chain = st.DecodingChain.random(3, rng=0)
    for c in (0.05, 0.2):
        best = long_run_tree_optimum(chain, 5, c).rate
        dp = long_run_trees(chain, OptimalTree(5, cost=c), c, horizon=128).rate
        assert abs(dp - best) < 1e-12 * best
        short = long_run_trees(chain, OptimalTree(5, cost=c), c, horizon=6).rate
        assert short <= best + 1e-12
        for rule in (Eagle2Tree(5, top_k=2, depth=4), DraftTree.from_branching([2, 1, 1])):
            assert long_run_trees(chain, rule, c).rate <= best + 1e-12


def test_monte_carlo_of_the_per_state_trees_matches_the_exact_values():
    base = st.DecodingChain.random(3, n_states=3, concentration=0.8, rng=2)
    opt = long_run_tree_optimum(base, 4, 0.1)
    chain = st.DecodingChain(base.target, base.draft, opt.stationary, base.next_state)  # stationary starts
    rnd, T = StateTrees(opt.trees), 150
    exact = chain.protocol(T, rnd, cost=0.1)
    # the finite generation tends to the long run: T * (time per token) - T / rate stays bounded
    assert abs(exact.time() - T / opt.rate) < 2.0
    sim = st.simulate(chain, T, rnd, 400, rng=3, cost=0.1)
    t = sim.time()
    assert_within_se(t.mean(), t.std(ddof=1) / np.sqrt(t.size), exact.time(), "time")
    assert_within_se(*sim.mean_se("target_calls"), exact.target_calls, "target_calls")


def test_errors():
    chain = st.DecodingChain.random(2, rng=0)
    with pytest.raises(ValueError, match="trees"):
        long_run_trees(chain, [DraftTree.from_branching([1])] * 3)
    with pytest.raises(ValueError, match="budget"):
        long_run_tree_optimum(chain, 9)
    with pytest.raises(ValueError, match="homogeneous"):
        long_run_trees(st.DecodingChain.random(2, horizon=4, rng=0), DraftTree.from_branching([1]))
    with pytest.raises(ValueError, match="trees"):
        StateTrees([])
    with pytest.raises(ValueError, match="trees"):
        chain.protocol(6, StateTrees([DraftTree.from_branching([1])] * 3))


def _plane_shape(parents):
    """The nested-tuple shape of a rooted tree whose children are ordered by index."""
    kids = {i: [] for i in range(len(parents))}
    for i, p in enumerate(parents[1:], start=1):
        kids[int(p)].append(i)

    def shape(i):
        return tuple(shape(j) for j in kids[i])

    return shape(0)


def test_long_run_tree_optimum_enumerates_196_shapes_at_budget_6():
    """Issue 41: the docs said 197. Exhaustively: every parent array with ``parent[i] < i`` over
    ``k`` drafted nodes (``k!`` of them) read as a plane tree (children ordered by index) gives
    every plane tree (label one in preorder); the distinct shapes number 1, 2, 5, 14, 42, 132
    (Catalan(1..6)), 196 in all, and ordered_trees yields exactly these, each once."""
    total = 0
    for k in range(1, 7):
        exhaustive = {
            _plane_shape([-1, *ps]) for ps in itertools.product(*[range(i) for i in range(1, k + 1)])
        }
        listed = [_plane_shape(t.parents) for t in ordered_trees(k, k)]
        assert len(listed) == len(set(listed)) and set(listed) == exhaustive
        total += len(exhaustive)
    assert total == 196

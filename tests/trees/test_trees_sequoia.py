"""Sequoia's positional dynamic program and its assumption, audited on chains (issue 11).

The DP is checked against brute force over every ordered tree under the positional value;
the measured positional vector against its Monte Carlo estimate (5 standard errors per
entry, fixed seed); the exact tree value against the per-node engine's protocol; the
search optimum against the DP's tree (never worse, by construction of the search).
"""

import math

import numpy as np
import pytest

import spectheory as st
from spectheory.trees import (
    DraftTree,
    exact_tree_value,
    optimal_tree_search,
    ordered_trees,
    positional_value,
    positional_vector,
    sequoia_positional_dp,
)


def test_ordered_trees_are_catalan():
    for n in range(1, 7):
        trees = list(ordered_trees(n))
        assert len(trees) == math.comb(2 * n, n) // (n + 1)
        assert len(set(trees)) == len(trees)


@pytest.mark.parametrize("max_depth", [None, 2, 3])
def test_dp_matches_brute_force(max_depth):
    a = [0.45, 0.3, 0.1]
    for n in range(1, 8):
        brute = max(positional_value(t, a) for t in ordered_trees(n, max_depth) if t.slot.max() < len(a))
        value, tree = sequoia_positional_dp(a, n, max_depth)
        assert value == pytest.approx(brute, abs=1e-12)
        assert positional_value(tree, a) == pytest.approx(value, abs=1e-12)
        assert tree.size == n and (max_depth is None or tree.max_depth <= max_depth)


def test_dp_shapes_and_bad_input():
    value, tree = sequoia_positional_dp([1.0], 5)
    assert tree == DraftTree.from_branching([1] * 5) and value == pytest.approx(6.0)
    assert sequoia_positional_dp([1.0], 5)[1] == tree
    with pytest.raises(ValueError, match="accept_probs"):
        sequoia_positional_dp([0.8, 0.5], 3)
    with pytest.raises(ValueError, match="n_nodes"):
        sequoia_positional_dp([0.5], 0)


def test_positional_vector_exact_vs_sampled():
    # 5 standard errors per entry, fixed seed
    chain = st.DecodingChain.random(5, concentration=0.5, rng=1)
    exact = positional_vector(chain, 4)
    n = 20000
    sampled = positional_vector(chain, 4, n_samples=n, rng=0)
    se = np.sqrt(exact * (1 - exact) / n)
    assert np.all(np.abs(sampled - exact) <= 5 * se)


def test_assumption_is_exact_for_stars_and_search_beats_dp():
    chain = st.DecodingChain.random(4, concentration=0.5, rng=3)
    a = positional_vector(chain, 4)
    star = DraftTree.from_branching([3])
    assert exact_tree_value(chain, star) == pytest.approx(positional_value(star, a), abs=1e-12)
    for n in (3, 5):
        pred, tree = sequoia_positional_dp(a, n)
        best, _ = optimal_tree_search(chain, n)
        assert best >= exact_tree_value(chain, tree) - 1e-12


def test_exact_tree_value_matches_protocol_with_stationary_start():
    chain = st.DecodingChain.random(3, rng=5)
    from spectheory.trees import stationary_law, tree_round_law

    pi = stationary_law(chain)
    np.testing.assert_allclose(pi @ chain.target, pi, atol=1e-12)
    tree = DraftTree.from_branching([2, 1])
    law = tree_round_law(chain, tree, "tree_rrs_wo")
    assert exact_tree_value(chain, tree, states=pi) == pytest.approx(1 + pi @ law @ np.arange(3))

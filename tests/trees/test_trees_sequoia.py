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
    positional_vector,
    sequoia_positional_dp,
)
from spectheory.trees.sequoia import ordered_trees, positional_value


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
        depth = None if max_depth is None else max_depth + 1
        value, tree = sequoia_positional_dp(a, tree_size=n + 1, tree_depth=depth)
        assert value == pytest.approx(brute, abs=1e-12)
        assert positional_value(tree, a) == pytest.approx(value, abs=1e-12)
        assert tree.size == n and (max_depth is None or tree.max_depth <= max_depth)


def test_dp_shapes_and_bad_input():
    value, tree = sequoia_positional_dp([1.0], tree_size=6)
    assert tree == DraftTree.from_branching([1] * 5) and value == pytest.approx(6.0)
    assert sequoia_positional_dp([1.0], tree_size=6)[1] == tree
    with pytest.raises(ValueError, match="accept_probs"):
        sequoia_positional_dp([0.8, 0.5], tree_size=4)
    with pytest.raises(ValueError, match="tree_size"):
        sequoia_positional_dp([0.5], tree_size=1)
    with pytest.raises(ValueError, match="tree_depth"):
        sequoia_positional_dp([0.5], tree_size=3, tree_depth=1)
    with pytest.raises(ValueError, match="tree_size: required"):
        sequoia_positional_dp([0.5])
    with pytest.raises(TypeError):  # the old positional counting (root excluded) is gone
        sequoia_positional_dp([0.5], 3, 2)


def test_root_included_counting():
    new = sequoia_positional_dp([0.5, 0.25, 0.1], tree_size=8, tree_depth=4)
    assert new[1].size == 7 and new[1].max_depth <= 3


def test_infeasible_budget_returns_the_full_tree():
    # 15 nodes, 5 children, depth 2 (root + one level): only the star of 5 fits
    a = [0.3, 0.2, 0.1, 0.1, 0.1]
    value, tree = sequoia_positional_dp(a, tree_size=15, tree_depth=2)
    assert tree == DraftTree.from_branching([5]) and value == pytest.approx(1.8)
    value, tree = sequoia_positional_dp([0.6, 0.4], tree_size=100, tree_depth=3)
    assert tree == DraftTree.from_branching([2, 2]) and value == pytest.approx(
        positional_value(tree, [0.6, 0.4])
    )


def _sequoia_reference(p, max_budget, max_depth):
    """Sequoia's ``tree_search.py`` recurrence, transcribed from their code (torch-free).

    Their indexing: ``p[0]`` unused, ``p[b]`` for child ``b``; ``m`` nodes and ``l`` levels,
    both with the root (``l = 1``: the root alone); ``T[m][l][b]`` is ``-inf`` when ``m``
    nodes do not fit. Returns ``results[m][l] = max_b T[m][l][b]``. Their split loop keeps
    a running best from ``-inf`` with a strict ``>``, so a ``nan`` (``0 * -inf``, a zero
    entry of ``p`` times a subtree that does not fit) is never taken.
    """
    max_branch = len(p) - 1
    T = np.full((max_budget + 1, max_depth + 1, max_branch + 1), -np.inf)
    for l in range(1, max_depth + 1):
        T[1][l][0] = 1.0
    with np.errstate(invalid="ignore"):
        for m in range(2, max_budget + 1):
            for l in range(2, max_depth + 1):
                T[m][l][1] = 1 + p[1] * T[m - 1][l - 1].max()
                for b in range(2, max_branch + 1):
                    best = -np.inf
                    for y in range(1, m):
                        value = T[y][l][b - 1] + p[b] * T[m - y][l - 1].max()
                        if value > best:
                            best = value
                    T[m][l][b] = best
    return T.max(axis=2)


@pytest.mark.parametrize(
    "a",
    [
        [0.62, 0.14, 0.06, 0.03],  # a decaying vector, as measured on real model pairs
        [0.3, 0.25, 0.2, 0.15, 0.05],
        [0.9],
        [0.5, 0.0, 0.2, 0.0],  # zero entries, as in Sequoia's own measured vector
    ],
)
def test_matches_sequoia_reference_code_with_root_included(a):
    # Sequoia's reference DP (tree_search.py) on the same acceptance vector, with the
    # paper's counting: budget m and depth l both include the root
    ref = _sequoia_reference([0.0, *a], 24, 6)
    for m in range(2, 25):
        for l in range(2, 7):
            value, tree = sequoia_positional_dp(a, tree_size=m, tree_depth=l)
            if np.isfinite(ref[m][l]):
                assert value == pytest.approx(ref[m][l], abs=1e-12)
                assert tree.size + 1 == m and tree.max_depth <= l - 1
            else:  # the budget does not fit: the full tree, Sequoia's largest finite entry
                cap = max(k for k in range(1, m) if np.isfinite(ref[k][l]))
                assert value == pytest.approx(ref[cap][l], abs=1e-12) and tree.size + 1 == cap
            assert positional_value(tree, a) == pytest.approx(value, abs=1e-12)


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
        pred, tree = sequoia_positional_dp(a, tree_size=n + 1)
        best, _ = optimal_tree_search(chain, n)
        assert best >= exact_tree_value(chain, tree) - 1e-12


def test_exact_tree_value_matches_protocol_with_stationary_start():
    chain = st.DecodingChain.random(3, rng=5)
    from spectheory.trees import tree_round_law
    from spectheory.trees.sequoia import stationary_law

    pi = stationary_law(chain)
    np.testing.assert_allclose(pi @ chain.target, pi, atol=1e-12)
    tree = DraftTree.from_branching([2, 1])
    law = tree_round_law(chain, tree, "tree_rrs_wo")
    assert exact_tree_value(chain, tree, states=pi) == pytest.approx(1 + pi @ law @ np.arange(3))

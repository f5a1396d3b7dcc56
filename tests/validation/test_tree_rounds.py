"""Full-horizon tree predictions beyond node-local exactness (spectheory.validation.tree_rounds).

- recursive rejection without replacement: node laws without expanding the last slot equal
  a brute-force enumeration of sibling orders (fractions), and the pruned version stays
  within its dropped mass;
- round emission weights: unbiased against the exact node-local prediction on the same
  target paths (paired differences, 5 SE) and, for traversal (not node-local), against the
  decoder's own target calls (5 SE). Fixed seeds; a false failure is about one in a million.
"""

import itertools
from fractions import Fraction

import numpy as np
import pytest

from spectheory.children.laws import node_laws
from spectheory.validation.tree_rounds import emission_dp, round_weights, wo_node_laws_pruned


def brute_wo(target, draft, k):
    """Exact A_j and R of recursive rejection without replacement by enumerating sibling orders."""
    V = len(target)
    A = [[Fraction(0)] * V for _ in range(k)]
    R = [Fraction(0)] * V
    for sib in itertools.permutations(range(V), min(k, V)):
        prob, mass = Fraction(1), Fraction(1)
        for y in sib:  # successive sampling without replacement
            prob *= draft[y] / mass if mass else 0
            mass -= draft[y]
        if prob == 0:
            continue
        r, removed, reach = list(target), set(), Fraction(1)
        for j, y in enumerate(sib):
            rest = 1 - sum(draft[z] for z in removed)
            s = [Fraction(0) if z in removed else draft[z] / rest for z in range(V)]
            a = min(Fraction(1), r[y] / s[y])
            A[j][y] += prob * reach * a
            reach *= 1 - a
            ex = [max(r[z] - s[z], Fraction(0)) for z in range(V)]
            Z = sum(ex)
            r = [e / Z for e in ex] if Z else r
            removed.add(y)
        for z in range(V):
            R[z] += prob * reach * r[z]
    return A, R


@pytest.mark.parametrize("k", [1, 2, 3])
def test_wo_node_laws_equal_enumeration(k):
    t = [Fraction(1, 2), Fraction(1, 4), Fraction(1, 8), Fraction(1, 8)]
    d = [Fraction(1, 8), Fraction(1, 2), Fraction(1, 4), Fraction(1, 8)]
    A, R = brute_wo(t, d, k)
    got_A, got_R = node_laws(np.array([t], float), np.array([d], float), k, "wo")
    np.testing.assert_allclose(got_A[:, 0], np.array(A, float), atol=1e-14)
    np.testing.assert_allclose(got_R[0], np.array(R, float), atol=1e-14)
    pa, pr, dropped = wo_node_laws_pruned(np.array([t], float), np.array([d], float), k, min_prob=0.0)
    np.testing.assert_allclose(pa[:, 0], np.array(A, float), atol=1e-14)
    assert dropped[0] == 0


def test_pruned_wo_within_dropped_mass():
    rng = np.random.default_rng(3)
    t, d = rng.dirichlet(np.ones(7) * 0.5, 9), rng.dirichlet(np.ones(7) * 0.5, 9)
    exact, _ = node_laws(t, d, 4, "wo")
    A, R, dropped = wo_node_laws_pruned(t, d, 4, min_prob=1e-2, chunk=4)
    assert dropped.max() > 0
    np.testing.assert_array_less(np.abs(exact - A).sum((0, 2)), dropped + 1e-12)
    np.testing.assert_allclose(A.sum(0) + R, t, atol=1e-12)  # lossless by construction


def test_round_weights_of_an_exactly_known_round():
    """Root with two children; the path's first token is child 2's: w(n, 1) = P(accept 2) f_2(x2) / p(x1 x2)."""
    from spectheory.trees import DraftTree

    tree = DraftTree.from_branching([2])
    tl = np.array([[[0.5, 0.5], [0.2, 0.8], [0.6, 0.4]]])
    acc = np.array([[0.1, 0.3, 0.6]])
    fin = np.array([[[0.0, 1.0], [0.2, 0.8], [0.6, 0.4]]])
    w = round_weights(tree, np.array([[-1, 0, 1]]), tl, acc, fin, np.array([[1, 0]]), np.array([4]))
    np.testing.assert_allclose(w, [[0.1 * 1.0 / 0.5, 0.6 * 0.6 / (0.5 * 0.6)]])
    w_end = round_weights(tree, np.array([[-1, 0, 1]]), tl, acc, fin, np.array([[1, 0]]), np.array([1]))
    np.testing.assert_allclose(w_end, [[0.1 * 1.0 / 0.5, 0.6 / 0.5]])  # horizon: nothing emitted after


torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def setup():
    from _torch_models import gpt

    from spectheory.validation.predict import path_statistics, sample_paths

    target, draft = gpt(2, n_layer=2, n_embd=16, vocab=8, scale=5.0), gpt(3, vocab=8, scale=5.0)
    prompts = np.array([[1, 2, 3], [4, 5, 6], [7, 0, 1], [2, 2, 5]])[np.arange(160) % 4]
    T = 5
    paths = sample_paths(target, prompts, T, seed=99)
    ps = path_statistics(target, draft, paths, 3, keep_laws=True)
    return target, draft, prompts, paths, ps, T


def _runner(target, draft, children, tree=None):
    from spectheory.decoder.tree_decode import tree_generate
    from spectheory.trees import DraftTree

    def run(rule, prompts, n, seed):
        t = tree if tree is not None else DraftTree.from_branching([1] * (n - 1))
        return tree_generate(target, draft, prompts, n, t, rule, seed=seed, children=children)

    return run


def test_emission_weights_unbiased_against_exact_node_local(setup):
    """Sampled trees (branching) and forced paths (single path) against the exact tables, paired."""
    from spectheory.trees import DraftTree
    from spectheory.validation.predict import mean_se
    from spectheory.validation.tree_decoding import draft_tables, tree_round_dp
    from spectheory.validation.tree_rounds import forced_path_weights, sampled_round_weights

    target, draft, _, paths, ps, T = setup
    tree = DraftTree.from_branching([2, 1])
    exact = tree_round_dp(tree, draft_tables(ps.target_laws, ps.draft_laws, paths[:, 3:], tree, "wo"), T)
    est = emission_dp(
        sampled_round_weights(_runner(target, draft, "wo", tree), "tree_rrs_wo", tree, paths, 3, T, seed=4), T
    )
    m, se = mean_se(est - exact["target_calls"])
    assert abs(m) < 5 * se, (m, se)
    path = DraftTree.from_branching([1, 1])
    exact = tree_round_dp(path, draft_tables(ps.target_laws, ps.draft_laws, paths[:, 3:], path, "iid"), T)
    w = forced_path_weights(
        _runner(target, draft, "iid"), "tree_rrs", 2, paths, 3, T, ps.target_laws, ps.draft_laws, seed=8
    )
    m, se = mean_se(emission_dp(w, T) - exact["target_calls"])
    assert abs(m) < 5 * se, (m, se)


def test_forced_path_traversal_matches_decoder(setup):
    from spectheory.decoder.tree_decode import tree_generate
    from spectheory.trees import DraftTree
    from spectheory.validation.predict import mean_se
    from spectheory.validation.tree_rounds import forced_path_weights

    target, draft, prompts, paths, ps, T = setup
    w = forced_path_weights(
        _runner(target, draft, "wo"), "traversal", 2, paths, 3, T, ps.target_laws, ps.draft_laws, seed=12
    )
    pm, pse = mean_se(emission_dp(w, T))
    res = tree_generate(
        target, draft, list(prompts), T, DraftTree.from_branching([1, 1]), "traversal", seed=21
    )
    mm, mse = mean_se(res.stats.target_calls.astype(float))
    assert abs(pm - mm) < 5 * np.hypot(pse, mse), (pm, mm)


def test_forced_branch_weights_unbiased_on_branching_trees(setup):
    """Importance-weighted forcing (without-replacement siblings): paired against the exact
    node-local prediction, and traversal against the decoder (5 SE, fixed seeds)."""
    from spectheory.decoder.tree_decode import tree_generate
    from spectheory.trees import DraftTree
    from spectheory.validation.predict import mean_se
    from spectheory.validation.tree_decoding import draft_tables, tree_round_dp
    from spectheory.validation.tree_forced import forced_tree_weights

    target, draft, prompts, paths, ps, T = setup
    tree = DraftTree.from_branching([3, 1])
    for v, children in (("tree_rrs_wo", "wo"), ("tree_rrs", "iid")):
        exact = tree_round_dp(
            tree, draft_tables(ps.target_laws, ps.draft_laws, paths[:, 3:], tree, children), T
        )
        est = emission_dp(forced_tree_weights(target, draft, v, tree, paths, 3, T, seed=6), T)
        m, se = mean_se(est - exact["target_calls"])
        assert abs(m) < 5 * se, (v, m, se)
    est = emission_dp(forced_tree_weights(target, draft, "traversal", tree, paths, 3, T, seed=9), T)
    pm, pse = mean_se(est)
    res = tree_generate(target, draft, list(prompts), T, tree, "traversal", seed=23)
    mm, mse = mean_se(res.stats.target_calls.astype(float))
    assert abs(pm - mm) < 5 * np.hypot(pse, mse), (pm, mm)

"""The tree kit's optimum and efficiency checks, its child-policy declaration and random instances.

The tree optimum (spectheory.trees.optimum) is checked against independent numbers:
the multi-draft optimum's sort formula on stars, block verification on paths, and every
library rule's exact mean on random trees (none may exceed it). The kit's false-alarm rate is
alpha = 1e-6 per run; fixed seeds.
"""

import functools

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from spectheory.analysis.optimal_transport import optimal_multidraft_acceptance
from spectheory.testing import strategies as sst
from spectheory.testing.random_laws import LAW_KINDS
from spectheory.testing.trees import (
    TREE_GALLERY,
    assert_tree_verifier_lossless,
    assert_tree_verifier_optimal,
    check_tree_verifier,
    random_tree_instance,
    reference_tree_verify,
    tree_instances,
)
from spectheory.trees import DraftTree, tree_round_law
from spectheory.trees.optimum import tree_coupling_bound, tree_optimum
from spectheory.verifiers.block_exact import round_accepted_means
from spectheory.verifiers.optimal_coupling import optimal_coupling_lp, optimal_rule

RULES = {"iid": ["tree_rrs", "traversal_iid"], "wo": ["tree_rrs_wo", "traversal"], "topk": ["tree_topk"]}


@pytest.mark.parametrize("children", ["iid", "wo"])
@pytest.mark.parametrize("seed", range(6))
def test_coupling_bound_on_stars_is_the_multidraft_optimum(seed, children):
    V, k = 3 + seed % 2, 1 + seed % 3
    _, chain, _ = random_tree_instance(seed, V, 1, LAW_KINDS[seed % len(LAW_KINDS)])
    star = DraftTree.from_branching([k])
    t, d = chain.target[0], chain.draft[0]
    kk = k if children == "iid" else min(k, int(np.count_nonzero(d)))
    want = optimal_multidraft_acceptance(t, d, kk, replacement=children == "iid")
    assert tree_coupling_bound(chain, star, children) == pytest.approx(want, abs=1e-8)
    opt = tree_optimum(chain, star, children)
    assert (opt.kind, opt.attained) == ("multi-draft optimum", True)
    assert opt.value == pytest.approx(want, abs=1e-12)


def test_topk_star_bound_is_the_target_mass_of_the_top_tokens():
    _, chain, _ = random_tree_instance(3, 4, 1)
    top = np.argsort(-chain.draft[0], kind="stable")[:2]
    got = tree_optimum(chain, DraftTree.from_branching([2]), "topk").value
    assert got == pytest.approx(chain.target[0, top].sum(), abs=1e-8)


def test_paths_use_block_verification_below_the_coupling_bound():
    _, chain, path = next(i for i in tree_instances() if i[0] == "near, [1, 1]")
    opt = tree_optimum(chain, path, "iid")
    assert opt.kind == "block verification"
    assert opt.value == pytest.approx(float(round_accepted_means(chain, 0, 2)[0][0]), abs=1e-12)
    assert opt.value < tree_coupling_bound(chain, path) - 1e-3  # the coupling sees off-path target mass


@pytest.mark.parametrize("seed", range(12))
def test_no_library_rule_exceeds_the_optimum(seed):
    name, chain, tree = random_tree_instance(
        seed, 2 + seed % 3, 1 + seed % 4, LAW_KINDS[seed % len(LAW_KINDS)]
    )
    for children, rules in RULES.items():
        opt = tree_optimum(chain, tree, children)
        for rule in rules:
            value = float(tree_round_law(chain, tree, rule)[0] @ np.arange(tree.max_depth + 1))
            assert value <= opt.value + 1e-8, (name, children, rule)
        assert opt.value <= tree_coupling_bound(chain, tree, children) + 1e-7


def _optimal_star_verify(tree, tokens, target_laws, draft_laws, rng):
    """The LP-optimal multi-draft verifier on a star tree (every row starts in one state)."""
    k = tree.size
    cp = optimal_coupling_lp(target_laws[0, 0], draft_laws[0, 0], k)
    accepted, y = optimal_rule(cp, tokens[:, 1:], rng.random(tokens.shape[0]))
    hit = tokens[:, 1:] == y[:, None]
    node = np.where(accepted, 1 + np.argmax(hit, axis=1), 0)
    bonus = np.array([rng.choice(target_laws.shape[2], p=target_laws[r, c]) for r, c in enumerate(node)])
    return node, np.where(accepted, bonus, y)


def test_the_multidraft_optimum_is_attained_and_not_flagged():
    stars = [i for i in tree_instances() if i[2].max_depth == 1]
    report = assert_tree_verifier_optimal(_optimal_star_verify, "iid", n_samples=6000, rng=0, instances=stars)
    for row in report.rows:
        assert row["optimum_kind"] == "multi-draft optimum"
        assert abs(row["accepted"] - row["optimum"]) < 5 * row["accepted_se"]
        assert row["optimum"] > max(row["reference_accepted"].values()) + 0.05  # RRS is below it


def test_children_each_against_target_out_accepts_the_multidraft_optimum():
    verify, children = TREE_GALLERY["children_each_against_target"]
    report = check_tree_verifier(verify, children, n_samples=2000, rng=1)
    assert "above_optimum" in report.failed
    assert "cannot be lossless" in str(report) and "multi-draft optimum" in str(report)


def test_lossless_but_wasteful_tree_verifier_fails_efficiency_only():
    def never_accept(tree, tokens, target_laws, draft_laws, rng):  # lossless: the root's target draw
        return np.zeros(tokens.shape[0], dtype=np.int64), np.array(
            [rng.choice(target_laws.shape[2], p=row) for row in target_laws[:, 0]]
        )

    assert check_tree_verifier(never_accept, "iid", n_samples=1500, rng=0).failed == ["mean_accepted"]
    assert_tree_verifier_lossless(never_accept, "iid", n_samples=1500, rng=0)


def test_children_declared_by_the_verifier_and_distinct_alias():
    ref = reference_tree_verify("traversal")  # declares WithoutReplacement children
    a = check_tree_verifier(ref, n_samples=400, rng=5)
    b = check_tree_verifier(functools.partial(ref), "distinct", n_samples=400, rng=5)
    assert a.passed and [r["p_value"] for r in a.rows] == [r["p_value"] for r in b.rows]
    assert a.rows[0]["reference_accepted"].keys() == {"traversal", "tree_rrs_wo"}
    # drafted i.i.d., a distinct-children rule sees duplicates it was not built for
    assert not check_tree_verifier(ref, "iid", n_samples=3000, rng=5).passed


@pytest.mark.parametrize("seed", range(4))
def test_references_pass_random_instances(seed):
    insts = [
        random_tree_instance(seed, 3, n, kind) for n, kind in [(2, "zeros"), (3, "peaked"), (4, "one_hot")]
    ]
    for rule in ("tree_rrs", "traversal", "tree_topk"):
        report = check_tree_verifier(reference_tree_verify(rule), n_samples=800, rng=seed, instances=insts)
        assert report.passed, str(report)


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(sst.tree_kit_instances(max_nodes=3))
def test_hypothesis_tree_instances_pass_the_reference(inst):
    assert check_tree_verifier(
        reference_tree_verify("tree_rrs_wo"), n_samples=300, rng=0, instances=[inst]
    ).passed


def test_random_tree_instance_is_seeded_and_checked():
    a, b = random_tree_instance(7, 3, 3, "tiny"), random_tree_instance(7, 3, 3, "tiny")
    assert a[0] == b[0] and np.array_equal(a[1].target, b[1].target) and a[2] == b[2]
    with pytest.raises(ValueError, match="kind"):
        random_tree_instance(0, 3, 3, "nope")
    with pytest.raises(ValueError, match="vocab_size"):
        random_tree_instance(0, 1, 3)


def test_tree_instances_with_exact_ties():
    name, chain, tree = random_tree_instance(2, 3, 3, "ties")
    ratio = chain.target / chain.draft
    assert np.all(np.sum(ratio == 1.0, axis=1) == 1)  # V = 3: one exact tie per row, one swapped pair
    assert check_tree_verifier(
        reference_tree_verify("traversal"), n_samples=800, rng=0, instances=[(name, chain, tree)]
    ).passed


@pytest.mark.parametrize(
    "children, rrs, traversal, rrs_wins",
    [
        ("iid", "tree_rrs", "traversal_iid", (11, 2, 4, "peaked")),
        ("wo", "tree_rrs_wo", "traversal", (8, 2, 5, "dirichlet")),
    ],
)
def test_neither_library_rule_dominates_on_every_tree(children, rrs, traversal, rrs_wins):
    """Why ``mean_accepted`` compares with the weaker of the two rules (docs/testing_kit.md):
    traversal accepts more on most random trees, recursive rejection on some."""

    def means(inst):
        _, chain, tree = inst
        return [
            float(tree_round_law(chain, tree, r)[0] @ np.arange(tree.max_depth + 1)) for r in (rrs, traversal)
        ]

    a, b = means(random_tree_instance(1, 2, 2, "dirichlet"))
    assert b > a + 1e-3
    a, b = means(random_tree_instance(*rrs_wins))
    assert a > b + 1e-3

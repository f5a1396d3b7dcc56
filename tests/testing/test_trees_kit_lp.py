"""The lossless tree optimum on general trees (spectheory.trees.tree_lp) and its use by the tree kit.

Independent checks: the closed forms on stars (multi-draft optimum, a sort) and paths (block
verification); every library tree rule's exact mean (none may exceed it); the LP's plan is
lossless, checked exactly here from the target law of every sequence; the certificate is a
dual-feasible point in Fractions. Kit runs use fixed seeds (deterministic); Monte Carlo
comparisons use 5 standard errors.
"""

import itertools
from fractions import Fraction

import numpy as np
import pytest

from spectheory.analysis.optimal_transport import optimal_multidraft_acceptance
from spectheory.testing.random_laws import LAW_KINDS
from spectheory.testing.tree_plans import coupling_plan_verifier, plan_verifier
from spectheory.testing.trees import (
    TREE_KINDS,
    check_tree_verifier,
    random_tree_instance,
    reference_tree_verify,
)
from spectheory.trees import DraftTree, tree_round_law
from spectheory.trees.optimum import tree_coupling_bound, tree_optimum
from spectheory.trees.tree_lp import lossless_tree_optimum
from spectheory.verifiers.block_exact import round_accepted_means

RULES = {"iid": ["tree_rrs", "traversal_iid"], "wo": ["tree_rrs_wo", "traversal"], "topk": ["tree_topk"]}
#: the random instance whose coupling bound lies furthest above the lossless optimum (in the
#: test's standard deviations) among seeds 0..24, V = 2, 3, 3..5 nodes, every law kind
WIDE_GAP = (20, 2, 4, "dirichlet")


def _general(seed, V, n, kind):
    for s in itertools.count(seed):
        inst = random_tree_instance(s, V, n, kind)
        tree = inst[2]
        if tree.max_depth > 1 and tree.size > tree.max_depth:
            return inst


def _seq_prob(chain, state, toks):
    w = 1.0
    for t in toks:
        w *= chain.target[state, t]
        state = chain.next_state[state, t]
    return w, state


def _emitted_law_error(chain, tree, opt):
    """Largest |P(z) - law of the plan's emissions continued by the target| over z of D + 1 tokens."""
    V, D = chain.vocab_size, tree.max_depth
    law = {z: 0.0 for z in itertools.product(range(V), repeat=D + 1)}
    for (_, e), w in opt.plan.items():
        _, s = _seq_prob(chain, 0, e)
        for rest in itertools.product(range(V), repeat=D + 1 - len(e)):
            law[e + rest] += w * _seq_prob(chain, s, rest)[0]
    return max(abs(law[z] - _seq_prob(chain, 0, z)[0]) for z in law)


@pytest.mark.parametrize("children", ["iid", "wo", "topk"])
@pytest.mark.parametrize("seed", range(4))
def test_the_lp_is_the_closed_form_on_stars_and_paths(seed, children):
    _, chain, _ = random_tree_instance(seed, 3, 1, LAW_KINDS[seed % len(LAW_KINDS)])
    star = DraftTree.from_branching([1 + seed % 3])
    lp = lossless_tree_optimum(chain, star, children)
    assert lp.value == pytest.approx(tree_optimum(chain, star, children).value, abs=1e-8)
    if children == "iid":
        want = optimal_multidraft_acceptance(chain.target[0], chain.draft[0], star.size, replacement=True)
        assert lp.value == pytest.approx(want, abs=1e-8)
        path = DraftTree.from_branching([1, 1, 1][: 2 + seed % 2])
        block = float(round_accepted_means(chain, 0, path.size)[0][0])
        assert lossless_tree_optimum(chain, path).value == pytest.approx(block, abs=1e-8)


@pytest.mark.parametrize("seed", range(8))
def test_general_trees_lie_between_the_library_rules_and_the_coupling_bound(seed):
    _, chain, tree = _general(seed, 2 + seed % 2, 3 + seed % 3, TREE_KINDS[seed % len(TREE_KINDS)])
    for children, rules in RULES.items():
        lp = lossless_tree_optimum(chain, tree, children)
        assert abs(float(lp.bound) - lp.value) < 1e-9
        for rule in rules:
            value = float(tree_round_law(chain, tree, rule)[0] @ np.arange(tree.max_depth + 1))
            assert value <= lp.bound + 1e-9, (children, rule)
        assert lp.bound <= tree_coupling_bound(chain, tree, children) + 1e-7
        opt = tree_optimum(chain, tree, children)
        assert (opt.kind, opt.attained, opt.value) == ("lossless tree optimum", True, float(lp.bound))


@pytest.mark.parametrize("seed", range(4))
def test_the_plan_is_lossless_exactly_and_attains_the_optimum(seed):
    _, chain, tree = _general(seed, 2 + seed % 2, 3 + seed % 2, "dirichlet")
    lp = lossless_tree_optimum(chain, tree, "iid")
    assert _emitted_law_error(chain, tree, lp) < 1e-7
    mass = sum(lp.plan.values())
    accepted = sum(w * (len(e) - 1) for (_, e), w in lp.plan.items())
    assert mass == pytest.approx(1.0, abs=1e-9) and accepted == pytest.approx(lp.value, abs=1e-7)


def test_the_certificate_is_exact():
    _, chain, tree = _general(1, 3, 4, "zeros")
    lp = lossless_tree_optimum(chain, tree, "wo", exact=True)
    assert isinstance(lp.bound, Fraction)
    assert abs(float(lp.bound) - lp.value) < 1e-9
    assert lp.bound < Fraction(tree_coupling_bound(chain, tree, "wo"))


def test_too_large_and_bad_arguments_are_refused(monkeypatch):
    import spectheory.trees.tree_lp as tree_lp

    _, chain, tree = _general(0, 3, 4, "dirichlet")
    with pytest.raises(ValueError, match="start"):
        lossless_tree_optimum(chain, tree, start=7)
    monkeypatch.setattr(tree_lp, "MAX_TREE_LP_VARIABLES", 10)
    with pytest.raises(ValueError, match="tree: the plan exceeds"):
        lossless_tree_optimum(chain, tree)
    assert tree_optimum(chain, tree).kind == "coupling bound"  # the fallback


def test_the_plan_verifier_passes_the_kit_at_the_optimum():
    inst = random_tree_instance(*WIDE_GAP)
    _, chain, tree = inst
    lp = lossless_tree_optimum(chain, tree)
    report = check_tree_verifier(plan_verifier(lp, tree), "iid", n_samples=3000, rng=2, instances=[inst])
    assert report.passed, str(report)
    row = report.rows[0]
    assert row["optimum_kind"] == "lossless tree optimum"
    assert abs(row["accepted"] - lp.value) < 5 * row["accepted_se"]


def test_following_the_coupling_plan_out_accepts_the_lossless_optimum():
    inst = random_tree_instance(*WIDE_GAP)
    _, chain, tree = inst
    bound = tree_coupling_bound(chain, tree)
    assert bound > tree_optimum(chain, tree).value + 0.25
    report = check_tree_verifier(
        coupling_plan_verifier(chain, tree), "iid", n_samples=2000, rng=3, instances=[inst]
    )
    assert "above_optimum" in report.failed
    assert "accepts more than the lossless optimum (lossless tree optimum): cannot be lossless" in str(report)
    row = report.rows[0]
    assert row["accepted"] < bound + 5 * row["accepted_se"]  # not above the coupling bound


@pytest.mark.parametrize("seed", range(3))
def test_references_are_never_above_the_lossless_optimum(seed):
    insts = [_general(10 * seed + k, 2 + k % 2, 3 + k % 3, TREE_KINDS[k % len(TREE_KINDS)]) for k in range(3)]
    for rule, children in (("tree_rrs", "iid"), ("traversal", "wo"), ("tree_topk", "topk")):
        report = check_tree_verifier(
            reference_tree_verify(rule), children, n_samples=1500, rng=seed, instances=insts
        )
        assert "above_optimum" not in report.failed and report.passed, str(report)
        assert all(r["optimum_kind"] == "lossless tree optimum" for r in report.rows)

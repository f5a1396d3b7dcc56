"""The tree-verifier conformance kit: correct verifiers pass, the gallery's bugs are caught.

The kit's false-alarm rate is alpha = 1e-6 per run (chi-square on the completed output law,
Bonferroni over instances); fixed seeds.
"""

import pytest

from spectheory.testing.trees import (
    TREE_GALLERY,
    assert_tree_verifier_lossless,
    check_tree_verifier,
    reference_tree_verify,
)
from spectheory.verifiers import get_verifier, list_verifiers


@pytest.mark.parametrize("name", list_verifiers(trees=True))
def test_library_tree_verifiers_pass(name):
    v = get_verifier(name)
    report = assert_tree_verifier_lossless(reference_tree_verify(name), v.children, n_samples=4000, rng=1)
    for row in report.rows:  # its own exact mean accepted length, at 5 SE
        if name in row["reference_accepted"]:
            assert abs(row["accepted"] - row["reference_accepted"][name]) <= 5 * row["accepted_se"] + 1e-12


def test_correction_from_target_is_caught():
    verify, children = TREE_GALLERY["correction_from_target"]
    assert not check_tree_verifier(verify, children, n_samples=800, rng=2).passed


@pytest.mark.slow
@pytest.mark.parametrize("bug", sorted(TREE_GALLERY))
def test_gallery_bugs_are_caught(bug):
    verify, children = TREE_GALLERY[bug]
    report = check_tree_verifier(verify, children, n_samples=5000, rng=1)
    assert not report.passed, str(report)


def test_bad_child_policy():
    with pytest.raises(ValueError, match="children"):
        check_tree_verifier(reference_tree_verify("tree_rrs"), children="nope")


def _wrapped(transform):
    ref = reference_tree_verify("traversal")

    def verify(tree, tokens, target_laws, draft_laws, rng):
        node, tok = ref(tree, tokens, target_laws, draft_laws, rng)
        return transform(node, tok, rng, target_laws.shape[-1])

    return verify


def test_tree_exact_checks_pass_references_and_catch_bugs():
    import numpy as np

    ok = check_tree_verifier(reference_tree_verify("traversal"), "wo", n_samples=500, rng=0)
    assert ok.passed and ok.failed == [] and not any(r["note"] for r in ok.rows)

    def overflow_at_one(node, tok, rng, V):  # an inverse CDF that runs past V at u -> 1
        return node, np.where(rng.random(tok.shape) > 1 - 1e-12, V, tok)

    assert (
        "forced_uniforms" in check_tree_verifier(_wrapped(overflow_at_one), "wo", n_samples=200, rng=0).failed
    )

    def global_state(node, tok, rng, V):
        np.random.random()  # noqa: NPY002 - the deliberate bug: a draw outside the kit's rng
        return node, tok

    report = check_tree_verifier(_wrapped(global_state), "wo", n_samples=200, rng=0)
    assert report.failed == ["randomness"] and "numpy's global RandomState" in str(report)

    ref = reference_tree_verify("traversal")

    def unseeded(tree, tokens, target_laws, draft_laws, rng):  # fresh entropy: not reproducible
        return ref(tree, tokens, target_laws, draft_laws, np.random.default_rng())

    assert check_tree_verifier(unseeded, "wo", n_samples=200, rng=0).failed == ["determinism"]

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


def test_policy_keyword_is_deprecated_and_means_children():
    ref = check_tree_verifier(reference_tree_verify("tree_rrs_wo"), children="wo", n_samples=300, rng=4)
    with pytest.warns(DeprecationWarning, match="children="):
        old = check_tree_verifier(reference_tree_verify("tree_rrs_wo"), policy="wo", n_samples=300, rng=4)
    assert [r["p_value"] for r in old.rows] == [r["p_value"] for r in ref.rows]

"""The opt-in family of exact ties: the default run is unchanged, references pass, ties are exact."""

from fractions import Fraction

import numpy as np
import pytest

from spectheory.testing import check_verifier, reference_verify
from spectheory.testing.gallery_engines import longest_joint_ratio_prefix
from spectheory.testing.instances import FAMILIES, OPT_IN_FAMILIES, make_instance


def test_ties_are_opt_in():
    assert "ties" in OPT_IN_FAMILIES and "ties" not in FAMILIES
    assert check_verifier(reference_verify, n_samples=50).config["families"] == list(FAMILIES)
    with pytest.raises(ValueError, match="families"):
        check_verifier(reference_verify, families=["tie"], n_samples=10)


@pytest.mark.parametrize("seed", range(4))
def test_ties_are_exact(seed):
    inst = make_instance("ties", 4, 2, seed)
    t, d = inst.target[0, 0], inst.draft[0, 0]
    assert t.sum() == 1.0 and d.sum() == 1.0 and np.all(t * 64 == np.round(t * 64))
    assert int(np.sum(t == d)) == 2  # p/q exactly 1 on the two tokens not swapped
    a, b = np.flatnonzero(t != d)
    joint = Fraction(t[a]) / Fraction(d[a]) * (Fraction(t[b]) / Fraction(d[b]))
    assert joint == 1  # a block drafting a then b has joint ratio exactly 1


@pytest.mark.parametrize("verify", [reference_verify, "block", "token"])
def test_references_pass_on_ties(verify):
    assert check_verifier(verify, families=["ties"], vocab_sizes=(2, 3, 5), n_samples=1000, rng=2).passed


def test_sequence_level_rule_is_flagged_on_ties():
    report = check_verifier(
        longest_joint_ratio_prefix, families=["ties"], vocab_sizes=(2, 3), n_samples=1000, rng=2
    )
    assert not report.passed

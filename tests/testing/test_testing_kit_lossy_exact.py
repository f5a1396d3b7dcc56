"""Declared-lossy rules with a closed form: the exact TV of the output law, checked against sampling."""

from fractions import Fraction

import numpy as np
import pytest

from spectheory.testing import check_verifier, make_instance
from spectheory.testing.exact_loss import exact_output_law, exact_output_tv
from spectheory.verifiers import get_verifier, list_verifiers
from spectheory.verifiers.gbv import GBV_K2
from spectheory.verifiers.gls import GLS_K2
from spectheory.verifiers.spechub_rounds import RRS_BINARY, SPECHUB_BINARY
from spectheory.verifiers.tli import TLI


def rules_with_round_laws():
    """Every rule object of the package with a round law: the registered ones, then the others."""
    registered = [get_verifier(n) for n in list_verifiers() if get_verifier(n).has_round_law]
    return registered + [GBV_K2, GLS_K2, SPECHUB_BINARY, RRS_BINARY, TLI]


def test_the_rules_with_a_round_law():
    names = [r.name for r in rules_with_round_laws()]
    assert set(names[:-5]) == {
        "token", "block", "hsd", "hsd_listing", "hsd_naive",
        "point_mass", "sample_match", "argmax_onehot", "argmax_soft",
    }  # fmt: skip
    assert not any(get_verifier(n).has_round_law for n in list_verifiers(trees=True))


@pytest.mark.parametrize("family", ["markov", "zeros", "ties", "sharper_draft"])
def test_lossless_rules_have_exactly_zero_tv(family):
    inst = make_instance(family, 3, 2, rng=4)
    for rule in ("token", "block", "hsd", "sample_match"):
        assert exact_output_tv(inst, rule) == Fraction(0), rule


def test_output_law_is_a_law_and_lossy_rules_are_sized():
    small = make_instance("markov", 3, 2, rng=0)
    for rule in rules_with_round_laws():
        law = exact_output_law(small, rule)
        assert sum(law.values()) == 1, rule
        assert all(len(y) == 3 for y in law)
    inst = make_instance("markov", 5, 3, rng=0)
    assert exact_output_tv(inst, "hsd_listing") > Fraction(1, 100)
    assert exact_output_tv(inst, "argmax_soft") > Fraction(1, 10)
    # float64 sums agree with the exact rationals
    for rule in ("hsd_listing", "argmax_soft"):
        assert abs(exact_output_tv(inst, rule, exact=False) - float(exact_output_tv(inst, rule))) < 1e-12
    # a shorter prefix loses no more than the whole round
    assert exact_output_tv(inst, "hsd_listing", 2) <= exact_output_tv(inst, "hsd_listing")


def test_kit_reports_the_exact_tv_and_checks_it_against_the_sampler():
    report = check_verifier("hsd_listing", lossy=True, n_samples=4000, rng=3)
    assert report.config["protocol"]["lossy"] == "hsd_listing"
    assert report["loss"].passed and report.lossless_passed, str(report)
    values = [f.statistic for f in report["loss"].findings]
    assert max(values) > 0.005 and min(values) == 0.0
    assert "exact TV of 'hsd_listing'" in report["loss"].note
    # a sampler that is not the named rule: its measured TV excludes the exact one
    wrong = check_verifier("argmax_soft", lossy="hsd_listing", n_samples=4000, rng=3)
    assert not wrong["loss"].passed and "loss" in wrong.failed
    assert "the sampler is not 'hsd_listing'" in str(wrong["loss"].failing_instance)


def test_lossy_without_a_closed_form_is_a_monte_carlo_estimate():
    from spectheory.testing.gallery_engines import longest_joint_ratio_prefix

    report = check_verifier(longest_joint_ratio_prefix, lossy=True, n_samples=500, rng=0, progress=False)
    assert report.config["protocol"]["lossy"] is True
    assert all("exact TV" not in f.summary for f in report["loss"].findings)
    assert all(np.isfinite(f.statistic) for f in report["loss"].findings)


def test_lossy_arguments_are_checked():
    with pytest.raises(ValueError, match="lossy"):
        check_verifier("token", lossy="nope")
    with pytest.raises(ValueError, match="lossy"):
        check_verifier("token", lossy="token", stop_token=0)
    with pytest.raises(ValueError, match="rule"):
        exact_output_tv(make_instance("markov", 3, 1, rng=0), "nope")
    with pytest.raises(ValueError, match="'traversal' .* has no literal round law"):
        exact_output_tv(make_instance("markov", 3, 1, rng=0), "traversal")
    with pytest.raises(ValueError, match="lossy: .*'tree_rrs'"):
        check_verifier("token", lossy="tree_rrs")
    with pytest.raises(ValueError, match="length"):
        exact_output_law(make_instance("markov", 3, 1, rng=0), "token", 3)

"""Conformance kit, numpy side: protocols (bonus off, stop token, batches), whole samplers, field bugs, reports."""

import numpy as np
import pytest

from spectheory.testing import (
    as_batched,
    assert_sampler_lossless,
    assert_verifier_lossless,
    assert_verifier_optimal,
    check_sampler,
    check_verifier,
    make_instance,
    reference_verify,
    reference_verify_batch,
)
from spectheory.testing.gallery import GALLERY
from spectheory.testing.gallery_field import FIELD_BUGS, STOP_TOKEN, stop_aware
from spectheory.testing.gallery_samplers import SAMPLER_BUGS, make_sampler
from spectheory.testing.whole import ToyModel, process_logits

N = 1000  # samples per instance in these tests (the field bugs are flagged well below it)
NS = (
    500  # the same for whole samplers (Python drafting loops; both glue bugs are flagged at 500 in 5/5 seeds)
)
FEW = ("zeros", "equal", "markov", "tiny")  # a quick subset of families for the passing runs


def no_bonus(target_probs, draft_probs, draft_tokens, rng):
    """Correct verification without the bonus token (vLLM's disable_bonus_tokens=True)."""
    out = reference_verify(target_probs, draft_probs, draft_tokens, rng)
    return out[:-1] if len(out) == len(draft_tokens) + 1 else out


# ------------------------------------------------------------------------------ protocols
def test_bonus_off_is_judged_by_its_own_protocol():
    report = check_verifier(no_bonus, n_samples=N, rng=1, bonus=False, families=FEW)
    assert report.passed, str(report)
    # read as a bonus-on sampler, the last accepted draft looks like a residual token: the
    # efficiency checks misread it (the report from issue 10, "0.000 vs 0.158")
    misread = check_verifier(no_bonus, n_samples=300, rng=1, families=FEW)
    assert {"acceptance_rate", "mean_accepted"} & set(misread.failed) and misread.lossless_passed


def test_bonus_off_rejects_a_bonus_token():
    report = check_verifier(reference_verify, n_samples=200, rng=2, bonus=False)
    assert "output_format" in report.failed
    assert "bonus off" in report["output_format"].statistic


def test_bonus_attribute_of_the_verifier_sets_the_protocol():
    def verify(*a):
        return no_bonus(*a)

    verify.bonus = False
    assert check_verifier(verify, n_samples=500, rng=3).config["protocol"]["bonus"] is False


def test_stop_token_protocol_passes_a_stop_aware_verifier_and_its_optimum():
    report = assert_verifier_optimal(stop_aware, n_samples=N, rng=4, stop_token=STOP_TOKEN, families=FEW)
    assert report.config["protocol"]["stop_token"] == STOP_TOKEN


def test_bonus_after_stop_is_flagged_exactly():
    report = check_verifier(FIELD_BUGS["bonus_after_stop"][0], n_samples=300, rng=5, stop_token=STOP_TOKEN)
    assert "output_format" in report.failed
    assert "after an accepted stop token" in report["output_format"].statistic
    # without the stop protocol the same sampler is a correct standard verifier
    assert check_verifier(FIELD_BUGS["bonus_after_stop"][0], n_samples=N, rng=5, families=FEW).passed


def test_stop_token_out_of_range():
    with pytest.raises(ValueError, match="stop_token"):
        check_verifier(stop_aware, n_samples=10, stop_token=7)


def test_accepted_count_law_with_stop_matches_monte_carlo():
    # exact law vs the stop-aware verifier's counts, 5 standard errors (fixed seed)
    inst = make_instance("markov", 3, 3, rng=11)
    law = inst.accepted_count_law(stop_token=0)
    np.testing.assert_allclose(law.sum(), 1.0)
    rng = np.random.default_rng(12)
    tp, dp, x = inst.sample_drafts(20_000, rng)
    n_acc = []
    for i in range(x.shape[0]):
        out = stop_aware(tp[i], dp[i], x[i], rng)
        L = len(out)
        n_acc.append(L if (L <= 3 and out[-1] == x[i][L - 1] == 0) else L - 1)
    freq = np.bincount(n_acc, minlength=4) / len(n_acc)
    se = np.sqrt(law * (1 - law) / len(n_acc))
    assert np.all(np.abs(freq - law) <= 5 * se + 1e-12), (freq, law)


def test_rows_per_call_and_a_cross_row_bug():
    assert check_verifier(as_batched(reference_verify_batch), n_samples=N, rng=6, rows_per_call=7).passed

    def batch_min_accepted(tp, dp, x, rng):
        """Cuts every row at the batch's smallest accepted count (one count for the whole batch)."""
        out = reference_verify_batch(tp, dp, x, rng)
        lengths = np.where((out == -1).any(1), np.argmax(out == -1, axis=1), x.shape[1] + 1)
        m = int(lengths.min())
        cut = out.copy()
        cut[:, m:] = -1
        for i in np.flatnonzero(lengths > m):  # residual drawn from the target instead
            cut[i, m - 1] = min(
                int(np.searchsorted(np.cumsum(tp[i, m - 1]), rng.random(), side="right")), tp.shape[-1] - 1
            )
        return cut

    report = check_verifier(as_batched(batch_min_accepted), n_samples=N, rng=6, rows_per_call=8)
    assert not report.lossless_passed


# ----------------------------------------------------------------------- report wording
def test_assert_lossless_ignores_efficiency_and_optimal_does_not():
    wasteful = GALLERY["wasteful_lossless"][0]
    report = assert_verifier_lossless(wasteful, n_samples=N, rng=8, families=FEW)
    assert all(c.kind != "efficiency" for c in report.checks)
    with pytest.raises(AssertionError, match="acceptance_rate"):
        assert_verifier_optimal(wasteful, n_samples=N, rng=8, families=FEW)


def test_report_counts_instances_and_findings_apart():
    report = check_verifier(GALLERY["residual_wrong_sign"][0], n_samples=500, rng=9)
    stat = report["zero_probability"].statistic
    assert "of 9 instances violate it (" in stat and "findings)" in stat
    assert "tests fail on" in report["first_token_law"].statistic
    text = str(report)
    assert "torch draws routed" in text and "protocol bonus=True" in text


# -------------------------------------------------------------------------- field bugs
@pytest.mark.parametrize("name", ["renormalise_with_softmax", "bonus_after_stop"])
def test_field_bug_flagged(name):
    verify, desc, must_fail, reported_by, opts = FIELD_BUGS[name]
    report = check_verifier(verify, n_samples=N, rng=10, **opts)
    for check in must_fail:
        assert check in report.failed, f"{name}: {report.failed}"
    assert reported_by


# ------------------------------------------------------------------------ whole samplers
def test_process_logits_matches_hand_values():
    logits = np.log([0.1, 0.4, 0.2, 0.3])
    np.testing.assert_allclose(process_logits(logits, top_k=2), [0, 4 / 7, 0, 3 / 7])
    np.testing.assert_allclose(
        process_logits(logits, top_p=0.6), [0, 4 / 7, 0, 3 / 7]
    )  # 0.1+0.2 <= 0.4 dropped
    np.testing.assert_allclose(process_logits(logits, top_p=0.75), [0, 4 / 9, 2 / 9, 3 / 9])
    w = np.array([0.1, 0.4, 0.2, 0.3]) ** 2
    np.testing.assert_allclose(process_logits(logits, temperature=0.5), w / w.sum())


def test_toy_model_rows_follow_the_laws():
    inst = make_instance("markov", 3, 2, rng=0)
    model = ToyModel(inst.target)
    logits = model(np.array([inst.s0, 1, 2]))
    with np.errstate(divide="ignore"):
        np.testing.assert_allclose(logits[1], np.log(inst.target[1, 1]))
    assert model(np.zeros((4, 2), dtype=int)).shape == (4, 2, 3)


@pytest.mark.parametrize("opts", [{}, {"top_k": 2}, {"temperature": 0.7, "top_p": 0.8}])
def test_correct_sampler_passes(opts):
    assert_sampler_lossless(make_sampler(**opts), n_samples=300, rng=13, families=FEW, **opts)


def test_correct_greedy_sampler_passes():
    assert check_sampler(make_sampler(greedy=True), n_samples=300, rng=14, families=FEW).passed


@pytest.mark.parametrize("name", sorted(SAMPLER_BUGS))
def test_sampler_field_bug_flagged(name):
    sampler, desc, must_fail, reported_by, opts = SAMPLER_BUGS[name]
    report = check_sampler(sampler, n_samples=NS, rng=15, **opts)
    flagged = [c for c in must_fail if c in report.failed]  # flagged by at least one of them
    assert flagged, f"{name}: {report.failed}"
    assert report[flagged[0]].failing_instance


def test_check_sampler_catches_crash_and_bad_output():
    def crash(target, draft, prefix, k, rng):
        raise RuntimeError("boom")

    def floats(target, draft, prefix, k, rng):
        return np.array([0.5])

    assert "runs_without_error" in check_sampler(crash, n_samples=10).failed
    assert "output_format" in check_sampler(floats, n_samples=10).failed


@pytest.mark.parametrize(
    "kwargs, word",
    [({"temperature": -1.0}, "temperature"), ({"top_k": 0}, "top_k"), ({"top_p": 1.5}, "top_p")],
)
def test_check_sampler_bad_input(kwargs, word):
    with pytest.raises(ValueError, match=word):
        check_sampler(make_sampler(), n_samples=10, **kwargs)

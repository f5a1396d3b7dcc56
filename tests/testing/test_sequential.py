"""The sequential exercise (spectheory.testing.sequential): engine-style calls in sequence.

Reference samplers pass; every entry of gallery_sequential.SEQUENTIAL_BUGS is flagged by the
checks it lists while the one-call kit passes it (the premise of issue 40); the chain's exact law
agrees with spectheory.exact's sequence law.
"""

import numpy as np
import pytest

from spectheory.testing import check_sampler, check_verifier, reference_verify
from spectheory.testing.gallery_samplers import make_sampler
from spectheory.testing.gallery_sequential import SEQUENTIAL_BUGS
from spectheory.testing.ragged_format import reference_ragged_sampler
from spectheory.testing.sequential import (
    SEQUENTIAL_CHECKS,
    chain_law,
    check_sampler_sequential,
    check_sequential,
    fisher_serial,
    ragged_as_verifier,
    tiny_chain,
)

SMALL = dict(steps=16, batch=16, chain_steps=96)


@pytest.mark.parametrize("verify", ["token", "block", ragged_as_verifier(reference_ragged_sampler)])
def test_reference_samplers_pass(verify):
    report = check_sequential(verify, rng=3, **SMALL)
    assert report.passed, str(report)
    assert [c.name for c in report.checks] == list(SEQUENTIAL_CHECKS)
    assert report.config["sequential"]["steps"] == 16


@pytest.mark.parametrize("name", sorted(SEQUENTIAL_BUGS))
def test_repeating_randomness_flagged_one_call_kit_blind(name):
    factory, _, expected = SEQUENTIAL_BUGS[name]
    report = check_sequential(factory(), rng=1)  # the defaults: 64 calls of 32 rows
    assert set(expected) <= set(report.failed), str(report)
    assert "(64 calls of 32 rows)" in report["calls_independent"].statistic
    # every call's rows have fresh uniforms: the one-call kit cannot see it
    assert check_verifier(factory(), n_samples=2000, rng=1, efficiency=False).passed


def test_check_verifier_sequential_option():
    factory = SEQUENTIAL_BUGS["uniforms_cached"][0]
    report = check_verifier(factory(), n_samples=300, rng=0, sequential=(32, 32))
    assert "calls_independent" in report.failed and "first_token_law" not in report.failed
    assert report.config["sequential"]["batch"] == 32
    assert check_verifier("token", n_samples=300, rng=0, sequential=(16, 8)).passed
    with pytest.raises(ValueError, match="sequential"):
        check_verifier("token", n_samples=10, sequential=(16,))
    with pytest.raises(ValueError, match="lossless rule"):
        check_verifier("token", n_samples=10, greedy=True, sequential=True)


def test_per_round_verifier_is_called_in_sequence():
    calls = []

    def verify(tp, dp, x, rng):
        calls.append(1)
        return reference_verify(tp, dp, x, rng)

    report = check_sequential(
        verify, families=["markov"], vocab_sizes=[3], gammas=[2], steps=4, batch=3, chain_steps=5
    )
    assert len(calls) == 4 * 3 + 5 * 3 and set(report.failed) <= set(SEQUENTIAL_CHECKS)


@pytest.mark.slow
def test_whole_sampler_sequential():
    assert check_sampler_sequential(
        make_sampler(top_k=2), top_k=2, families=["markov", "zeros"], rng=0, **SMALL
    ).passed

    def keyed_on_prompt(
        target, draft, prefix, k, rng
    ):  # a stream keyed on the prompt token: the same every call
        return make_sampler()(target, draft, prefix, k, np.random.default_rng(int(prefix[0])))

    report = check_sampler(keyed_on_prompt, n_samples=50, families=["markov"], sequential=(64, 8), rng=0)
    assert "calls_independent" in report.failed and "sequence_across_calls" in report.failed


def test_whole_sampler_sequential_smoke():
    report = check_sampler_sequential(
        make_sampler(), families=["markov"], steps=8, batch=4, chain_steps=8, rng=0
    )
    assert report.passed and report.config["sequential"]["chain_steps"] == 8
    with pytest.raises(ValueError, match="temperature"):
        check_sampler_sequential(make_sampler(), temperature=0)


def test_chain_law_against_exact_sequence_law():
    import spectheory as st
    from spectheory.exact.sequence_laws import target_sequence_law

    P, Q = tiny_chain(5)
    chain = st.DecodingChain(P, Q, np.eye(3)[0])  # state = the last token, starting after token 0
    assert np.allclose(chain_law(P, 3), target_sequence_law(chain, 3), atol=1e-12)


def test_fisher_serial():
    rng = np.random.default_rng(0)
    a = rng.random(2000) < 0.6
    assert fisher_serial(a, rng.random(2000) < 0.6, 1e-6).passed
    assert not fisher_serial(a, a ^ (rng.random(2000) < 0.1), 1e-6).passed
    assert fisher_serial(np.ones(10, bool), a[:10], 1e-6).passed  # constant: nothing to test

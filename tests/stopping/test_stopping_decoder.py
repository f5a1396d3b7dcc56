"""Draft-length policies inside the real decoder: on torch models that are exactly a chain, the
decoder's measured target calls and draft steps agree with the exact evaluation (5 standard
errors, fixed seeds: a false failure has probability about 6e-7 per comparison)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spectheory as st  # noqa: E402
from spectheory.decoder.speculative import speculative_generate  # noqa: E402
from spectheory.stopping import (  # noqa: E402
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,  # noqa: E402
    RejectionThreshold,
    evaluate_policy,
)
from spectheory.stopping.runtime import chain_models  # noqa: E402

V, T, B = 4, 10, 1200
# draft top probabilities (0.35, 0.5, 0.43, 0.77), entropies (1.36, 0.96, 1.29, 0.77): the rules below
# stop in some states and not in others
CHAIN = st.DecodingChain.random(V, concentration=0.4, similarity=0.5, rng=48)
CHAIN0 = st.DecodingChain(CHAIN.target, CHAIN.draft, initial=np.eye(V)[0])  # prompts end in token 0
TARGET, DRAFT = chain_models(CHAIN)


@pytest.mark.parametrize(
    "policy",
    [
        FixedGamma(3),
        ConfidenceThreshold(0.45, max_depth=5),
        ConfidenceThreshold(0.3, max_depth=5, statistic="token"),
        EntropyRule(1.1, max_depth=5),
        HFSchedule(2, max_depth=5),
        HFSchedule(3, max_depth=5, confidence=0.45),
    ],
    ids=repr,
)
def test_decoder_with_policy_matches_exact_evaluation(policy):
    res = speculative_generate(TARGET, DRAFT, [[0]] * B, T, gamma=8, policy=policy, seed=123)
    exact = evaluate_policy(CHAIN0, policy, T)
    for name, value in (("target_calls", exact.target_calls), ("draft_tokens", exact.draft_tokens)):
        x = np.asarray(getattr(res.stats, name), dtype=np.float64)
        mean, se = x.mean(), x.std(ddof=1) / np.sqrt(x.size)
        assert abs(mean - value) <= 5 * se, (policy, name, mean, value, se)
    assert all(len(t) == T for t in res.tokens)


def test_fixed_gamma_policy_is_the_plain_decoder():
    kw = dict(prompts=[[0], [1, 2]] * 8, max_new_tokens=10, seed=5)
    a = speculative_generate(TARGET, DRAFT, gamma=3, **kw)
    b = speculative_generate(TARGET, DRAFT, gamma=8, policy=FixedGamma(3), **kw)
    assert all(np.array_equal(x, y) for x, y in zip(a.tokens, b.tokens))
    np.testing.assert_array_equal(a.stats.target_calls, b.stats.target_calls)
    np.testing.assert_array_equal(a.stats.draft_tokens, b.stats.draft_tokens)


def test_oracle_policy_is_not_runnable():
    with pytest.raises(ValueError, match="not runnable"):
        speculative_generate(TARGET, DRAFT, [[0]], 4, gamma=4, policy=RejectionThreshold(0.5))


@pytest.fixture(scope="module")
def path_inputs():
    """Per-position inputs along 1500 target paths of the chain models (one pass of each model)."""
    from spectheory.validation import sample_paths
    from spectheory.validation.policy_predict import policy_path_inputs

    return policy_path_inputs(TARGET, DRAFT, sample_paths(TARGET, [[0]] * 1500, T, seed=99), 1)


@pytest.mark.parametrize(
    "policy",
    [
        FixedGamma(3),
        ConfidenceThreshold(0.45, max_depth=5),
        ConfidenceThreshold(0.3, max_depth=5, statistic="token"),
        EntropyRule(1.1, max_depth=5),
        HFSchedule(2, max_depth=5),
    ],
    ids=repr,
)
def test_rao_blackwellised_prediction_on_chain_models_matches_exact(policy, path_inputs):
    """The torch side of the prediction (model passes along target-sampled paths) on models that are
    exactly a chain: the mean over paths of the exact conditional calls = evaluate_policy within 5 SE,
    and so is tokens per call with its delta-method SE."""
    from spectheory.validation.policy_predict import predict_policy

    pred = predict_policy(path_inputs, policy, gamma=8)
    exact = evaluate_policy(CHAIN0, policy, T)
    mean, se = pred["target_calls"]
    assert abs(mean - exact.target_calls) <= 5 * se, (policy, mean, exact.target_calls, se)
    tpc, tpc_se = pred["tokens_per_call"]
    assert abs(tpc - T / exact.target_calls) <= 5 * tpc_se, (policy, tpc, T / exact.target_calls, tpc_se)


def test_fixed_gamma_along_paths_is_the_fixed_gamma_validation():
    """policy_round_dp with FixedGamma = spectheory.validation.round_dp (the fixed-gamma
    Rao-Blackwellisation), to 1e-12 on arbitrary rejection probabilities."""
    from spectheory.stopping.along_paths import policy_round_dp
    from spectheory.validation import round_dp

    r = np.random.default_rng(0).random((50, 20)) ** 3
    for g in (1, 3, 8, 30):
        a, b = policy_round_dp(r, FixedGamma(g)), round_dp(r, g, True)
        for key in ("target_calls", "rejections", "counts"):
            np.testing.assert_allclose(a[key], b[key], rtol=1e-12, atol=1e-15, err_msg=f"{key}, gamma={g}")


@pytest.mark.parametrize("statistic", ["top", "token"])
def test_greedy_policy_reads_the_drafts_softmax_not_the_point_mass(statistic):
    """At temperature 0 the sampling law is a point mass (top and token probability 1): a
    confidence policy reads the draft's softmax instead, as HF's assistant confidence does. Every
    draft top probability here is below 0.99, so each round stops after its first draft; with
    threshold 0.3 no greedy token of a state is below it (0.35 is the smallest), so rounds run
    to the policy's depth."""
    prompts = [[0], [1], [2], [3]]
    low = ConfidenceThreshold(0.99, max_depth=5, statistic=statistic)
    res = speculative_generate(TARGET, DRAFT, prompts, 12, 5, temperature=0, policy=low)
    assert (res.stats.draft_tokens == res.stats.target_calls).all()
    high = ConfidenceThreshold(0.3, max_depth=5, statistic=statistic)
    res = speculative_generate(TARGET, DRAFT, prompts, 12, 5, temperature=0, policy=high)
    assert res.stats.draft_tokens.sum() > 2 * res.stats.target_calls.sum()

"""Path-conditional prediction of controllers (spectheory.stopping.coins_along_paths): on chain
paths its per-path means average to the exact values within 5 SE (fixed seeds), for flag,
count and schedule memories; rules whose drafts leave the path report NaN draft steps."""

import numpy as np
import pytest

import spectheory as st
from spectheory.montecarlo import sample_target
from spectheory.stopping import (
    AcceptanceRateK,
    ConfidenceThreshold,
    FixedGamma,
    HFSchedule,
    ROCThreshold,
    evaluate_policy,
)
from spectheory.stopping.along_paths import chain_path_inputs
from spectheory.stopping.coins_along_paths import controller_along_paths

V, T = 4, 10
CHAIN = st.DecodingChain.random(V, concentration=0.4, similarity=0.5, rng=48)
CHAIN0 = st.DecodingChain(CHAIN.target, CHAIN.draft, initial=np.eye(V)[0])


@pytest.fixture(scope="module")
def inputs():
    return chain_path_inputs(CHAIN0, sample_target(CHAIN0, T, 3000, rng=1), rejected_draws=2, rng=2)


@pytest.mark.parametrize(
    "policy",
    [FixedGamma(3), HFSchedule(2, max_depth=5), AcceptanceRateK(max_depth=5, window=1, min_history=1)],
    ids=repr,
)
def test_length_rules_match_exact_calls_and_draft_steps(policy, inputs):
    exact = evaluate_policy(CHAIN0, policy, T, 0.1)
    out = controller_along_paths(inputs, policy, 4, rng=0, cost=0.1)
    for key in ("target_calls", "draft_tokens"):
        v = out[key]
        se = v.std(ddof=1) / np.sqrt(v.size)
        assert abs(v.mean() - getattr(exact, key)) <= 5 * se, (policy, key, v.mean(), getattr(exact, key), se)
    np.testing.assert_allclose(out["time"], 0.1 * out["draft_tokens"] + out["target_calls"], rtol=1e-12)


def test_confidence_rule_calls_match_exact_and_drafts_are_nan(inputs):
    policy = ConfidenceThreshold(0.45, max_depth=5)
    exact = evaluate_policy(CHAIN0, policy, T)
    v = controller_along_paths(inputs, policy, 4, rng=0)["target_calls"]
    assert abs(v.mean() - exact.target_calls) <= 5 * v.std(ddof=1) / np.sqrt(v.size)
    assert np.isnan(controller_along_paths(inputs, policy, 1, rng=0)["draft_tokens"]).all()


def test_rejected_token_law_is_the_excess_of_the_draft():
    """rejected_prob draws y ~ (q - p)^+ / TV: on an i.i.d. chain the mean of q(y) is exact."""
    p, q = np.array([0.6, 0.3, 0.1]), np.array([0.2, 0.3, 0.5])
    chain = st.DecodingChain.iid(p, q)
    x = sample_target(chain, 3, 4000, rng=0)
    got = chain_path_inputs(chain, x, rejected_draws=5, rng=1)["rejected_prob"]
    assert got.shape == (4000, 3, 5)
    assert set(np.unique(got)) == {0.5}  # only token 2 has q > p


def test_roc_threshold_needs_the_rejected_probabilities(inputs):
    bare = {k: v for k, v in inputs.items() if k != "rejected_prob"}
    with pytest.raises(ValueError, match="rejected_prob"):
        controller_along_paths(bare, ROCThreshold(max_depth=5), 1, rng=0)
    with pytest.raises(ValueError, match="n_coins"):
        controller_along_paths(inputs, FixedGamma(2), 0, rng=0)

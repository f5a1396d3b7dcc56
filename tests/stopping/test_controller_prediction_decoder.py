"""The engines' online controllers in the real decoder vs their path-conditional prediction
(spectheory.validation.policy_predict.predict_controller): on torch models that are exactly a
chain, measured and predicted tokens per call and time per token agree within 5 combined SE
(both are Monte Carlo; fixed seeds)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spectheory as st  # noqa: E402
from spectheory.decoder.speculative import speculative_generate  # noqa: E402
from spectheory.stopping import AcceptanceRateK, EMASteps, HedgeGamma, ROCThreshold, UCBGamma  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402

V, T, B, C = 4, 12, 1000, 0.1
CHAIN = st.DecodingChain.random(V, concentration=0.4, similarity=0.5, rng=48)
TARGET, DRAFT = chain_models(CHAIN)


@pytest.fixture(scope="module")
def inputs():
    from spectheory.validation import sample_paths
    from spectheory.validation.policy_predict import policy_path_inputs

    paths = sample_paths(TARGET, [[0]] * 1500, T, seed=99)
    return policy_path_inputs(TARGET, DRAFT, paths, 1, rejected_draws=4, seed=7)


@pytest.mark.parametrize(
    "policy",
    [
        ROCThreshold(max_depth=5, min_samples=3),
        AcceptanceRateK(max_depth=5),
        EMASteps((1, 2, 4), warmup_batches=1, update_interval=1),
        UCBGamma((1, 2, 4), cost=C),
        HedgeGamma((1, 2, 4), cost=C),
    ],
    ids=repr,
)
def test_online_controller_prediction_matches_decoder(policy, inputs):
    from spectheory.validation.policy_predict import measured_rates, predict_controller

    pred = predict_controller(inputs, policy, c=C, gamma=8, n_coins=4, rng=3)
    res = speculative_generate(TARGET, DRAFT, [[0]] * B, T, gamma=8, policy=policy, seed=123)
    meas = measured_rates(res.stats.target_calls, res.stats.draft_tokens, T, c=C)
    keys = ["tokens_per_call"] + ([] if isinstance(policy, ROCThreshold) else ["time_per_token"])
    for key in keys:
        (a, sa), (b, sb) = pred[key], meas[key]
        assert abs(a - b) <= 5 * np.hypot(sa, sb), (policy, key, a, b, sa, sb)
    if isinstance(policy, ROCThreshold):
        assert np.isnan(pred["time_per_token"][0])

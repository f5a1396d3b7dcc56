"""The Rao-Blackwellised prediction of a draft-length policy along output paths
(spectheory.stopping.along_paths, docs/stopping.md section 9).

Unbiasedness, checked exactly: averaged over *every* target path with its probability, the
conditional expectations equal the exact evaluation (an independent backward recursion over
drafted paths) to 1e-12. Then the estimator itself: the mean over sampled target paths agrees
with the exact value within 5 standard errors (fixed seeds: a false failure has probability
about 6e-7 per comparison)."""

import itertools

import numpy as np
import pytest

import spectheory as st
from spectheory.montecarlo import sample_target
from spectheory.stopping import (
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    RejectionThreshold,
    evaluate_policy,
)
from spectheory.stopping.along_paths import chain_path_inputs, policy_round_dp, ratio_mean_se

V, T = 3, 5


def _start0(chain):
    return st.DecodingChain(chain.target, chain.draft, initial=np.eye(chain.n_states)[0])


CHAINS = {
    "homogeneous": _start0(st.DecodingChain.random(V, concentration=0.5, similarity=0.4, rng=61)),
    "inhomogeneous": _start0(st.DecodingChain.random(V, horizon=T, concentration=0.6, rng=62)),
}


def _policies(chain):
    top = np.median(chain.draft.max(-1))  # thresholds that stop in some states, not in others
    q = chain.draft
    ent = np.median(-(q * np.log(np.where(q > 0, q, 1.0))).sum(-1))
    return [
        FixedGamma(2),
        FixedGamma(7),
        ConfidenceThreshold(top, max_depth=4),
        ConfidenceThreshold(0.3, max_depth=4, statistic="token"),
        EntropyRule(ent, max_depth=4),
        HFSchedule(2, max_depth=4),
        HFSchedule(1, increase=1, decrease=2, max_depth=3, confidence=top),
    ]


def _all_paths(chain):
    """Every target path of length T with its probability, from state 0."""
    paths = np.array(list(itertools.product(range(V), repeat=T)), dtype=np.int64)
    prob = np.ones(len(paths))
    s = np.zeros(len(paths), dtype=np.int64)
    for n in range(T):
        law = chain.target[s] if chain.is_homogeneous else chain.target[n, s]
        prob *= law[np.arange(len(paths)), paths[:, n]]
        s = chain.next_state[s, paths[:, n]]
    return paths, prob


@pytest.mark.parametrize("name", list(CHAINS))
def test_average_over_all_target_paths_is_the_exact_value(name):
    chain = CHAINS[name]
    paths, prob = _all_paths(chain)
    np.testing.assert_allclose(prob.sum(), 1.0, rtol=1e-12)
    inp = chain_path_inputs(chain, paths)
    for policy in _policies(chain):
        dp = policy_round_dp(inp["reject"], policy, inp["top"], inp["entropy"], inp["token_prob"])
        exact = evaluate_policy(chain, policy, T)
        np.testing.assert_allclose(
            prob @ dp["target_calls"], exact.target_calls, rtol=1e-12, err_msg=repr(policy)
        )
        # every round ends with a rejection or all drafts accepted; every token is accepted, a residual or a bonus
        np.testing.assert_allclose(dp["rejections"] + dp["full_rounds"], dp["target_calls"], rtol=1e-12)
        np.testing.assert_allclose(dp["counts"].sum(1), dp["target_calls"], rtol=1e-12)
        assert np.all(dp["accepted"] + dp["rejections"] <= T + 1e-9)


def test_gamma_caps_the_draft_length():
    chain = CHAINS["homogeneous"]
    paths, prob = _all_paths(chain)
    inp = chain_path_inputs(chain, paths)
    dp = policy_round_dp(inp["reject"], ConfidenceThreshold(0.2, max_depth=6), inp["top"], gamma=2)
    exact = evaluate_policy(chain, ConfidenceThreshold(0.2, max_depth=2), T)
    np.testing.assert_allclose(prob @ dp["target_calls"], exact.target_calls, rtol=1e-12)


def test_sampled_paths_agree_with_exact_within_5_se():
    chain = _start0(st.DecodingChain.random(4, concentration=0.4, similarity=0.5, rng=48))
    horizon = 12
    inp = chain_path_inputs(chain, sample_target(chain, horizon, 3000, rng=5))
    for policy in [
        FixedGamma(3),
        ConfidenceThreshold(0.45, max_depth=5),
        EntropyRule(1.1, max_depth=5),
        HFSchedule(2, max_depth=5),
    ]:
        calls = policy_round_dp(inp["reject"], policy, inp["top"], inp["entropy"], inp["token_prob"])[
            "target_calls"
        ]
        exact = evaluate_policy(chain, policy, horizon).target_calls
        mean, se = calls.mean(), calls.std(ddof=1) / np.sqrt(calls.size)
        assert abs(mean - exact) <= 5 * se, (policy, mean, exact, se)
        r, r_se = ratio_mean_se(np.full(calls.size, horizon), calls)
        assert abs(r - horizon / exact) <= 5 * r_se, (policy, r, horizon / exact, r_se)


def test_never_rejected_paths_are_deterministic():
    out = policy_round_dp(np.zeros((2, 12)), HFSchedule(1, max_depth=8))
    # counter 1, 3, 5: rounds emit 2, 4, 6 tokens (as in the simulator's test)
    np.testing.assert_array_equal(out["target_calls"], [3.0, 3.0])
    out = policy_round_dp(np.ones((1, 4)), FixedGamma(3))  # every check rejected: one token per call
    np.testing.assert_array_equal(out["target_calls"], [4.0])
    np.testing.assert_array_equal(out["rejections"], [4.0])


def test_ratio_se_is_the_delta_method():
    rng = np.random.default_rng(3)
    a, b = rng.normal(10, 1, 400), rng.normal(4, 0.5, 400)
    r, se = ratio_mean_se(a, b)
    np.testing.assert_allclose(r, a.mean() / b.mean(), rtol=1e-12)
    # linearisation: SE of mean(a - r b) / mean(b)
    lin = (a - r * b) / b.mean()
    np.testing.assert_allclose(se, lin.std(ddof=1) / np.sqrt(a.size), rtol=1e-10)
    r, se = ratio_mean_se(np.full(5, 8.0), [2.0, 3.0, 4.0, 3.0, 3.0])
    np.testing.assert_allclose(se, 8.0 * np.std([2, 3, 4, 3, 3], ddof=1) / np.sqrt(5) / 9.0, rtol=1e-12)


def test_bad_input():
    with pytest.raises(ValueError, match="policy"):
        policy_round_dp(np.zeros((1, 3)), RejectionThreshold(0.5))
    with pytest.raises(ValueError, match="reject"):
        policy_round_dp(np.full((1, 3), 1.5), FixedGamma(2))
    with pytest.raises(ValueError, match="top"):
        policy_round_dp(np.zeros((1, 3)), ConfidenceThreshold(0.4))
    with pytest.raises(ValueError, match="top"):
        policy_round_dp(np.zeros((1, 3)), ConfidenceThreshold(0.4), top=np.zeros((1, 2)))

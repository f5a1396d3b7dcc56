"""Draft-length policies: exact evaluation against Monte Carlo (5 standard errors, fixed seeds:
a false failure has probability about 6e-7 per comparison)."""

import numpy as np
import pytest

import spectheory as st
from spectheory.stopping import (
    ConfidenceThreshold,
    Cost,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    RejectionThreshold,
    evaluate_policy,
    leviathan_policy,
    optimal_policy,
    simulate_policy,
)

T = 10
COST = Cost(0.15, target_call=lambda k: 1.0 + 0.05 * k)
CHAINS = {
    "random_V3": st.DecodingChain.random(3, concentration=0.5, similarity=0.4, rng=31),
    "S5_V3": st.DecodingChain.random(3, n_states=5, concentration=0.4, rng=32),
    "inhomogeneous_V3": st.DecodingChain.random(3, horizon=T, concentration=0.6, rng=33),
}


def _policies(chain):
    return [
        FixedGamma(3),
        leviathan_policy(chain, T, COST, max_depth=6),
        ConfidenceThreshold(0.5, max_depth=5),
        ConfidenceThreshold(0.4, max_depth=5, statistic="token"),
        EntropyRule(0.8, max_depth=5),
        RejectionThreshold(0.4, max_depth=5),
        HFSchedule(2, max_depth=5),
        HFSchedule(3, max_depth=5, confidence=0.5),
        optimal_policy(chain, T, COST, max_depth=5).extra["policy"],
    ]


@pytest.mark.parametrize("name", list(CHAINS))
def test_exact_equals_monte_carlo_for_every_policy(name):
    chain = CHAINS[name]
    rng = np.random.default_rng(7 + len(name))
    for policy in _policies(chain):
        exact = evaluate_policy(chain, policy, T, COST)
        sim = simulate_policy(chain, policy, T, COST, n_runs=4000, rng=rng, progress=False)
        for stat, value in (
            ("target_calls", exact.target_calls),
            ("draft_tokens", exact.draft_tokens),
            ("target_time", exact.target_time),
            ("time", exact.time()),
        ):
            mean, se = sim.mean_se(stat)
            assert abs(mean - value) <= 5 * se + 1e-12, (name, policy, stat, mean, value, se)


def test_simulation_of_an_always_accepted_chain_is_deterministic():
    chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])
    sim = simulate_policy(chain, HFSchedule(1, max_depth=8), 12, 0.1, n_runs=20, rng=0)
    # counter 1, 3, 5: rounds emit 2, 4, 6 tokens
    assert set(sim.target_calls.tolist()) == {3} and set(sim.draft_tokens.tolist()) == {9}
    assert evaluate_policy(chain, HFSchedule(1, max_depth=8), 12, 0.1).target_calls == 3.0


@pytest.mark.parametrize(
    "policy",
    [
        FixedGamma(3),
        ConfidenceThreshold(0.5, max_depth=5),
        HFSchedule(2, max_depth=5),
        RejectionThreshold(0.4, max_depth=5),
    ],
    ids=repr,
)
def test_st_simulate_with_a_policy_is_simulate_policy(policy):
    """st.simulate(..., policy=) hands the call to the policy (montecarlo never imports stopping):
    the same draws as simulate_policy for the same rng, and the exact value within 5 SE."""
    chain = CHAINS["random_V3"]
    a = st.simulate(chain, T, policy=policy, n_runs=3000, rng=11, cost=COST, progress=False)
    b = simulate_policy(chain, policy, T, COST, n_runs=3000, rng=11, progress=False)
    for stat in ("target_calls", "draft_tokens", "target_time"):
        np.testing.assert_array_equal(getattr(a, stat), getattr(b, stat))
    exact = evaluate_policy(chain, policy, T, COST)
    for stat, value in (("target_calls", exact.target_calls), ("time", exact.time())):
        mean, se = a.mean_se(stat)
        assert abs(mean - value) <= 5 * se + 1e-12, (policy, stat, mean, value, se)


def test_st_simulate_policy_arguments():
    chain = CHAINS["random_V3"]
    with pytest.raises(ValueError, match="policy"):
        st.simulate(chain, T, gamma=3, policy=FixedGamma(3), n_runs=10)
    with pytest.raises(ValueError, match="policy"):
        st.simulate(chain, T, policy=FixedGamma(3), n_runs=10, verifier="block")
    with pytest.raises(ValueError, match="policy"):
        st.simulate(chain, T, policy=object(), n_runs=10)
    with pytest.raises(ValueError, match="cost"):
        st.simulate(chain, T, 3, 10, cost=0.1)
    assert st.simulate(chain, T, 3, 10, rng=0).gamma == 3  # the plain call is unchanged

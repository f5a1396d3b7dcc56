"""Draft-length policies: exact evaluation against Monte Carlo (5 standard errors, fixed seeds:
a false failure has probability about 6e-7 per comparison)."""

import numpy as np
import pytest

import spectheory as st
from spectheory.cost import Cost
from spectheory.stopping import (
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    PolicyRound,
    RejectionThreshold,
    evaluate_policy,
    leviathan_policy,
    optimal_policy,
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
        sim = st.simulate(chain, T, policy, 4000, rng=rng, cost=COST, progress=False)
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
    sim = st.simulate(chain, 12, HFSchedule(1, max_depth=8), 20, rng=0, cost=0.1)
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
def test_every_spelling_of_a_policy_round_draws_the_same(policy):
    """st.simulate(chain, T, policy), policy=policy and PolicyRound(policy) play the same
    PolicyRound through the one driver: the same runs for the same seed; and the exact value
    within 5 SE."""
    chain = CHAINS["random_V3"]
    a = st.simulate(chain, T, policy, 3000, rng=11, cost=COST, progress=False)
    b = st.simulate(chain, T, policy=policy, n_runs=3000, rng=11, cost=COST, progress=False)
    c = st.simulate(chain, T, PolicyRound(policy), 3000, rng=11, cost=COST, progress=False)
    for other in (b, c):
        for stat in ("target_calls", "draft_tokens", "target_time", "rejections", "accepted_counts"):
            np.testing.assert_array_equal(getattr(a, stat), getattr(other, stat))
    assert a.round == f"policy({policy.name})" and a.verifier == "token"
    exact = evaluate_policy(chain, policy, T, COST)
    for stat, value in (("target_calls", exact.target_calls), ("time", exact.time())):
        mean, se = a.mean_se(stat)
        assert abs(mean - value) <= 5 * se + 1e-12, (policy, stat, mean, value, se)


def test_policy_round_counts_like_every_round():
    """The driver's counters hold for policy rounds too: accepted counts per run sum to the
    calls, rejections + accepted + bonus tokens make the horizon, one bar of tokens."""
    chain = CHAINS["S5_V3"]
    policy = HFSchedule(2, max_depth=5)
    res = st.simulate(chain, T, policy, 500, rng=3, return_tokens=True)
    np.testing.assert_array_equal(res.accepted_counts.sum(1), res.target_calls)
    np.testing.assert_array_equal(res.accepted_counts @ np.arange(6), res.accepted)
    assert res.accepted_counts.shape == (500, 6) and res.tokens.shape == (500, T)
    assert res.rejection_by_position.sum() == res.rejections.sum()
    assert res.target_time is None and "time" not in res.summary()
    off = st.simulate(chain, T, policy, 500, rng=3, bonus=False)
    assert off.target_calls.mean() > res.target_calls.mean()


def test_st_simulate_policy_arguments():
    chain = CHAINS["random_V3"]
    with pytest.raises(ValueError, match="policy"):
        st.simulate(chain, T, gamma=3, policy=FixedGamma(3), n_runs=10)
    # a policy takes any single-path verifier (it was token only)
    blk = st.simulate(chain, T, policy=FixedGamma(3), n_runs=10, verifier="block", rng=0)
    assert blk.verifier == "block" and blk.round == "policy(FixedGamma(3), verifier=block)"
    again = st.simulate(chain, T, PolicyRound(FixedGamma(3), "block"), 10, rng=0)
    np.testing.assert_array_equal(blk.accepted_counts, again.accepted_counts)
    with pytest.raises(ValueError, match="verifies token trees"):
        st.simulate(chain, T, policy=FixedGamma(3), n_runs=10, verifier="tree_rrs")
    with pytest.raises(ValueError, match="policy"):
        st.simulate(chain, T, policy=object(), n_runs=10)
    with pytest.raises(ValueError, match="policy"):
        st.simulate(chain, T, policy=3, n_runs=10)
    with pytest.raises(ValueError, match="needs a deterministic next_state"):
        from spectheory.chain.transitions import random_transition_law

        soft = st.DecodingChain(chain.target, chain.draft, None, random_transition_law(3, 3, rng=0))
        st.simulate(soft, T, FixedGamma(2), 10)
    # a cost costs every round kind (it was policy-only)
    path = st.simulate(chain, T, 3, 10, rng=0, cost=0.1)
    np.testing.assert_allclose(path.time(), 0.1 * path.draft_tokens + path.target_calls)
    assert st.simulate(chain, T, 3, 10, rng=0).gamma == 3  # the plain call is unchanged

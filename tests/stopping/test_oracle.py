"""The hindsight oracle, the long-run rate of Markov controllers, and the exact oracle-gap split.

docs/stopping.md §10: the oracle's exact value against Monte Carlo (5 SE), its closed form on a
one-state chain, the long-run values against finite-horizon increments, Theorem 5 (the oracle
is a lower bound for affine round costs with slope <= t(0)) and a case where the condition
fails and the oracle is beaten.
"""

import numpy as np
import pytest

import spectheory as st
from spectheory.chain.examples import easy_hard_chain
from spectheory.cost import Cost
from spectheory.stopping import (
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    RejectionThreshold,
    evaluate_policy,
    long_run_optimum,
    long_run_oracle,
    long_run_policy,
    optimal_policy,
    oracle_gap,
    oracle_value,
)
from spectheory.stopping.optimal import long_run_rate
from spectheory.stopping.oracle import OracleRound
from tests._helpers import assert_within_se


def _position_dependent(rng):
    base = st.DecodingChain.random(3, concentration=0.7, rng=rng)
    T = 10
    g = np.random.default_rng(rng)
    tgt = np.stack([base.target] * T)
    dr = g.dirichlet(np.ones(3), size=(T, 3))
    return st.DecodingChain(tgt, dr, base.initial), T


@pytest.mark.parametrize("kind", ["homogeneous", "position"])
def test_oracle_exact_matches_monte_carlo(kind):
    if kind == "homogeneous":
        chain, T = st.DecodingChain.random(3, concentration=0.8, rng=3), 14
    else:
        chain, T = _position_dependent(5)
    cost = Cost(0.15, target_call=lambda k: 1.0 + 0.05 * k)
    exact = chain.protocol(T, OracleRound(5), cost=cost)
    sim = st.simulate(chain, T, OracleRound(5), 6000, rng=11, cost=cost)
    for name in ("target_calls", "draft_tokens", "rejections", "accepted"):
        assert_within_se(*sim.mean_se(name), getattr(exact, name), name)
    t = sim.time()
    assert_within_se(t.mean(), t.std(ddof=1) / np.sqrt(t.size), exact.time(), "time")
    assert abs(exact.draft_tokens - exact.accepted) < 1e-12
    assert (sim.draft_tokens == sim.accepted).all()


def test_oracle_round_replays_the_full_round_and_charges_t0_for_empty_drafts():
    chain = st.DecodingChain.random(3, concentration=0.5, rng=1)
    t0_is_2 = Cost(0.1, target_call=lambda k: 2.0 if k == 0 else 1.0, autoregressive=3.0)
    a = st.simulate(chain, 12, OracleRound(4), 300, rng=4, cost=t0_is_2, return_tokens=True)
    b = st.simulate(chain, 12, FixedGamma(4), 300, rng=4, cost=0.1, return_tokens=True)
    assert (a.target_calls == b.target_calls).all() and (a.rejections == b.rejections).all()
    assert (a.tokens == b.tokens).all()
    # a last round that drafts to the end and is accepted whole keeps one draft fewer: the bonus
    assert set(np.unique(b.accepted - a.accepted)) == {0, 1}
    # every round costs t(J) + c J with t(0) = target_call(0) = 2 (not autoregressive), t(k >= 1) = 1
    zero_rounds = a.accepted_counts[:, 0]
    expected = 0.1 * a.accepted + (a.target_calls - zero_rounds) + 2.0 * zero_rounds
    np.testing.assert_allclose(a.time(), expected, atol=1e-12)


def test_oracle_closed_form_on_one_state_chain():
    alpha, c, D = 0.7, 0.2, 5
    chain = st.DecodingChain.iid([alpha, 1 - alpha], [1.0, 0.0])
    r = long_run_oracle(chain, c, D)
    tokens = (1 - alpha ** (D + 1)) / (1 - alpha)
    time = 1 + c * sum(alpha**j for j in range(1, D + 1))
    assert abs(r.rate - tokens / time) < 1e-12
    # finite horizon: one round at T <= D with everything accepted drafts T - 1 tokens and takes
    # the bonus (drafting all T, as the oracle did before issue 41, costs one draft more)
    sure = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])
    v = oracle_value(sure, 3, 0.1, max_depth=5)
    assert v.target_calls == 1.0 and v.draft_tokens == 2.0 and v.bonus_tokens == 1.0
    assert abs(v.time() - 1.2) < 1e-12


@pytest.mark.parametrize("seed", [0, 1])
def test_long_run_oracle_is_the_finite_horizon_slope(seed):
    chain = st.DecodingChain.random(3, concentration=0.8, rng=seed)
    cost = Cost(0.1, target_call=lambda k: 1.0 + 0.02 * k)
    slope = (oracle_value(chain, 240, cost, 4).time() - oracle_value(chain, 120, cost, 4).time()) / 120
    assert abs(slope - long_run_oracle(chain, cost, 4).time_per_token()) < 1e-9


@pytest.mark.parametrize(
    "policy",
    [
        ConfidenceThreshold(0.5, max_depth=5),
        ConfidenceThreshold(0.4, max_depth=4, statistic="token"),
        EntropyRule(0.8, max_depth=5),
        HFSchedule(3, max_depth=5),
        HFSchedule(2, max_depth=4, confidence=0.45),
    ],
    ids=repr,
)
def test_long_run_policy_is_the_finite_horizon_slope(policy):
    chain = st.DecodingChain.random(3, concentration=0.8, rng=2)
    slope = (
        evaluate_policy(chain, policy, 200, 0.1).time() - evaluate_policy(chain, policy, 100, 0.1).time()
    ) / 100
    assert abs(slope - long_run_policy(chain, policy, 0.1).time_per_token()) < 1e-9


def test_long_run_policy_fixed_gamma_and_refusals():
    chain = easy_hard_chain(0.9, group_size=2)
    for g in (1, 3, 6):
        assert abs(long_run_policy(chain, FixedGamma(g), 0.05).rate - long_run_rate(chain, g, 0.05)) < 1e-12
    with pytest.raises(ValueError, match="no finite round-start chain"):
        long_run_policy(chain, RejectionThreshold(0.5, max_depth=3), 0.05)
    with pytest.raises(ValueError, match="homogeneous"):
        long_run_policy(_position_dependent(0)[0], FixedGamma(2), 0.05)


@pytest.mark.parametrize("seed", range(6))
def test_oracle_is_a_lower_bound_for_affine_costs(seed):
    """Theorem 5: f(k) = a + beta k with beta <= a gives oracle <= path optimum <= state optimum,
    at every horizon 1..10 (T - n <= D, where the last round may draft to the end, included)."""
    chain = st.DecodingChain.random(3, concentration=0.6, rng=100 + seed)
    costs = (
        Cost(0.05),
        Cost(1.0),
        Cost(0.3, target_call=lambda k: 1.0 + 0.2 * k),
        Cost(0.1, target_call=lambda k: 0.5 + 0.1 * k),  # t(0) = 0.5, not autoregressive = 1
    )
    for cost in costs:
        for T in range(1, 11):
            ora = oracle_value(chain, T, cost, 4).time()
            path = optimal_policy(chain, T, cost, "path", 4).time()
            state = optimal_policy(chain, T, cost, "state", 4).time()
            assert ora <= path + 1e-12 <= state + 2e-12, (cost, T)
        assert long_run_oracle(chain, cost, 4).rate >= long_run_optimum(chain, cost, 4).rate - 1e-12


def test_oracle_at_the_horizon_takes_the_bonus():
    """Issue 41's counterexample: p = q (all accepted), f(k) = 1 + k/10, T = 2, D = 2. Drafting
    both tokens costs 6/5; FixedGamma(1) drafts one and takes the bonus, 11/10. The oracle
    drafts T - n - 1 when its round would draft to the end, so it is not beaten."""
    sure = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])
    ora = oracle_value(sure, 2, 0.1, max_depth=2)
    assert abs(ora.time() - 1.1) < 1e-12 and ora.draft_tokens == 1.0 and ora.bonus_tokens == 1.0
    assert abs(evaluate_policy(sure, FixedGamma(1), 2, 0.1).time() - 1.1) < 1e-12
    assert abs(optimal_policy(sure, 2, 0.1, "path", 2).time() - 1.1) < 1e-12
    # the docstring's chain at a horizon whose last round reaches the end: no negative part
    g = oracle_gap(sure, FixedGamma(4), 0.1, horizon=9, information="path")
    assert abs(g.irreducible) < 1e-12 and abs(g.oracle_time * 9 - 2.7) < 1e-12


@pytest.mark.parametrize("kind", ["homogeneous", "position"])
def test_oracle_round_monte_carlo_at_short_horizons(kind):
    """The round kind turns a last accepted draft into the bonus exactly as oracle_value does."""
    chain, _ = (
        (st.DecodingChain.random(3, concentration=0.4, rng=7), 0)
        if kind == "homogeneous"
        else _position_dependent(2)
    )
    cost = Cost(0.2, target_call=lambda k: 0.5 + 0.1 * k)
    for T in (3, 7):
        exact = chain.protocol(T, OracleRound(5), cost=cost)
        sim = st.simulate(chain, T, OracleRound(5), 6000, rng=5, cost=cost)
        for name in ("target_calls", "draft_tokens", "rejections", "accepted"):
            assert_within_se(*sim.mean_se(name), getattr(exact, name), f"{name} at T={T}")
        t = sim.time()
        assert_within_se(t.mean(), t.std(ddof=1) / np.sqrt(t.size), exact.time(), f"time at T={T}")


@pytest.mark.parametrize("T", [4, 9, 13])
def test_oracle_rounds_emit_their_drafts_plus_one(T):
    """Every oracle round emits L + 1 tokens (it never drafts to the end), so drafts = T - calls:
    the identity simulations/decoder_controllers.py scores the oracle by."""
    chain = st.DecodingChain.random(3, concentration=0.3, rng=T)
    v = oracle_value(chain, T, 0.1, 5)
    assert abs(v.draft_tokens - (T - v.target_calls)) < 1e-12
    sim = st.simulate(chain, T, OracleRound(5), 200, rng=0, cost=0.1)
    assert (sim.draft_tokens == T - sim.target_calls).all()


def test_oracle_charges_t0_of_the_call_curve():
    """Issue 41: with t(k) = 0.5 + 0.1 k (f(k) = 0.5 + 0.2 k, affine with beta <= a) a round of zero
    drafts costs t(0) = 0.5; charging autoregressive = 1 made the oracle exceed the path optimum
    on almost every random two-token chain (by up to 1.8 at T = 6, D = 3)."""
    cost = Cost(0.1, target_call=lambda k: 0.5 + 0.1 * k)
    for seed in range(20):
        chain = st.DecodingChain.random(2, concentration=1.0, rng=seed)
        assert (
            oracle_value(chain, 6, cost, 3).time() <= optimal_policy(chain, 6, cost, "path", 3).time() + 1e-12
        )


def test_reducible_part_against_the_state_optimum_can_be_negative():
    """A rule that reads the drafted path can beat the state optimum, so the reducible part is
    >= 0 only against the path optimum (Theorem 1), which it never beats."""
    chain = st.DecodingChain.random(3, concentration=0.5, rng=16)
    rule = ConfidenceThreshold(0.7, max_depth=4, statistic="token")
    assert oracle_gap(chain, rule, 0.1, horizon=10, information="state").reducible < -5e-3
    assert oracle_gap(chain, rule, 0.1, horizon=10, information="path").reducible >= 0


def test_oracle_is_beaten_when_drafting_costs_more_than_a_call():
    """The condition of Theorem 5 matters: with c = 2 drafting accepted tokens is a loss."""
    chain = st.DecodingChain.iid([0.9, 0.1], [1.0, 0.0])
    g = oracle_gap(chain, FixedGamma(1), 2.0, max_depth=4)
    assert g.irreducible < 0
    assert abs(g.optimum_time - 3.0 / 1.9) < 1e-12  # gamma = 1 is optimal: (1 + c) / (1 + alpha)


@pytest.mark.parametrize("horizon,information", [(None, "state"), (10, "state"), (10, "path")])
def test_oracle_gap_split(horizon, information):
    chain = easy_hard_chain(0.8, group_size=1)
    for policy in (HFSchedule(3, max_depth=4), ConfidenceThreshold(0.5, max_depth=4), FixedGamma(2)):
        g = oracle_gap(chain, policy, 0.1, horizon=horizon, information=information)
        assert abs(g.reducible + g.irreducible - g.gap) < 1e-12
        assert g.reducible >= -1e-12 and g.irreducible >= -1e-12
        assert 0.0 <= g.irreducible_share <= 1.0 + 1e-12
        assert g.as_dict()["controller"] == policy.name
    with pytest.raises(ValueError, match="max_depth"):
        oracle_gap(chain, FixedGamma(5), 0.1, max_depth=3)
    with pytest.raises(ValueError, match="information"):
        oracle_gap(chain, FixedGamma(2), 0.1, information="path")

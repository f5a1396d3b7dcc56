"""Draft-length policies: exact evaluation cross-checked between engines, the optimum against
brute force and against every heuristic, and the long-run optimum against Leviathan's iid_optimal_gamma."""

import dataclasses
import itertools

import numpy as np
import pytest

import spectheory as st
from spectheory.cost import Cost
from spectheory.kinds.policy.paths import evaluate_paths
from spectheory.stopping import (
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    RejectionThreshold,
    StartStatePolicy,
    evaluate_policy,
    leviathan_policy,
    long_run_optimum,
    optimal_policy,
)


def _chains():
    yield st.DecodingChain.random(4, concentration=0.7, similarity=0.3, rng=11)
    yield st.DecodingChain.random(3, n_states=5, concentration=0.5, rng=12)  # S != V
    yield st.DecodingChain.random(3, horizon=9, concentration=0.8, rng=13)  # inhomogeneous
    yield st.DecodingChain.iid([0.6, 0.3, 0.1], [0.3, 0.3, 0.4])


@pytest.mark.parametrize("chain", list(_chains()), ids=lambda c: repr(c))
@pytest.mark.parametrize("gamma", [1, 2, 5])
def test_fixed_gamma_matches_chain_methods_and_round_recursion(chain, gamma):
    T = 9
    cost = Cost(0.2, target_call=lambda k: 1.0 + 0.1 * k)
    v = evaluate_policy(chain, FixedGamma(gamma), T, cost)
    res = chain.protocol(T, gamma)
    counters = ("target_calls", "draft_tokens", "rejections", "accepted", "bonus_tokens")
    for name in counters:
        assert abs(getattr(v, name) - getattr(res, name)) < 1e-12, name
    for other in (
        evaluate_policy(chain, FixedGamma(gamma), T, cost, method="rounds"),
        evaluate_policy(chain, StartStatePolicy(np.full(chain.n_states, gamma)), T, cost),
        evaluate_paths(chain, FixedGamma(gamma), T, cost),
        evaluate_paths(chain, RejectionThreshold(1.0, max_depth=gamma), T, cost),  # never stops early
    ):
        np.testing.assert_allclose(
            [getattr(other, name) for name in (*counters, "target_time")],
            [getattr(v, name) for name in (*counters, "target_time")],
            rtol=0,
            atol=1e-12,
        )


@pytest.mark.parametrize("chain", list(_chains())[:3], ids=lambda c: repr(c))
@pytest.mark.parametrize(
    "policy", [ConfidenceThreshold(0.5, max_depth=4), EntropyRule(0.9, max_depth=4)], ids=repr
)
def test_rejections_and_accepted_agree_between_edge_recursion_and_path_enumeration(chain, policy):
    """Two engines (the backward recursion over edges, the enumerated drafted-path tree) give the
    same counters, rejections and bonus tokens included, for state-dependent stopping rules."""
    T = 8
    a = evaluate_policy(chain, policy, T, 0.1)
    b = evaluate_paths(chain, policy, T, a.cost)
    names = ("target_calls", "draft_tokens", "rejections", "accepted", "bonus_tokens")
    np.testing.assert_allclose([getattr(a, n) for n in names], [getattr(b, n) for n in names], atol=1e-12)
    assert 0 < a.rejections < a.target_calls and a.bonus_tokens > 0
    assert abs(a.accepted + a.rejections + a.bonus_tokens - T) < 1e-12  # one token per position
    opt = optimal_policy(chain, T, 0.1, max_depth=4)  # the start-class recursion
    via_paths = evaluate_paths(chain, opt.extra["policy"], T, opt.cost)
    np.testing.assert_allclose(
        [getattr(opt, n) for n in names], [getattr(via_paths, n) for n in names], atol=1e-12
    )


def test_policy_value_cost_members_and_what_it_does_not_compute():
    chain = st.DecodingChain.random(3, concentration=0.7, rng=3)
    cost = Cost(0.1, target_call=lambda k: 1.0 + 0.05 * k)
    v = evaluate_policy(chain, ConfidenceThreshold(0.5, max_depth=4), 10, cost)
    assert v.time() == v.time(cost) == 0.1 * v.draft_tokens + v.target_time
    assert v.speedup() == 10 / v.time() and v.time_per_token() == v.time() / 10
    assert v.speedup(0.0) == v.tokens_per_call  # t = 1, free drafts: tokens per call
    assert abs(v.time(0.3) - (0.3 * v.draft_tokens + v.target_calls)) < 1e-12
    with pytest.raises(ValueError, match="cost: .*own target_call"):
        v.time(Cost(0.1, target_call=lambda k: 2.0))
    # the forward masses answer the shared counters (tests/stopping/test_policy_counters.py)
    assert abs(v.accepted_counts.sum() - v.target_calls) < 1e-12
    assert abs(v.round_starts.sum() - v.target_calls) < 1e-12
    assert abs(v.rejection_by_position.sum() - v.rejections) < 1e-12
    bare = dataclasses.replace(v, counters=None)
    for name in ("accepted_counts", "accepted_count_law", "rejection_by_position", "round_starts"):
        with pytest.raises(st.exact.NotComputedError, match=f"PolicyValue.{name.split('_law')[0]}"):
            getattr(bare, name)
    s = v.summary()
    assert s["rejections"] == {"mean": v.rejections, "se": 0.0} and s["tokens_per_call"]["se"] == 0.0
    assert s["time"]["mean"] == v.time() and s["target_time"]["mean"] == v.target_time


def test_call_cost_curve_on_an_always_accepted_chain():
    chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])
    v = evaluate_policy(chain, FixedGamma(4), 12, Cost(0.5, target_call=lambda k: k))
    # rounds at 0, 5, 10 draft 4, 4, 2 tokens; time 0.5 * 10 + (4 + 4 + 2)
    assert (v.target_calls, v.draft_tokens, v.target_time, v.time()) == (3.0, 10.0, 10.0, 15.0)


@pytest.mark.parametrize(
    "policy",
    [
        ConfidenceThreshold(0.5, max_depth=4),
        ConfidenceThreshold(0.3, max_depth=3, statistic="token"),
        EntropyRule(0.8, max_depth=4),
    ],
    ids=repr,
)
@pytest.mark.parametrize("chain", list(_chains())[:3], ids=lambda c: repr(c))
def test_edge_recursion_equals_path_enumeration(chain, policy):
    cost = Cost(0.1)
    a = evaluate_policy(chain, policy, 8, cost)
    b = evaluate_paths(chain, policy, 8, cost)
    np.testing.assert_allclose(
        [a.target_calls, a.draft_tokens, a.time()],
        [b.target_calls, b.draft_tokens, b.time()],
        rtol=1e-12,
        atol=1e-12,
    )


def test_state_optimum_equals_brute_force_over_start_policies():
    chain = st.DecodingChain.random(2, concentration=0.6, rng=5)
    T, D, cost = 4, 2, Cost(0.3)
    best = optimal_policy(chain, T, cost, max_depth=D)
    times = [
        evaluate_policy(chain, StartStatePolicy(np.array(k).reshape(T, 2)), T, cost).time()
        for k in itertools.product(range(1, D + 1), repeat=2 * T)
    ]
    assert abs(best.time() - min(times)) < 1e-12
    again = evaluate_policy(chain, best.extra["policy"], T, cost)
    assert abs(again.time() - best.time()) < 1e-12


def _heuristics(chain, T, cost, D):
    yield from (FixedGamma(g) for g in range(1, D + 1))
    yield leviathan_policy(chain, T, cost, max_depth=D)
    yield HFSchedule(2, max_depth=D)
    yield HFSchedule(1, max_depth=D, confidence=0.5)


def _path_only(D):
    yield ConfidenceThreshold(0.4, max_depth=D)
    yield ConfidenceThreshold(0.6, max_depth=D, statistic="token")
    yield EntropyRule(0.7, max_depth=D)
    for h in (0.2, 0.5, 0.8):
        yield RejectionThreshold(h, max_depth=D)


def test_optimum_never_worse_than_any_heuristic_on_100_random_chains():
    T, D = 5, 4
    rng = np.random.default_rng(2024)
    for trial in range(100):
        chain = st.DecodingChain.random(
            3, concentration=float(rng.uniform(0.2, 2.0)), similarity=float(rng.uniform(0, 0.9)), rng=rng
        )
        cost = Cost(float(rng.uniform(0.0, 0.5)))
        state = optimal_policy(chain, T, cost, max_depth=D).time()
        path = optimal_policy(chain, T, cost, "path", max_depth=D).time()
        assert path <= state + 1e-12, trial
        for policy in _heuristics(chain, T, cost, D):
            v = evaluate_policy(chain, policy, T, cost).time()
            assert state <= v + 1e-12, (trial, policy)
            assert path <= v + 1e-12, (trial, policy)
        for policy in _path_only(D):
            assert path <= evaluate_policy(chain, policy, T, cost).time() + 1e-12, (trial, policy)


@pytest.mark.parametrize("seed", range(6))
def test_path_optimum_has_threshold_structure(seed):
    """docs/stopping.md Theorem 2: at each (position, depth, state) the optimum stops iff rho <= rho*."""
    from spectheory.kinds.policy.paths import optimal_paths

    rng = np.random.default_rng(seed)
    chain = st.DecodingChain.random(
        3, concentration=float(rng.uniform(0.2, 1.5)), similarity=float(rng.uniform(0, 0.8)), rng=rng
    )
    cost = Cost(float(rng.uniform(0, 0.4)), target_call=lambda k: 1.0 + 0.03 * k)  # non-decreasing t
    res = optimal_paths(chain, 10, cost, 5, record_decisions=True)
    n_mixed = 0
    for rec in res.extra["decisions"]:
        live = rec["weight"] > 0
        for s in np.unique(rec["state"]):
            sel = live & (rec["state"] == s)
            stop, rho = rec["stop"][sel], rec["accept_prob"][sel]
            if stop.any() and (~stop).any():
                n_mixed += 1
                assert rho[stop].max() <= rho[~stop].min() + 1e-12
    assert n_mixed > 0 or seed > 2  # the structure is exercised (both decisions at one state)


@pytest.mark.parametrize("alpha", [0.1, 0.35, 0.6, 0.8, 0.9, 0.97])
@pytest.mark.parametrize("c", [0.0, 0.01, 0.05, 0.2, 0.5, 1.0])
def test_one_state_long_run_optimum_is_optimal_gamma(alpha, c):
    chain = st.DecodingChain.iid([alpha, 1 - alpha], [1.0, 0.0])  # acceptance exactly alpha
    D = 64
    res = long_run_optimum(chain, c, max_depth=D)
    g = st.iid_optimal_gamma(alpha, c, max_gamma=D)
    speed = st.iid_speedup(alpha, g, c)
    np.testing.assert_allclose(res.rate, speed, rtol=1e-12)
    others = [st.iid_speedup(alpha, h, c) for h in (g - 1, g + 1) if 1 <= h <= D]
    if all(o < speed * (1 - 1e-9) for o in others):  # no near-tie: the same gamma
        assert int(res.lengths[0]) == g


@pytest.mark.parametrize("seed", [4, 5])
def test_long_run_optimum_is_the_best_start_policy_by_brute_force(seed):
    """docs/stopping.md Theorem 3 (Dinkelbach ends at the optimal rate): against every one of the
    4^3 round-start policies k(s) on a 3-state chain with a sampled draft, two costs."""
    from spectheory.kinds.policy.policies import StartStatePolicy
    from spectheory.stopping import long_run_policy

    chain = st.DecodingChain.random(3, concentration=0.7, rng=seed)
    for cost in (Cost(0.1), Cost(0.3, target_call=lambda k: 1 + 0.2 * k)):
        rates = {
            ks: long_run_policy(chain, StartStatePolicy(np.array(ks)), cost).rate
            for ks in itertools.product(range(1, 5), repeat=3)
        }
        opt = long_run_optimum(chain, cost, 4)
        assert abs(opt.rate - max(rates.values())) < 1e-12
        assert abs(rates[tuple(int(k) for k in opt.lengths)] - opt.rate) < 1e-12


def test_long_run_rate_of_fixed_gamma_is_the_limit_of_the_finite_horizon():
    from spectheory.stopping.optimal import long_run_rate

    chain = st.DecodingChain.random(3, concentration=0.5, rng=4)
    rate = long_run_rate(chain, 3, 0.1)
    # time(T) = T / rate + O(1): the difference quotient over T is exact up to the transient
    t1, t2 = (evaluate_policy(chain, FixedGamma(3), T, 0.1).time() for T in (300, 600))
    assert abs(300 / (t2 - t1) - rate) < 1e-6 * rate


def test_long_run_optimum_beats_fixed_gamma_on_a_context_dependent_chain():
    from spectheory.chain.examples import easy_hard_chain

    chain = easy_hard_chain(0.9)
    res = long_run_optimum(chain, 0.05, max_depth=32)
    assert len(set(res.lengths[:8].tolist())) == 2  # easy and hard states differ
    from spectheory.stopping.optimal import long_run_rate

    assert res.rate > max(long_run_rate(chain, k, 0.05) for k in range(1, 33)) * 1.01
    T = 400  # the finite optimum approaches it
    fin = optimal_policy(chain, T, 0.05, max_depth=32)
    assert abs(T / fin.time() - res.rate) / res.rate < 0.02


def test_bad_input():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="information"):
        optimal_policy(chain, 5, 0.1, information="depth")
    with pytest.raises(ValueError, match="max_nodes"):
        evaluate_policy(chain, RejectionThreshold(0.5, max_depth=8), 10, 0.1, max_nodes=1000)
    with pytest.raises(ValueError, match="c:"):
        Cost(-1.0)
    with pytest.raises(ValueError, match="target_call"):
        evaluate_policy(chain, FixedGamma(2), 5, Cost(0.1, target_call=lambda k: -1.0))
    with pytest.raises(ValueError, match="bonus"):
        evaluate_policy(chain, FixedGamma(2), 5, 0.1, bonus=False)
    with pytest.raises(ValueError, match="gamma"):
        FixedGamma(0)
    with pytest.raises(ValueError, match="threshold"):
        ConfidenceThreshold(1.5)
    with pytest.raises(ValueError, match="policy"):
        evaluate_policy(chain, "fixed", 5, 0.1)

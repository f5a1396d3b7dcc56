"""Engines' online controllers: their memory updates against plain re-implementations of the
engines' code, exact scoring where the memory is finite, Monte Carlo elsewhere, and the guards."""

from collections import deque

import numpy as np
import pytest

import spectheory as st
from spectheory.kinds.policy.context import RoundFeedback
from spectheory.stopping import (
    AcceptanceRateK,
    ROCThreshold,
    UCBGamma,
    evaluate_policy,
    long_run_optimum,
    long_run_oracle,
    long_run_policy,
    oracle_gap,
)
from spectheory.stopping.along_paths import policy_round_dp
from spectheory.stopping.controllers import roc_threshold
from spectheory.stopping.optimal import long_run_rate
from tests._helpers import assert_within_se


def _roc_reference(probs, labels):
    """scikit-learn's roc_curve semantics, then HF's argmin of FPR + 3 FNR."""
    probs, labels = np.asarray(probs), np.asarray(labels)
    P, N = labels.sum(), (1 - labels).sum()
    best, best_th = 3.0, np.inf  # threshold inf first: FPR = TPR = 0
    for th in sorted(set(probs.tolist()), reverse=True):
        pos = probs >= th
        cost = (pos & (labels == 0)).sum() / N + 3 * (1 - (pos & (labels == 1)).sum() / P)
        if cost < best:
            best, best_th = cost, th
    return best_th


def test_roc_threshold_matches_the_reference_with_ties():
    rng = np.random.default_rng(0)
    for _ in range(200):
        n = int(rng.integers(2, 12))
        probs = rng.choice([0.1, 0.25, 0.4, 0.5, 0.7, 0.9], size=n) if rng.random() < 0.5 else rng.random(n)
        labels = rng.integers(0, 2, size=n)
        pad = 4
        got = roc_threshold(np.r_[probs, np.zeros(pad)][None], np.r_[labels, np.ones(pad)][None], [n])[0]
        if labels.min() == labels.max():
            assert np.isnan(got)
        else:
            assert got == _roc_reference(probs, labels)


def _feedback_stream(rng, rounds, D):
    for _ in range(rounds):
        k = int(rng.integers(1, D + 1))
        j = int(rng.integers(0, k + 1))
        yield j, k, np.round(rng.random(D), 2)


def test_roc_threshold_update_is_hf_update_candidate_strategy():
    rng = np.random.default_rng(1)
    D = 5
    pol, short = ROCThreshold(max_depth=D, window=200), ROCThreshold(max_depth=D, window=8)
    mem, mem8 = pol.initial_memory[None].copy(), short.initial_memory[None].copy()
    probs, matches, threshold = [], [], 0.4
    for j, k, q in _feedback_stream(rng, 30, D):
        # HF: probs of every drafted token, matches [1] * num_matches (+ [0]), probs cut to matches
        probs.extend(q[:k].tolist())
        matches.extend([1] * j)
        if len(probs) > len(matches):
            matches.append(0)
        del probs[len(matches) :]
        if len(probs) > 5 and {0, 1}.issubset(matches):
            threshold = _roc_reference(probs, matches)
        fb = RoundFeedback(np.array([j]), np.array([k]), q[None])
        mem, mem8 = pol.update(mem, fb), short.update(mem8, fb)
        assert mem[0, -1] == threshold
        assert mem[0, 2 * 200] == len(probs)
        np.testing.assert_array_equal(mem[0, : len(probs)], probs)
        n8 = min(len(probs), 8)  # the window keeps the last 8 samples
        np.testing.assert_array_equal(mem8[0, :n8], probs[len(probs) - n8 :])
        np.testing.assert_array_equal(mem8[0, 8 : 8 + n8], matches[len(matches) - n8 :])


def _vllm_reference(rates, k0, kmax, target=0.7, hyst=0.05, window=10, min_history=3, kmin=1):
    history, k, ks = deque(maxlen=window), k0, []
    for r in rates:
        history.append(r)
        if len(history) >= min_history:
            mean = float(np.mean(history))
            if mean >= target + hyst:
                k = min(k + 1, kmax)
            elif mean <= target - hyst:
                k = max(k - 1, kmin)
        ks.append(k)
    return ks


def test_acceptance_rate_k_update_is_the_dynamic_proposer():
    rng = np.random.default_rng(2)
    pol = AcceptanceRateK(max_depth=6)
    mem = pol.initial_memory[None].copy()
    rates, ks = [], []
    for _ in range(40):
        k = int(mem[0, 0])
        j = int(rng.integers(0, k + 1))
        rates.append(j / k)
        mem = pol.update(mem, RoundFeedback(np.array([j]), np.array([k]), np.ones((1, 6))))
        ks.append(int(mem[0, 0]))
    assert ks == _vllm_reference(rates, 6, 6)
    small = AcceptanceRateK(3, max_depth=6, window=1, min_history=1)
    for m in range(6):
        for j in range(m + 2):
            fb = RoundFeedback(np.array([j]), np.array([m + 1]), np.ones((1, 6)))
            assert small.update(np.array([m]), fb)[0] == small.memory_after(m, j, m + 1)


def test_acceptance_rate_k_is_exact_with_a_one_round_window():
    chain = st.DecodingChain.random(3, concentration=0.8, rng=4)
    pol = AcceptanceRateK(2, max_depth=5, threshold=0.6, window=1, min_history=1)
    exact = evaluate_policy(chain, pol, 20, 0.1)
    sim = st.simulate(chain, 20, pol, 5000, rng=3, cost=0.1)
    for name in ("target_calls", "draft_tokens", "rejections"):
        assert_within_se(*sim.mean_se(name), getattr(exact, name), name)
    slope = (
        evaluate_policy(chain, pol, 400, 0.1).time() - evaluate_policy(chain, pol, 200, 0.1).time()
    ) / 200
    lr = long_run_policy(chain, pol, 0.1)
    assert abs(slope - lr.time_per_token()) < 1e-9
    g = oracle_gap(chain, pol, 0.1)  # long run: reducible and irreducible parts
    assert g.reducible >= 0 and g.irreducible >= 0
    assert abs(g.optimum_time - long_run_optimum(chain, 0.1, 5).time_per_token()) < 1e-12
    assert abs(g.oracle_time - long_run_oracle(chain, 0.1, 5).time_per_token()) < 1e-12


def test_ucb_update_is_ucb1_and_learns_the_better_arm():
    pol = UCBGamma((1, 3, 8), cost=0.05)
    rng = np.random.default_rng(5)
    mem = pol.initial_memory[None].copy()
    plays, sums = np.zeros(3), np.zeros(3)
    norm = max((a + 1) / (0.05 * a + 1) for a in (1, 3, 8))
    arm = 0
    for n in range(1, 30):
        assert int(mem[0, -1]) == arm
        k = pol.arms[arm]
        j = int(rng.integers(0, k + 1))
        mem = pol.update(mem, RoundFeedback(np.array([j]), np.array([k]), np.ones((1, 8))))
        plays[arm] += 1
        sums[arm] += (j + 1) / (0.05 * k + 1) / norm
        with np.errstate(divide="ignore", invalid="ignore"):
            index = np.where(plays > 0, sums / plays + np.sqrt(2 * np.log(n) / plays), np.inf)
        arm = int(np.argmax(index))
    chain = st.DecodingChain.iid([0.9, 0.1], [1.0, 0.0])
    best = max((1, 8), key=lambda g: long_run_rate(chain, g, 0.05))
    res = st.simulate(chain, 300, UCBGamma((1, 8), cost=0.05), 40, rng=0, cost=0.05)
    mean_draft = res.draft_tokens.sum() / res.target_calls.sum()
    assert best == 8 and mean_draft > 6  # the better arm dominates the plays


@pytest.mark.parametrize(
    "policy", [ROCThreshold(max_depth=4), UCBGamma((1, 2)), AcceptanceRateK(max_depth=4)], ids=repr
)
def test_online_controllers_are_refused_by_the_exact_engines(policy):
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="Monte Carlo"):
        evaluate_policy(chain, policy, 8, 0.1)
    with pytest.raises(ValueError, match="Monte Carlo"):
        long_run_policy(chain, policy, 0.1)


def test_counts_memory_is_refused_along_paths():
    pol = AcceptanceRateK(max_depth=3, window=1, min_history=1)
    with pytest.raises(ValueError, match="policy_round_dp"):
        policy_round_dp(np.full((2, 6), 0.3), pol)


@pytest.mark.parametrize(
    "policy",
    [ROCThreshold(max_depth=5), AcceptanceRateK(max_depth=5), UCBGamma((1, 2, 4), cost=0.1)],
    ids=repr,
)
def test_online_controllers_run_through_the_round_engine(policy):
    chain = st.DecodingChain.random(3, concentration=0.8, rng=6)
    res = st.simulate(chain, 24, policy, 200, rng=1, cost=0.1)
    again = st.simulate(chain, 24, policy, 200, rng=1, cost=0.1)
    assert (res.time() == again.time()).all()  # seeded
    assert (res.draft_tokens >= res.accepted).all() and res.target_calls.min() >= 24 / 6

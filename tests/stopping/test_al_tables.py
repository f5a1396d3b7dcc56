"""Acceptance-length tables (issue 39, item 3): the monotonicity theorem on random chains, the
smallest non-concave curve checked by Fractions and Monte Carlo, the table checker, and what a
min-variance synthetic schedule changes (latency tails, an adaptive controller)."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import spectheory as st
from spectheory.stopping import HFSchedule
from spectheory.stopping.al_check import check_al_table, request_means
from spectheory.stopping.al_curves import (
    acceptance_length_curve,
    iid_acceptance_length,
    is_concave,
    nonconcave_example,
)
from spectheory.stopping.al_synthetic import (
    calls_law,
    controller_long_run,
    iid_count_law,
    min_variance_law,
)

KS = [1, 2, 3, 4, 5, 6]


# --- the theorem: AL(K) never falls for a prefix-only drafter -------------------------------


@settings(max_examples=25, deadline=None)
@given(seed=hst.integers(0, 2**31 - 1), vocab=hst.integers(2, 4))
def test_long_run_curve_never_falls_on_random_chains(seed, vocab):
    chain = st.DecodingChain.random(vocab, concentration=0.4, similarity=0.5, rng=seed)
    curve = acceptance_length_curve(chain, KS)
    assert np.all(np.diff(curve) >= -1e-10), curve
    assert np.all((curve >= 1.0 - 1e-12) & (curve <= np.array(KS) + 1.0 + 1e-12))


@settings(max_examples=15, deadline=None)
@given(seed=hst.integers(0, 2**31 - 1), horizon=hst.integers(1, 12), bonus=hst.booleans())
def test_finite_horizon_curves_never_fall_pooled_and_per_generation(seed, horizon, bonus):
    chain = st.DecodingChain.random(3, concentration=0.4, similarity=0.5, rng=seed)
    for per_generation in (False, True):
        curve = acceptance_length_curve(chain, KS[:5], horizon, bonus=bonus, per_generation=per_generation)
        assert np.all(np.diff(curve) >= -1e-10), (per_generation, curve)


def test_one_state_chains_are_concave_and_match_leviathan():
    for alpha_draft in ([0.6, 0.4], [0.9, 0.1], [0.2, 0.8]):
        chain = st.DecodingChain.iid([0.7, 0.3], alpha_draft)
        alpha = float(np.minimum([0.7, 0.3], alpha_draft).sum())
        curve = acceptance_length_curve(chain, KS)
        np.testing.assert_allclose(curve, iid_acceptance_length(alpha, KS), atol=1e-12)
        assert is_concave(curve)


# --- the smallest non-concave curve: three independent methods --------------------------------


def _fraction_long_run(P, Q, k):
    """Long-run tokens per call of a first-order 2-token chain by enumerating rounds in Fractions."""
    S = len(P)

    def rounds(s, depth):  # yields (probability, tokens, end state) of the rest of a round from s
        if depth == k:  # the bonus token from the target
            for y in range(S):
                if P[s][y]:
                    yield P[s][y], 1, y
            return
        resid = [max(P[s][x] - Q[s][x], F(0)) for x in range(S)]
        z = sum(resid)
        for x in range(S):
            if not Q[s][x]:
                continue
            acc = min(F(1), P[s][x] / Q[s][x])
            if acc:
                for p, t, e in rounds(x, depth + 1):
                    yield Q[s][x] * acc * p, 1 + t, e
            if acc < 1:
                for y in range(S):
                    if resid[y]:
                        yield Q[s][x] * (1 - acc) * resid[y] / z, 1, y

    M = [[F(0)] * S for _ in range(S)]
    tok = [F(0)] * S
    for s in range(S):
        for p, t, e in rounds(s, 0):
            M[s][e] += p
            tok[s] += p * t
    # stationary law of the 2-state round-start chain (one closed class here)
    a, b = M[0][1], M[1][0]
    pi = [b / (a + b), a / (a + b)] if a + b else [F(1), F(0)]
    return pi[0] * tok[0] + pi[1] * tok[1]


def test_nonconcave_example_by_fractions_and_monte_carlo():
    chain = nonconcave_example()
    P = [[F(0), F(1)], [F(1), F(0)]]
    Q = [[F(0), F(1)], [F(1, 2), F(1, 2)]]
    exact = [_fraction_long_run(P, Q, k) for k in (1, 2, 3)]
    assert exact == [F(2), F(7, 3), F(3)]
    curve = acceptance_length_curve(chain, [1, 2, 3])
    np.testing.assert_allclose(curve, [float(x) for x in exact], atol=1e-12)
    assert not is_concave(curve)
    # Monte Carlo over a long horizon (the start's transient is O(1/T)): within 5 SE
    sim = st.simulate(chain, 600, gamma=2, n_runs=4000, rng=11).mean_se("target_calls")
    mean, se = sim
    assert abs(600 / mean - 7 / 3) < 5 * (600 / mean**2) * se + 600 / mean**2 * 2  # 2 calls of transient


def test_fraction_enumeration_agrees_on_random_two_token_chains():
    rng = np.random.default_rng(3)
    for _ in range(4):
        p0, p1, q0, q1 = (F(int(v), 8) for v in rng.integers(1, 8, size=4))
        P = [[p0, 1 - p0], [p1, 1 - p1]]
        Q = [[q0, 1 - q0], [q1, 1 - q1]]
        chain = st.DecodingChain([[float(x) for x in r] for r in P], [[float(x) for x in r] for r in Q])
        for k in (1, 2, 3):
            assert abs(float(_fraction_long_run(P, Q, k)) - acceptance_length_curve(chain, [k])[0]) < 1e-12


# --- the checker -------------------------------------------------------------------------------


def _benchmark(alpha_by_k, n_requests, steps, rng):
    """Per-request histograms of accepted counts for i.i.d. rounds (a simulated benchmark)."""
    gen = np.random.default_rng(rng)
    table, hists = {}, {}
    for k, alpha in alpha_by_k.items():
        law = iid_count_law(alpha, k)
        h = np.stack(
            [np.bincount(gen.choice(k + 1, size=steps, p=law), minlength=k + 1) for _ in range(n_requests)]
        )
        tokens, n = request_means(h)
        table[k], hists[k] = float(tokens.sum() / n.sum()), h
    return table, hists


def test_checker_passes_a_rising_table_and_flags_a_falling_one():
    rising, h = _benchmark({1: 0.7, 2: 0.7, 3: 0.7, 4: 0.7}, 40, 50, rng=0)
    report = check_al_table(rising, h, rng=1)
    assert report.ok, str(report)
    # a table whose K = 4 row came from a worse drafter (as a wrong committed row would)
    falling, h2 = _benchmark({1: 0.7, 2: 0.7, 3: 0.7, 4: 0.35}, 40, 50, rng=2)
    report = check_al_table(falling, h2, rng=1)
    assert not report.ok and report.rows[-1].verdict.startswith("falls below AL(")
    assert "falls below" in str(report)
    # the same fall is not flagged for block drafters (the theorem does not cover them)
    assert check_al_table(falling, h2, drafter="round_start", rng=1).ok


def test_checker_bounds_and_definitions():
    report = check_al_table({1: 0.5, 2: 3.5, 3: 2.8, 4: 1.9}, bonus=False)
    assert [r.verdict for r in report.rows] == [
        "impossible: AL < 1",
        "impossible: AL > K = 2",
        "ok",  # an impossible row is no reference for a fall
        "fall (unquantified: no per-request data)",
    ]
    assert report.ok is False
    # pooled and mean-of-means differ when requests differ in length
    h = np.array([[0, 0, 10], [9, 1, 0]])  # one request 10 steps of 3 tokens, one of 10 steps ~1.1
    (row,) = check_al_table({2: 2.05}, {2: h}).rows
    assert row.pooled == pytest.approx((30 + 11) / 20) and row.mean_of_means == pytest.approx((3 + 1.1) / 2)
    with pytest.raises(ValueError, match="drafter"):
        check_al_table({1: 1.5}, drafter="tree")
    with pytest.raises(ValueError, match=r"shape \[R, 3\]"):
        check_al_table({2: 1.5}, {2: np.ones((3, 2))})


def test_bootstrap_se_matches_the_spread_of_repeated_benchmarks():
    pooled, ses = [], []
    for r in range(60):
        table, h = _benchmark({3: 0.6}, 30, 20, rng=100 + r)
        pooled.append(table[3])
        ses.append(check_al_table(table, h, n_boot=400, rng=r).rows[0].se)
    assert np.mean(ses) == pytest.approx(np.std(pooled, ddof=1), rel=0.25)


def test_checker_false_alarm_rate_on_true_tables_is_small():
    alarms = 0
    for r in range(40):
        table, h = _benchmark({1: 0.8, 2: 0.8, 3: 0.8}, 20, 20, rng=1000 + r)
        alarms += not check_al_table(table, h, n_boot=300, rng=r).ok
    assert alarms <= 2  # each comparison ~0.13% at z = 3; 3 comparisons x 40 tables


# --- synthetic schedules ---------------------------------------------------------------------


def test_min_variance_law_has_the_mean_and_the_least_variance():
    rng = np.random.default_rng(0)
    for _ in range(200):
        k = int(rng.integers(1, 7))
        a = np.arange(k + 1)
        other = rng.dirichlet(np.full(k + 1, 0.5))  # any law on 0..K
        m = float(other @ a)
        law = min_variance_law(m, k)
        assert law @ a == pytest.approx(m) and law.sum() == pytest.approx(1.0)
        var = law @ a**2 - m**2
        assert var == pytest.approx((m % 1) * (1 - m % 1), abs=1e-12)
        assert var <= other @ a**2 - m**2 + 1e-12


def test_calls_law_against_monte_carlo():
    law = iid_count_law(0.7, 3)
    exact = calls_law(law, 20)
    gen = np.random.default_rng(5)
    emitted = gen.choice(4, size=(20_000, 20), p=law) + 1  # tokens of each call, 20 calls suffice
    calls = np.argmax(np.cumsum(emitted, 1) >= 20, 1) + 1
    counts = np.bincount(calls, minlength=21).astype(float)
    mc = counts / counts.sum()
    se = np.sqrt(exact * (1 - exact) / counts.sum())
    assert np.all(np.abs(mc - exact) <= 5 * se + 1e-12)
    assert exact.sum() == pytest.approx(1.0)


def test_min_variance_schedule_thins_the_latency_tail():
    k, alpha, n = 4, 0.7, 64
    true = calls_law(iid_count_law(alpha, k), n)
    syn = calls_law(min_variance_law(float(iid_count_law(alpha, k) @ np.arange(k + 1)), k), n)
    c = np.arange(n + 1)

    def q(law, p):
        return int(np.searchsorted(np.cumsum(law), p))

    assert (syn @ c**2 - (syn @ c) ** 2) < 0.5 * (true @ c**2 - (true @ c) ** 2)
    assert q(syn, 0.99) < q(true, 0.99)


def test_controller_long_run_against_simulation_and_the_synthetic_shift():
    policy = HFSchedule(5, max_depth=8)
    alpha = 0.8
    true_laws = {k: iid_count_law(alpha, k) for k in range(1, 9)}
    syn_laws = {k: min_variance_law(float(true_laws[k] @ np.arange(k + 1)), k) for k in range(1, 9)}
    exact = controller_long_run(policy, true_laws)
    gen = np.random.default_rng(2)
    cdfs = {k: np.cumsum(law) for k, law in true_laws.items()}
    m, tokens, calls = policy.initial_memory, 0, 0
    for u in gen.random(30_000).tolist():
        k = m + 1
        a = min(int(np.searchsorted(cdfs[k], u, side="right")), k)
        tokens, calls = tokens + a + 1, calls + 1
        m = min(m + 2, 7) if a == k else max(m - 1, 0)  # HF's rule, written out independently
    assert tokens / calls == pytest.approx(exact.tokens_per_call, rel=0.02)
    synthetic = controller_long_run(policy, syn_laws)
    # the injected schedule starves the controller of full acceptances: it drafts less
    assert synthetic.mean_length < exact.mean_length - 1.0

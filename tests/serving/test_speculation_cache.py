"""Speculation caches (issue 39, item 4): the outcome law and hit probabilities against Monte
Carlo and brute force, the optimal fan-out against every allocation, the power-law test, and the
exact output law of SSD's hit and miss paths (Fractions)."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as st
from spectheory.serving.speculation_cache import (
    geometric_fanout,
    hit_probability,
    optimal_fanout,
    outcome_law,
    power_law_test,
    round_start_law,
)
from spectheory.serving.ssd_law import VARIANTS, saguaro_law, ssd_output_law, target_law
from spectheory.stopping.optimal import long_run_rate


def _chain(v=5, seed=0):
    return st.DecodingChain.random(v, concentration=0.6, similarity=0.6, rng=seed)


def _simulate_rounds(chain, k, start_state, n, rng):
    """Monte Carlo of one round from ``start_state`` (first-order chain): accepted count, the
    emitted token, and the state after the accepted drafts."""
    p, q = chain.target, chain.draft
    gen = np.random.default_rng(rng)
    cp, cq = np.cumsum(p, 1), np.cumsum(q, 1)
    s = np.full(n, start_state)
    a = np.zeros(n, dtype=int)
    alive = np.ones(n, dtype=bool)
    tok = np.full(n, -1)
    state_at = s.copy()
    for _ in range(k):
        x = np.minimum((gen.random(n)[:, None] > cq[s]).sum(1), chain.vocab_size - 1)
        ratio = p[s, x] / q[s, x]
        acc = gen.random(n) < ratio
        rej = alive & ~acc
        resid = np.maximum(p[s] - q[s], 0)
        resid /= np.maximum(resid.sum(1, keepdims=True), 1e-300)
        y = np.minimum((gen.random(n)[:, None] > np.cumsum(resid, 1)).sum(1), chain.vocab_size - 1)
        tok[rej] = y[rej]
        state_at[rej] = s[rej]
        alive &= acc
        a += alive
        s = np.where(alive, x, s)
    bonus = np.minimum((gen.random(n)[:, None] > cp[s]).sum(1), chain.vocab_size - 1)
    tok[alive] = bonus[alive]
    state_at[alive] = s[alive]
    return a, tok, state_at


def test_outcome_law_and_hit_probability_match_monte_carlo_within_5_se():
    chain, k, n = _chain(), 3, 200_000
    a, tok, state_at = _simulate_rounds(chain, k, 2, n, rng=1)
    law = outcome_law(chain, k, start=2)
    freq = np.zeros_like(law)
    np.add.at(freq, (a, tok), 1.0)
    freq /= n
    se = np.sqrt(law * (1 - law) / n)
    assert np.all(np.abs(freq - law) <= 5 * se + 1e-12)
    fan = [2, 1, 1, 3]
    order = np.argsort(-chain.draft, axis=1, kind="stable")
    hit = np.array([tok[i] in order[state_at[i], : fan[a[i]]] for i in range(n)])
    exact = hit_probability(chain, k, fan, start=2)
    assert abs(hit.mean() - exact) <= 5 * np.sqrt(exact * (1 - exact) / n)


def test_outcome_law_by_brute_force_over_draft_paths():
    chain, k = _chain(3, seed=4), 2
    p, q = chain.target, chain.draft
    law = np.zeros((k + 1, 3))
    for path in itertools.product(range(3), repeat=k):  # every drafted path, weighted by q
        weight = np.prod([q[s, x] for s, x in zip((1,) + path[:-1], path)])
        s, alive = 1, 1.0
        for j, x in enumerate(path):
            acc = min(1.0, p[s, x] / q[s, x])
            resid = np.maximum(p[s] - q[s], 0)
            if resid.sum() > 0:
                law[j] += weight * alive * (1 - acc) * resid / resid.sum()
            alive, s = alive * acc, x
        law[k] += weight * alive * p[s]
    np.testing.assert_allclose(law, outcome_law(chain, k, start=1), atol=1e-12)


def test_long_run_outcome_law_gives_the_long_run_tokens_per_call():
    for seed in range(4):
        chain = _chain(4, seed)
        for k in (1, 2, 4):
            law = outcome_law(chain, k)  # under round_start_law
            tokens = law.sum(1) @ (np.arange(k + 1) + 1.0)
            assert tokens == pytest.approx(long_run_rate(chain, k, 0.0), abs=1e-10)
            assert round_start_law(chain, k).sum() == pytest.approx(1.0)


def test_optimal_fanout_against_every_allocation():
    chain, k = _chain(4, seed=7), 2
    for guesses in ("draft", "oracle"):
        for budget in (0, 1, 3, 5):
            fan, best = optimal_fanout(chain, k, budget, guesses=guesses)
            assert sum(fan) <= budget
            assert hit_probability(chain, k, fan, guesses=guesses) == pytest.approx(best, abs=1e-12)
            brute = max(
                hit_probability(chain, k, list(f), guesses=guesses)
                for f in itertools.product(range(budget + 1), repeat=k + 1)
                if sum(f) <= budget
            )
            assert best == pytest.approx(brute, abs=1e-12)
    # oracle guesses dominate draft guesses at every allocation
    assert hit_probability(chain, k, [1, 1, 1], guesses="oracle") >= hit_probability(chain, k, [1, 1, 1])


def test_power_law_test_and_geometric_fanout():
    res = power_law_test(_chain(8, seed=3), 3, budget=8, max_fanout=6)
    assert res.geometric_hit <= res.optimal_hit + 1e-12
    assert sum(res.geometric_fanout) <= 8 and sum(res.optimal_fanout) <= 8
    assert np.isfinite(res.pooled_exponent) and res.worst_relative_error >= 0
    assert geometric_fanout([0.5, 0.25, 0.25], 4, 1.0, cap=4) == [2, 1, 1]
    with pytest.raises(ValueError, match="fanout"):
        hit_probability(_chain(), 3, [1, 1])
    with pytest.raises(ValueError, match="guesses"):
        hit_probability(_chain(), 1, [1, 1], guesses="psychic")


# --- the output law of SSD rounds -----------------------------------------------------------


def _random_rows(rng, v):
    rows = []
    for _ in range(v):
        w = [F(int(x)) for x in rng.integers(1, 6, size=v)]
        z = sum(w)
        rows.append([x / z for x in w])
    return rows


def test_ssd_is_lossless_when_the_ratio_uses_the_law_drawn_from():
    rng = np.random.default_rng(0)
    for _ in range(4):
        v = int(rng.integers(2, 4))
        p, q, backup = _random_rows(rng, v), _random_rows(rng, v), _random_rows(rng, v)
        fan = [int(x) for x in rng.integers(0, v + 1, size=3)]
        for saguaro in (None, (1, F(1, 3))):
            law = ssd_output_law(p, q, 2, 3, fan, backup=backup, saguaro=saguaro)
            assert law == target_law(p, 3), (fan, saguaro)


def test_ssd_bug_variants_are_biased():
    p = [[F(7, 10), F(3, 10)], [F(2, 5), F(3, 5)]]
    q = [[F(1, 2), F(1, 2)], [F(9, 10), F(1, 10)]]
    truth = target_law(p, 4)

    def tv(law):
        return sum(abs(law.get(x, 0) - truth.get(x, 0)) for x in set(law) | set(truth)) / 2

    assert tv(ssd_output_law(p, q, 2, 4, [1, 0, 1], variant="miss_uses_primary_q")) > 0
    assert (
        tv(ssd_output_law(p, q, 2, 4, [1, 0, 1], variant="saguaro_uses_original_q", saguaro=(1, F(1, 2)))) > 0
    )
    assert set(VARIANTS) == {"correct", "miss_uses_primary_q", "saguaro_uses_original_q"}
    sag = saguaro_law(q, 1, F(1, 2))
    assert all(sum(r) == 1 for r in sag) and sag[0][0] == F(1, 3)

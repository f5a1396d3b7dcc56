"""Naive HSD (the authors' backward=True, clever=False loop): exact law, counts, Monte Carlo, verdict.

Exact = the Fraction enumeration ``naive_hsd_round_law`` against the target's law and against
hand computations (``docs/sequence_rules.md``, Theorems 3-5); Monte Carlo within 5 SE.
"""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_mean_within_se

from spectheory.analysis.verdicts import RULE_CLAIMS, law_total_variation, protocol_accepted, settle_claims
from spectheory.verifiers.hsd_naive import (
    forward_law,
    naive_hsd_round_law,
    naive_hsd_round_stats,
    sample_naive_hsd_rounds,
)
from spectheory.verifiers.round_laws import generation_law, proposal_round_law, target_law

P, Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]
SUN_T, SUN_D = (lambda c: P), (lambda c: Q)


def table_fns(rng, V):
    def table():
        w = rng.integers(0, 4, size=(V, V)) + (rng.random((V, V)) < 0.5)
        w[w.sum(1) == 0, 0] = 1
        return [[F(int(x), int(r.sum())) for x in r] for r in w]

    fn = lambda tab: lambda c: tab[c[-1]] if c else tab[0]  # noqa: E731
    return fn(table()), fn(table())


def marginal(law, L):
    out = {}
    for e, w in law.items():
        out[e[:L]] = out.get(e[:L], 0) + w
    return out


def tv_first(t, d, V, g, L):
    law = generation_law(lambda c, k: naive_hsd_round_law(t, d, V, k, c), g, L)
    return law_total_variation(law, target_law(t, V, L))


def test_round_law_is_a_law_of_gamma_or_gamma_plus_one_tokens():
    for g in (1, 2, 3):
        law = naive_hsd_round_law(SUN_T, SUN_D, 2, g)
        assert sum(law.values()) == 1
        assert {len(e) for e in law} <= {g, g + 1}


def test_gamma_one_is_token_verification():
    rng = np.random.default_rng(0)
    for V in (2, 3):
        t, d = table_fns(rng, V)
        assert naive_hsd_round_law(t, d, V, 1) == proposal_round_law("token", t, d, V, 1)


def test_sun_gamma_three_is_biased_by_hand():
    """Theorem 4: no branch ever emits (1, 0) after a rejection, so P(X_1:2 = (1, 0)) = 4/27, not 2/9."""
    law = naive_hsd_round_law(SUN_T, SUN_D, 2, 3)
    assert sum(w for e, w in law.items() if e[:2] == (1, 0)) == F(4, 27)
    assert forward_law(SUN_T, SUN_D, 2, (), (1,)) == [0, 1]
    assert tv_first(SUN_T, SUN_D, 2, 3, 4) == F(2, 27)
    assert tv_first(SUN_T, SUN_D, 2, 2, 3) == 0  # gamma = 2 is lossless here (Theorem 3)


def test_binary_gamma_two_is_lossless():
    """Theorem 3: V = 2, gamma = 2 is lossless on every instance (random chains, two rounds)."""
    rng = np.random.default_rng(1)
    for _ in range(12):
        t, d = table_fns(rng, 2)
        assert tv_first(t, d, 2, 2, 4) == 0


def test_three_tokens_gamma_two_is_biased_by_the_formula():
    """Theorem 5: error on (x1, y) = D(x1) [norm((p - q)_+) - norm((r1 p - q)_+)](y)."""
    t, d = (lambda c: [F(0), F(1, 2), F(1, 2)]), (lambda c: [F(2, 3), F(0), F(1, 3)])
    law = marginal(naive_hsd_round_law(t, d, 3, 2), 2)
    p2 = target_law(t, 3, 2)
    err = {z: law.get(z, 0) - p2.get(z, 0) for z in itertools.product(range(3), repeat=2)}
    D = F(1, 3) * F(2, 3)  # q(2) sum_y (q(y) - (3/2) p(y))_+
    assert err[(2, 1)] == D * (F(3, 4) - F(9, 14)) == F(1, 42)
    assert err[(2, 2)] == -F(1, 42)
    assert all(v == 0 for z, v in err.items() if z[0] != 2)


def test_stats_count_calls_and_tokens():
    s = naive_hsd_round_stats(SUN_T, SUN_D, 2, 3)
    law = naive_hsd_round_law(SUN_T, SUN_D, 2, 3)
    assert s["tokens"] == sum(w * len(e) for e, w in law.items()) == F(2686, 729)
    assert s["target_calls"] == F(47, 27)
    assert s["draft_tokens"] == s["target_calls"] + 2
    assert naive_hsd_round_stats(SUN_T, SUN_D, 2, 1)["target_calls"] == 1


@pytest.mark.parametrize("V, g, seed", [(2, 3, 0), (3, 2, 5)])
def test_monte_carlo_within_5_se(V, g, seed):
    if seed:
        t, d = table_fns(np.random.default_rng(seed), V)
    else:
        t, d = SUN_T, SUN_D
    tf, df = (lambda c: [float(v) for v in t(c)]), (lambda c: [float(v) for v in d(c)])
    out = sample_naive_hsd_rounds(tf, df, V, g, 6000, rng=seed + 11)
    law = naive_hsd_round_law(t, d, V, g)
    stats = naive_hsd_round_stats(t, d, V, g)
    assert_mean_within_se([len(e) for e, _, _ in out], float(stats["tokens"]), "tokens")
    assert_mean_within_se([c for _, c, _ in out], float(stats["target_calls"]), "target calls")
    assert_mean_within_se([k for _, _, k in out], float(stats["accepted"]), "drafts kept")
    first = marginal(law, 2)
    for z, w in first.items():
        assert_mean_within_se([e[:2] == z for e, _, _ in out], float(w), f"P(first two = {z})")


def test_monte_carlo_sees_the_bias():
    tf, df = (lambda c: [1 / 3, 2 / 3]), (lambda c: [2 / 3, 1 / 3])
    hits = np.array([e[:2] == (1, 0) for e, _, _ in sample_naive_hsd_rounds(tf, df, 2, 3, 6000, rng=3)])
    se = hits.std(ddof=1) / np.sqrt(hits.size)
    assert abs(hits.mean() - 2 / 9) > 5 * se  # the target's P(1, 0) is rejected


def test_verdict_row_and_protocol_refusal():
    claim = [c for c in RULE_CLAIMS if c.name == "hsd_naive"]
    rows = settle_claims([("sun2", SUN_T, SUN_D, 2, 2), ("sun3", SUN_T, SUN_D, 2, 3)], claim)
    (row,) = rows
    assert row["verdict"] == "biased (claimed lossless)"
    cells = row["instances"]
    assert [c["tv"] for c in cells] == [0, F(2, 27)]
    assert [c["target_calls"] for c in cells] == [F(4, 3), F(47, 27)]
    assert cells[0]["mean_accepted"] == F(13, 9)
    with pytest.raises(ValueError, match="more than once"):
        protocol_accepted("hsd_naive", SUN_T, SUN_D, 2, 2, 4)


def test_played_against_models_it_counts_one_target_call_per_pass():
    """play_naive_hsd_round (one model call per pass: the kit's and the decoder's form) within 5 SE
    of the exact counts, and every round's calls are 1 + max(0, gamma - 1 - tau)."""
    from spectheory.verifiers.hsd_naive_round import play_naive_hsd_round

    t, d = table_fns(np.random.default_rng(5), 3)
    calls = {"target": 0}

    def laws(fn, who):
        def rows(toks):
            calls[who] = calls.get(who, 0) + 1
            return np.array([[float(v) for v in fn(toks[:i])] for i in range(len(toks) + 1)])

        return rows

    rng = np.random.default_rng(2)
    out = [play_naive_hsd_round(laws(t, "target"), laws(d, "draft"), 2, rng.random) for _ in range(1500)]
    assert calls["target"] == sum(r.target_calls for r in out)
    assert calls["draft"] == sum(r.draft_tokens for r in out)
    assert all(r.target_calls == 1 + max(0, 1 - r.tau) for r in out)
    stats = naive_hsd_round_stats(t, d, 3, 2)
    for name, values in (
        ("tokens", [len(r.emitted) for r in out]),
        ("target_calls", [r.target_calls for r in out]),
        ("draft_tokens", [r.draft_tokens for r in out]),
        ("accepted", [r.accepted for r in out]),
    ):
        assert_mean_within_se(values, float(stats[name]), name)

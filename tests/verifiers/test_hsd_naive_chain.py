"""Naive HSD as a registered whole-round Verifier: chain.protocol, st.simulate, bias on the chain."""

from fractions import Fraction as F
from functools import cache

import numpy as np
import pytest

import spectheory as st
from spectheory.verifiers import get_verifier
from spectheory.verifiers.hsd_naive import naive_hsd_round_law, naive_hsd_round_stats
from spectheory.verifiers.hsd_naive_chain import HSD_NAIVE
from spectheory.verifiers.round_laws import generation_law, target_law

# a first-order 2-state chain (state = last token, start in state 0), held in Fractions
P = [[F(1, 3), F(2, 3)], [F(3, 4), F(1, 4)]]
Q = [[F(2, 3), F(1, 3)], [F(1, 2), F(1, 2)]]
CHAIN = st.DecodingChain(
    [[float(v) for v in r] for r in P], [[float(v) for v in r] for r in Q], [1.0, 0.0], [[0, 1], [0, 1]]
)
SUN = st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3])


def _fns(last):
    state = lambda c: c[-1] if c else last  # noqa: E731
    return (lambda c: P[state(c)]), (lambda c: Q[state(c)])


def independent(T, g, bonus=True):
    """The protocol's counters by a recursion over round starts, in Fractions, from
    naive_hsd_round_law / naive_hsd_round_stats on the chain's rows (no chain engine)."""

    @cache
    def value(n, last):
        if n >= T:
            return (F(0),) * 4
        k = min(g, T - n)
        eb = bonus and n + k < T
        tf, df = _fns(last)
        calls = naive_hsd_round_stats(tf, df, 2, k)["target_calls"]
        out = [calls, k + calls - 1, F(0), F(0)]  # target calls, draft tokens, rejections, accepted
        for e, w in naive_hsd_round_law(tf, df, 2, k).items():
            kept = e if len(e) == k or eb else e[:k]
            rest = value(n + len(kept), kept[-1])
            out[2] += w * (len(e) == k)
            out[3] += w * min(len(e) - 1, k)
            out = [o + w * r for o, r in zip(out, rest)]
        return tuple(out)

    return value(0, 0)


def test_registered_and_not_a_path_rule():
    v = get_verifier("hsd_naive")
    assert v is HSD_NAIVE and not v.lossless
    t = np.tile([0.5, 0.5], (1, 3, 1))
    with pytest.raises(NotImplementedError, match="off the drafted path"):
        v.rule(t, t[:, :2], [[0, 1]], [2], [[0.1, 0.1]], [0.1])


@pytest.mark.parametrize("T, g", [(5, 2), (5, 3), (4, 3)])
def test_protocol_equals_independent_fractions(T, g):
    res = CHAIN.protocol(T, g, verifier="hsd_naive")
    want = independent(T, g)
    got = (res.target_calls, res.draft_tokens, res.rejections, res.accepted)
    assert np.allclose(got, [float(w) for w in want], rtol=0, atol=1e-12)
    assert res.extra_calls == pytest.approx(float(want[0]) - res.round_start_prob.sum(), abs=1e-12)


def test_one_round_target_calls_are_naive_hsd_round_stats():
    stats = naive_hsd_round_stats(lambda c: [F(1, 3), F(2, 3)], lambda c: [F(2, 3), F(1, 3)], 2, 3)
    res = SUN.protocol(3, 3, verifier="hsd_naive")  # one round of 3 drafts
    assert res.target_calls == pytest.approx(float(stats["target_calls"]), abs=1e-12)  # 47/27
    assert res.draft_tokens == pytest.approx(float(stats["draft_tokens"]), abs=1e-12)
    extra = HSD_NAIVE.round_extra_calls(SUN)(0, 3)
    assert extra[0] == pytest.approx(float(stats["target_calls"]) - 1, abs=1e-12)
    with pytest.raises(ValueError, match="t\\(k\\)"):
        res.time(st.Cost(0.1, target_call=lambda k: 1 + 0.1 * k))


def test_simulate_within_5_se():
    T, g = 5, 2
    res = CHAIN.protocol(T, g, verifier="hsd_naive")
    mc = st.simulate(CHAIN, T, g, 2000, verifier="hsd_naive", rng=11).summary()
    for name in ("target_calls", "draft_tokens", "rejections", "accepted"):
        m, se = mc[name]["mean"], mc[name]["se"]
        assert abs(m - getattr(res, name)) <= 5 * se + 1e-12, (name, m, se, getattr(res, name))


def test_biased_on_sun_example_through_the_chain_rows():
    # the verifier's round law on the chain's rows, composed into the law of the first 4 tokens
    law = generation_law(lambda c, k: HSD_NAIVE.chain_round_law(SUN, len(c), k, 0), 3, 4)
    tgt = target_law(lambda c: [F(1, 3), F(2, 3)], 2, 4)
    tv = sum(abs(float(law.get(s, 0)) - float(w)) for s, w in tgt.items()) / 2
    assert tv == pytest.approx(2 / 27, abs=1e-12)
    # the same TV in Fractions from the enumeration alone
    p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    exact = generation_law(lambda c, k: naive_hsd_round_law(p, q, 2, k, c), 3, 4)
    assert sum(abs(exact.get(s, 0) - w) for s, w in tgt.items()) / 2 == F(2, 27)


def test_lossless_at_gamma_1():
    law = generation_law(lambda c, k: HSD_NAIVE.chain_round_law(CHAIN, len(c), k, c[-1] if c else 0), 1, 4)
    tf, _ = _fns(0)
    for s, w in target_law(tf, 2, 4).items():
        assert float(law.get(s, 0)) == pytest.approx(float(w), abs=1e-12)
    a, b = CHAIN.protocol(6, 1, verifier="hsd_naive"), CHAIN.protocol(6, 1, verifier="token")
    assert a.extra_calls == 0 and np.allclose(a.accepted_counts, b.accepted_counts, atol=1e-12)

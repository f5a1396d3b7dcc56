"""Batch speculative decoding: unbiased first token, exact rejections, closed forms, limit, Monte Carlo."""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_frequencies, law_pair
from hypothesis import given, settings
from hypothesis import strategies as hst

import spectheory as st
from spectheory.analysis import (
    batch_expected_rejections,
    bernoulli_batch_rejection,
    uniform_batch_rejection,
)
from spectheory.trees import BatchRound
from spectheory.verifiers.batch_step import (
    batch_first_token,
    batch_first_token_masses,
    batch_limit_rejection,
    batch_rejection_probability,
    batch_scales,
    batch_verify_first,
    sample_batch_first_token,
)

SEEDS = hst.integers(0, 2**32 - 1)


def _fraction_batch(t, d, M):
    """Enumerate candidate tuples and accept/reject branches exactly; return (law, P(all rejected))."""
    V = len(t)
    out = [F(0)] * V
    all_rej = F(0)
    for cands in itertools.product(range(V), repeat=M):
        w = F(1)
        for x in cands:
            w *= d[x]
        if w == 0:
            continue
        r = list(t)
        for x in cands:
            acc = min(F(1), r[x] / d[x])
            out[x] += w * acc
            w *= 1 - acc
            ex = [max(r[y] - d[y], F(0)) for y in range(V)]
            z = sum(ex)
            r = [e / z for e in ex] if z > 0 else r
        all_rej += w
        for y in range(V):
            out[y] += w * r[y]
    return out, all_rej


@pytest.mark.parametrize("M", [1, 2, 3])
def test_first_token_matches_fraction_enumeration(M):
    t = [F(1, 10), F(3, 5), F(3, 10)]
    d = [F(1, 2), F(1, 5), F(3, 10)]
    law, rej = _fraction_batch(t, d, M)
    assert law == t  # unbiased, exactly
    tf, df = np.array(t, dtype=float), np.array(d, dtype=float)
    step = batch_first_token(tf, df, M)
    np.testing.assert_allclose(step.output, tf, atol=1e-12)
    np.testing.assert_allclose(step.rejection, float(rej), atol=1e-12)
    np.testing.assert_allclose(batch_rejection_probability(tf, df, M), float(rej), atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(SEEDS, hst.integers(1, 6))
def test_first_token_properties(seed, M):
    t, d = law_pair(seed)
    step = batch_first_token(t, d, M)
    np.testing.assert_allclose(step.output, t, atol=1e-10)  # unbiased
    z = batch_rejection_probability(t, d, M)
    np.testing.assert_allclose(step.rejection, z, atol=1e-10)  # product form == scale form
    acc, rej = batch_first_token_masses(t, d, M)
    np.testing.assert_allclose(acc, step.candidate_accepted.sum(0), atol=1e-10)
    np.testing.assert_allclose(acc + rej, t, atol=1e-12)
    tv = float(st.tv(t, d))
    zs = [batch_rejection_probability(t, d, m) for m in range(1, M + 2)]
    np.testing.assert_allclose(zs[0], tv, atol=1e-12)  # M = 1 is standard
    assert all(a >= b - 1e-12 for a, b in zip(zs, zs[1:]))  # decreasing in M
    assert zs[-1] >= batch_limit_rejection(t, d) - 1e-12  # above the limit


def test_limit_is_reached_or_approached():
    t, d = np.array([0.3, 0.5, 0.2]), np.array([0.6, 0.4, 0.0])
    lim = batch_limit_rejection(t, d)
    assert lim == pytest.approx(0.2)
    assert batch_rejection_probability(t, d, 60) == pytest.approx(lim, abs=1e-12)
    assert batch_rejection_probability(t, d, np.inf) == lim
    t2, d2 = np.array([0.3, 0.5, 0.2]), np.array([0.6, 0.3, 0.1])  # full support: -> 0
    assert batch_rejection_probability(t2, d2, 200) < 1e-6


CHAINS = [st.DecodingChain.random(4, rng=21), st.DecodingChain.random(3, n_states=4, horizon=8, rng=22)]


def test_rejections_do_not_vanish_outside_support():
    # draft misses token 2 in every state: the limit keeps that mass at every round start
    t = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.4, 0.4, 0.2]])
    d = np.array([[0.7, 0.3, 0.0], [0.5, 0.5, 0.0], [0.2, 0.8, 0.0]])
    chain = st.DecodingChain(t, d)
    lim = batch_expected_rejections(chain, 6, np.inf)
    marg0 = chain.initial @ t[:, 2]
    assert lim.total >= marg0 > 0


def test_verify_first_on_hand_picked_uniforms():
    tok, rej, idx = batch_verify_first(
        [[0.2, 0.5], [0.2, 0.5], [0.9, 1.0]],
        [[1, 2], [1, 2], [0, 0]],
        [[0.0, 0.0, 0.0, 1.0]] * 3,
        [[0.3, 0.6], [0.3, 0.4], [0.1, 0.9]],
        [0.5, 0.5, 0.5],
    )
    assert tok.tolist() == [3, 2, 0] and rej.tolist() == [True, False, False]
    assert idx.tolist() == [2, 1, 0]


def test_first_token_sampler():
    t, d = np.array([0.3, 0.5, 0.2, 0.0]), np.array([0.6, 0.3, 0.0, 0.1])
    n, M = 100_000, 3
    tok, rej, idx = sample_batch_first_token(t, d, M, n, rng=19)
    step = batch_first_token(t, d, M)
    freq = np.bincount(tok, minlength=4) / n
    assert_frequencies(freq, t, n, "first token")  # seed fixed
    reach = np.bincount(idx, minlength=M + 1) / n  # which candidate won
    won = np.append(step.reach[:-1] - step.reach[1:], step.reach[-1])
    assert np.all(np.abs(reach - won) <= 5 * np.sqrt(won * (1 - won) / n) + 1e-12)
    assert np.array_equal(rej, idx == M)


def test_sampled_sequences_follow_the_target():
    chain = st.DecodingChain.random(2, rng=4)
    T, n = 3, 60_000
    sim = st.simulate(chain, T, BatchRound(3), n, rng=8, return_tokens=True)
    idx = sim.tokens @ (2 ** np.arange(T)[::-1])
    freq = np.bincount(idx, minlength=2**T) / n
    law = np.zeros(2**T)
    for i, seq in enumerate(itertools.product(range(2), repeat=T)):
        p = 0.0
        for s0 in range(2):
            q = chain.initial[s0]
            s = s0
            for x in seq:
                q *= chain.target[s, x]
                s = x
            p += q
        law[i] = p
    assert_frequencies(freq, law, n, "winning candidate")  # seed fixed


def test_bad_input():
    t, d = [0.5, 0.5], [0.9, 0.1]
    for bad in (0, -1, 1.5):
        with pytest.raises(ValueError, match="M"):
            batch_rejection_probability(t, d, bad)
    with pytest.raises(ValueError, match="M"):
        batch_expected_rejections(CHAINS[0], 4, 0)
    with pytest.raises(ValueError, match="gamma"):
        batch_expected_rejections(CHAINS[0], 4, 2, gamma=0)
    with pytest.raises(ValueError, match="gamma"):
        st.simulate(CHAINS[0], 4, BatchRound(2, 0), 10, rng=0)
    with pytest.raises(ValueError, match="overlap"):
        uniform_batch_rejection(2, 3, 3, 2)
    with pytest.raises(ValueError, match="p_target"):
        bernoulli_batch_rejection(1.2, 0.5, 2)
    with pytest.raises(ValueError, match="draft"):
        batch_scales(t, [0.5, 0.6], 2)


def test_batch_verify_first_rejects_bad_input():
    ok = dict(
        candidate_accept_prob=[[0.2, 0.5]],
        candidates=[[1, 2]],
        final_law=[[0.0, 0.0, 0.0, 1.0]],
        u_accept=[[0.3, 0.6]],
        u_final=[0.5],
    )
    for name, bad in (
        ("candidate_accept_prob", [[0.2, 1.5]]),
        ("candidate_accept_prob", [[np.nan, 0.5]]),
        ("candidates", [[1, 4]]),
        ("candidates", [[-1, 2]]),
        ("final_law", [[-0.5, 0.5, 0.0, 1.0]]),
        ("final_law", [[np.nan, 0.0, 0.0, 1.0]]),
        ("u_accept", [[0.3]]),
    ):
        with pytest.raises(ValueError, match=name):
            batch_verify_first(**{**ok, name: bad})


def test_limit_drafts_infinitely_many_tokens():
    """M = inf is the limit of infinitely many drafts per round: draft_tokens is inf (it used
    to report k per round, the count of a single draft)."""
    chain = CHAINS[0]
    assert batch_expected_rejections(chain, 6, np.inf, gamma=3, bonus=False).draft_tokens == np.inf
    two = batch_expected_rejections(chain, 6, 2, gamma=3, bonus=False)
    assert np.isfinite(two.draft_tokens) and two.draft_tokens >= 2 * two.target_calls


def test_single_run_standard_error_is_nan_like_mean_and_se():
    from spectheory.montecarlo import mean_and_se

    sim = st.simulate(CHAINS[0], 4, BatchRound(2, 2), 1, rng=0)
    for name in ("rejections", "target_calls", "draft_tokens", "accepted"):
        assert sim.mean(name) == mean_and_se(getattr(sim, name))[0]
        assert np.isnan(sim.se(name)) and np.isnan(mean_and_se(getattr(sim, name))[1])

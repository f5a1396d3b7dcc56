"""Batch decoding with M drafts, analysed: the Bernoulli and uniform closed forms, the i.i.d. horizon
formula, and the exact expected rejections on a chain against the recursion and Monte Carlo."""

import numpy as np
import pytest
from _helpers import assert_positional_mc

import spectheory as st
from spectheory.analysis import (
    batch_expected_rejections,
    bernoulli_batch_rejection,
    iid_batch_expected_rejections,
    uniform_batch_rejection,
)
from spectheory.trees import BatchRound
from spectheory.verifiers.batch_step import batch_limit_rejection, batch_rejection_probability
from spectheory.verifiers.rejection import rule_expected_rejections, standard_rule


@pytest.mark.parametrize("a,b", [(0.7, 0.4), (0.2, 0.9), (0.5, 0.5), (1.0, 0.0), (0.3, 0.0)])
def test_bernoulli_closed_form(a, b):
    for M in (1, 2, 5, 9):
        np.testing.assert_allclose(
            bernoulli_batch_rejection(a, b, M),
            batch_rejection_probability([1 - a, a], [1 - b, b], M),
            atol=1e-12,
        )
    lim = bernoulli_batch_rejection(a, b, np.inf)
    np.testing.assert_allclose(lim, batch_limit_rejection([1 - a, a], [1 - b, b]), atol=1e-12)


@pytest.mark.parametrize("a,b,k", [(2, 4, 2), (3, 5, 2), (4, 3, 2), (3, 3, 1), (2, 2, 0), (5, 2, 2)])
def test_uniform_closed_form(a, b, k):
    V = a + b - k
    t = np.zeros(V)
    d = np.zeros(V)
    t[:a] = 1 / a
    d[a - k : a - k + b] = 1 / b
    for M in (1, 2, 3, 7):
        np.testing.assert_allclose(
            uniform_batch_rejection(a, b, k, M), batch_rejection_probability(t, d, M), atol=1e-12
        )
    np.testing.assert_allclose(uniform_batch_rejection(a, b, k, np.inf), batch_limit_rejection(t, d))


@pytest.mark.parametrize(
    "t,d", [([0.3, 0.7], [0.6, 0.4]), ([0.5, 0.5, 0.0, 0.0], [0.25] * 4), ([0.2, 0.3, 0.5], [0.5, 0.5, 0.0])]
)
def test_iid_chain_closed_form_against_recursion(t, d):
    chain = st.DecodingChain.iid(t, d)
    tv = float(st.tv(t, d))
    for M in (1, 2, 4, np.inf):
        res = batch_expected_rejections(chain, 9, M)
        total, imp = iid_batch_expected_rejections(tv, batch_rejection_probability(t, d, M), 9)
        np.testing.assert_allclose([res.total, res.improvement], [total, imp], atol=1e-12)


CHAINS = [st.DecodingChain.random(4, rng=21), st.DecodingChain.random(3, n_states=4, horizon=8, rng=22)]


@pytest.mark.parametrize("chain", CHAINS)
def test_chain_decomposition_and_monotonicity(chain):
    T = 8
    std = rule_expected_rejections(chain, T, standard_rule())
    one = batch_expected_rejections(chain, T, 1, gamma=3, bonus=False)
    np.testing.assert_allclose([one.total, one.improvement], [std, 0.0], atol=1e-12)
    prev = one
    for M in (2, 4, 8):
        for gamma, bonus in ((None, False), (3, False), (3, True)):
            r = batch_expected_rejections(chain, T, M, gamma=gamma, bonus=bonus)
            np.testing.assert_allclose(r.total, r.checked_tv - r.improvement, rtol=1e-12)
            assert r.improvement >= 0
            if not bonus:
                np.testing.assert_allclose(r.theorem1, std, rtol=1e-12)
                np.testing.assert_allclose(r.checked_tv, r.theorem1, rtol=1e-12)
        r = batch_expected_rejections(chain, T, M, gamma=3, bonus=False)
        assert r.total < prev.total and r.improvement > prev.improvement
        prev = r
    lim = batch_expected_rejections(chain, T, np.inf, gamma=3, bonus=False)
    assert 0 < lim.total <= prev.total


@pytest.mark.parametrize("gamma,bonus,M", [(None, False, 3), (3, False, 2), (2, True, 4)])
def test_exact_vs_monte_carlo(gamma, bonus, M):
    chain = CHAINS[1]
    T, n = 8, 20_000
    exact = batch_expected_rejections(chain, T, M, gamma=gamma, bonus=bonus)
    sim = st.simulate(chain, T, BatchRound(M, gamma), n, rng=17, bonus=bonus)
    assert_positional_mc(
        sim,
        exact.total,
        exact.target_calls,
        exact.draft_tokens,  # 5 SE, seed fixed
        exact.rejection_profile,
    )

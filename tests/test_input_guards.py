"""Sizes are refused before memory is touched; wrong types get a clear TypeError (issue 14)."""

import time

import numpy as np
import pytest

import spectheory as st


def test_simulate_wants_a_chain_not_a_matrix():
    with pytest.raises(TypeError, match="DecodingChain"):
        st.simulate(np.ones((3, 3)) / 3, 4, 2, 10)


def test_simulate_refuses_runs_that_do_not_fit_in_memory():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match=r"n_runs: .* GiB"):
        st.simulate(chain, 4, 2, 10**9)  # was MemoryError after allocating


def test_simulate_bonus_must_be_a_bool():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="bonus"):
        st.simulate(chain, 4, 2, 10, bonus="no")


def test_random_chain_refuses_a_huge_vocabulary_before_allocating():
    with pytest.raises(ValueError, match=r"vocab_size: .* GiB"):
        st.DecodingChain.random(100000)  # tried to allocate 74.5 GiB
    with pytest.raises(ValueError, match=r"n_states: .* GiB"):
        st.DecodingChain.random(50, n_states=10**9)


def test_gamma_beyond_the_horizon_is_capped():
    """k = min(gamma, T - n) <= T: gamma = 10**9 is gamma = T (it allocated 7.45 GiB)."""
    chain = st.DecodingChain.random(4, rng=1)
    t0 = time.perf_counter()
    huge = chain.expected_target_calls(8, 10**9)
    assert time.perf_counter() - t0 < 5
    np.testing.assert_allclose(huge, chain.expected_target_calls(8, 8), rtol=1e-14)
    np.testing.assert_allclose(
        chain.expected_draft_tokens(8, 10**9), chain.expected_draft_tokens(8, 8), rtol=1e-14
    )

"""Leviathan et al. closed forms under i.i.d. acceptance."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import spectheory as st


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.9, 1.0])
@pytest.mark.parametrize("gamma", [1, 2, 5])
def test_tokens_per_call_is_mean_of_capped_geometric(alpha, gamma):
    law = st.iid_accepted_count_law(alpha, gamma)
    np.testing.assert_allclose(law.sum(), 1.0, atol=1e-14)
    mean_tokens = (law * (np.arange(gamma + 1) + 1)).sum()
    np.testing.assert_allclose(st.iid_tokens_per_call(alpha, gamma), mean_tokens, atol=1e-12)
    if alpha < 1:
        np.testing.assert_allclose(
            st.iid_tokens_per_call(alpha, gamma), (1 - alpha ** (gamma + 1)) / (1 - alpha), atol=1e-12
        )


def test_edges_alpha_zero_one():
    assert st.iid_tokens_per_call(1.0, 4) == 5.0
    assert st.iid_tokens_per_call(0.0, 4) == 1.0
    assert st.iid_speedup(1.0, 4, 0.0) == 5.0


def test_optimal_gamma_is_exact_integer_argmax():
    for alpha in np.linspace(0.05, 0.99, 25):
        for c in [0.01, 0.05, 0.2, 0.5, 0.9]:
            g = st.iid_optimal_gamma(alpha, c)
            grid = np.arange(1, 400)
            s = np.array([st.iid_speedup(alpha, k, c) for k in grid])
            assert g == grid[np.argmax(s)]


def test_gamma_one_helps_iff_alpha_above_c():
    for alpha, c in [(0.3, 0.2), (0.2, 0.3), (0.8, 0.1)]:
        assert (st.iid_speedup(alpha, 1, c) > 1) == (alpha > c)
        np.testing.assert_allclose(st.iid_speedup(alpha, 1, c), (1 + alpha) / (1 + c))


def test_unbounded_needs_max_gamma():
    with pytest.raises(ValueError, match="max_gamma"):
        st.iid_optimal_gamma(1.0, 0.1)
    assert st.iid_optimal_gamma(1.0, 0.1, max_gamma=50) == 50


def test_operations_factor():
    a, g, ch = 0.7, 3, 0.1
    np.testing.assert_allclose(
        st.iid_operations_factor(a, g, ch), (1 - a) * (g * ch + g + 1) / (1 - a ** (g + 1))
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda: st.iid_tokens_per_call(1.2, 3),
        lambda: st.iid_tokens_per_call(0.5, -1),
        lambda: st.iid_speedup(0.5, 0, 0.1),
        lambda: st.iid_speedup(0.5, 2, -0.1),
        lambda: st.iid_accepted_count_law(np.nan, 2),
    ],
)
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()


@pytest.mark.parametrize("alpha,c", [([0.5, 0.8], 0.1), (0.5, [0.1, 0.2]), (np.array([0.5]), 0.1)])
def test_optimal_gamma_array_input_raises_value_error(alpha, c):
    with pytest.raises(ValueError, match="scalar"):
        st.iid_optimal_gamma(alpha, c)


def _argmax_by_cumsum(alpha, c, n):
    """Independent brute force: S(g) = cumsum(alpha^i) / (g c + 1) on g = 1..n (first max)."""
    e = np.cumsum(alpha ** np.arange(n + 1))[1:]
    g = np.arange(1, n + 1)
    return int(g[np.argmax(e / (g * c + 1.0))])


@given(hst.floats(0.0, 0.9999), hst.floats(1e-5, 2.0))
@settings(max_examples=200, deadline=None)
def test_optimal_gamma_matches_brute_force_over_a_wide_range(alpha, c):
    g = st.iid_optimal_gamma(alpha, c)
    n = 200_000
    assert g < n
    assert g == _argmax_by_cumsum(alpha, c, n) or st.iid_speedup(alpha, g, c) == pytest.approx(
        st.iid_speedup(alpha, _argmax_by_cumsum(alpha, c, n), c), rel=1e-13
    )  # a rounding tie


def test_optimal_gamma_is_fast_near_alpha_one():
    """alpha = 0.999999, c = 1e-7: the argmax is about 2.6 million (the old step-up loop took
    seconds). S is quasi-concave, so a strict local maximum (ties to the smaller gamma) is the
    argmax; checked with 60-digit arithmetic (float64 cannot resolve S this close to its peak)."""
    import time

    import mpmath

    start = time.perf_counter()
    g = st.iid_optimal_gamma(0.999999, 1e-7)
    assert time.perf_counter() - start < 0.5
    assert 1_000_000 < g < 5_000_000
    with mpmath.workdps(60):
        a, c = mpmath.mpf(0.999999), mpmath.mpf(1e-7)

        def speedup(n):
            return (1 - a ** (n + 1)) / ((1 - a) * (n * c + 1))

        assert speedup(g) > speedup(g - 1) and speedup(g) >= speedup(g + 1)
    assert st.iid_optimal_gamma(0.999999, 1e-7, max_gamma=1000) == 1000
    assert st.iid_optimal_gamma(0.5, 0.0, max_gamma=77) == 77  # unbounded: S increases forever

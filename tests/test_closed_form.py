"""Leviathan et al. closed forms under i.i.d. acceptance."""
import numpy as np
import pytest

import spectheory as st


@pytest.mark.parametrize("alpha", [0.0, 0.3, 0.9, 1.0])
@pytest.mark.parametrize("gamma", [1, 2, 5])
def test_tokens_per_call_is_mean_of_capped_geometric(alpha, gamma):
    law = st.accepted_count_law(alpha, gamma)
    np.testing.assert_allclose(law.sum(), 1.0, atol=1e-14)
    mean_tokens = (law * (np.arange(gamma + 1) + 1)).sum()
    np.testing.assert_allclose(st.expected_tokens_per_call(alpha, gamma), mean_tokens, atol=1e-12)
    if alpha < 1:
        np.testing.assert_allclose(st.expected_tokens_per_call(alpha, gamma),
                                   (1 - alpha ** (gamma + 1)) / (1 - alpha), atol=1e-12)


def test_edges_alpha_zero_one():
    assert st.expected_tokens_per_call(1.0, 4) == 5.0
    assert st.expected_tokens_per_call(0.0, 4) == 1.0
    assert st.walltime_speedup(1.0, 4, 0.0) == 5.0


def test_optimal_gamma_is_exact_integer_argmax():
    for alpha in np.linspace(0.05, 0.99, 25):
        for c in [0.01, 0.05, 0.2, 0.5, 0.9]:
            g = st.optimal_gamma(alpha, c)
            grid = np.arange(1, 400)
            s = np.array([st.walltime_speedup(alpha, k, c) for k in grid])
            assert g == grid[np.argmax(s)]


def test_gamma_one_helps_iff_alpha_above_c():
    for alpha, c in [(0.3, 0.2), (0.2, 0.3), (0.8, 0.1)]:
        assert (st.walltime_speedup(alpha, 1, c) > 1) == (alpha > c)
        np.testing.assert_allclose(st.walltime_speedup(alpha, 1, c), (1 + alpha) / (1 + c))


def test_unbounded_needs_max_gamma():
    with pytest.raises(ValueError, match="max_gamma"):
        st.optimal_gamma(1.0, 0.1)
    assert st.optimal_gamma(1.0, 0.1, max_gamma=50) == 50


def test_operations_factor():
    a, g, ch = 0.7, 3, 0.1
    np.testing.assert_allclose(st.arithmetic_operations_factor(a, g, ch),
                               (1 - a) * (g * ch + g + 1) / (1 - a ** (g + 1)))


@pytest.mark.parametrize("call", [
    lambda: st.expected_tokens_per_call(1.2, 3),
    lambda: st.expected_tokens_per_call(0.5, -1),
    lambda: st.walltime_speedup(0.5, 0, 0.1),
    lambda: st.walltime_speedup(0.5, 2, -0.1),
    lambda: st.accepted_count_law(np.nan, 2),
])
def test_bad_input_raises(call):
    with pytest.raises(ValueError):
        call()

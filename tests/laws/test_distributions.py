"""Single-step theory: tv, acceptance, residual, one-step law, coupling, validation."""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

import spectheory as st


def _law(rng, V, kind):
    if kind == "dirichlet":
        return rng.dirichlet(np.full(V, 0.5))
    if kind == "sparse":
        x = rng.dirichlet(np.full(V, 0.5)) * (rng.random(V) < 0.5)
        if x.sum() == 0:
            x[rng.integers(V)] = 1.0
        return x / x.sum()
    if kind == "onehot":
        x = np.zeros(V)
        x[rng.integers(V)] = 1.0
        return x
    if kind == "tiny":  # float32-tiny entries next to large ones
        x = np.full(V, np.finfo(np.float32).tiny)
        x[rng.integers(V)] = 1.0
        return x / x.sum()
    raise AssertionError(kind)


KINDS = ["dirichlet", "sparse", "onehot", "tiny"]
pairs = hst.tuples(
    hst.integers(0, 2**32 - 1),
    hst.integers(1, 12),
    hst.sampled_from(KINDS),
    hst.sampled_from(KINDS + ["equal"]),
)


def _pair(seed, V, kt, kd):
    rng = np.random.default_rng(seed)
    t = _law(rng, V, kt)
    d = t.copy() if kd == "equal" else _law(rng, V, kd)
    return t, d


@settings(max_examples=200, deadline=None)
@given(pairs, hst.integers(0, 2**32 - 1))
def test_tv_is_a_metric_in_unit_interval(pair, seed3):
    t, d = _pair(*pair)
    third = np.random.default_rng(seed3).dirichlet(np.ones(t.size))
    assert 0.0 <= st.tv(t, d) <= 1.0
    assert st.tv(t, t) == 0.0
    assert st.tv(t, d) == pytest.approx(st.tv(d, t), abs=1e-15)
    assert st.tv(t, third) <= st.tv(t, d) + st.tv(d, third) + 1e-12


@settings(max_examples=200, deadline=None)
@given(pairs)
def test_acceptance_is_one_minus_tv_and_step_law_is_target(pair):
    t, d = _pair(*pair)
    np.testing.assert_allclose(st.acceptance_rate(t, d), 1.0 - st.tv(t, d), atol=1e-12)
    r = st.residual(t, d)
    assert np.all(r >= 0) and np.isfinite(r).all()
    np.testing.assert_allclose(r.sum(), 1.0, atol=1e-12)
    np.testing.assert_allclose(st.speculative_step_law(t, d), t, atol=1e-12)


@settings(max_examples=100, deadline=None)
@given(pairs)
def test_maximal_coupling_marginals_and_agreement(pair):
    t, d = _pair(*pair)
    pi = st.maximal_coupling(d, t)
    np.testing.assert_allclose(pi.sum(axis=1), d, atol=1e-12)
    np.testing.assert_allclose(pi.sum(axis=0), t, atol=1e-12)
    np.testing.assert_allclose(np.trace(pi), st.acceptance_rate(t, d), atol=1e-12)


def test_residual_of_equal_laws_is_target():
    t = np.array([0.2, 0.3, 0.5])
    np.testing.assert_array_equal(st.residual(t, t), t)


def test_batched_over_leading_axes():
    rng = np.random.default_rng(0)
    t = rng.dirichlet(np.ones(5), size=(3, 4))
    d = rng.dirichlet(np.ones(5), size=(3, 4))
    out = st.tv(t, d)
    assert out.shape == (3, 4)
    np.testing.assert_allclose(out[1, 2], st.tv(t[1, 2], d[1, 2]))
    assert st.residual(t, d).shape == (3, 4, 5)


def test_step_law_exact_with_fractions():
    t = [Fraction(1, 6), Fraction(1, 2), Fraction(1, 3)]
    d = [Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)]
    acc = [min(a, b) for a, b in zip(t, d)]
    rho = 1 - sum(acc)
    exc = [max(a - b, 0) for a, b in zip(t, d)]
    law = [a + rho * e / sum(exc) for a, e in zip(acc, exc)]
    assert law == t
    np.testing.assert_allclose(
        st.speculative_step_law(np.array(t, float), np.array(d, float)), np.array(law, float), atol=1e-15
    )


@pytest.mark.parametrize(
    "bad, match",
    [
        ([0.5, -0.1, 0.6], "negative"),
        ([0.5, np.nan, 0.5], "NaN"),
        ([0.5, np.inf, 0.5], "NaN or infinite"),
        ([0.5, 0.4], "sum to 1"),
        ([], "empty"),
    ],
)
def test_bad_laws_raise_naming_argument(bad, match):
    with pytest.raises(ValueError, match="target.*" + match):
        st.tv(bad, [0.5, 0.5] if len(bad) != 3 else [0.2, 0.3, 0.5])


def test_shape_mismatch_raises():
    with pytest.raises(ValueError, match="shape mismatch"):
        st.acceptance_rate([0.5, 0.5], [0.2, 0.3, 0.5])

"""Fraction enumeration of the protocol against the float recursions (tiny cases).

The enumeration (spectheory.exact.enumeration) walks every draft token and accept/reject branch
with fractions.Fraction; the recursions (spectheory.exact.expectations) never enumerate. Chains have
dyadic entries (k / 16), exact in float64, so their rows sum to exactly 1 as Fractions and
losslessness must hold *exactly*.
"""

from fractions import Fraction

import numpy as np
import pytest

import spectheory as st
import spectheory.exact as analysis
from spectheory.exact.enumeration import (
    accepted_histogram,
    outcome_expectation,
    outcome_sequence_law,
    protocol_outcomes,
    target_sequence_law_exact,
)


def dyadic_laws(rng, shape, denom=16):
    """Random laws with entries k/denom (zeros included), shape (..., V)."""
    *lead, V = shape
    cuts = np.sort(rng.integers(0, denom + 1, size=tuple(lead) + (V - 1,)), axis=-1)
    edges = np.concatenate(
        [np.zeros(tuple(lead) + (1,), int), cuts, np.full(tuple(lead) + (1,), denom)], axis=-1
    )
    return np.diff(edges, axis=-1) / denom


def homogeneous(seed, V=2):
    rng = np.random.default_rng(seed)
    return st.DecodingChain(
        dyadic_laws(rng, (V, V)), dyadic_laws(rng, (V, V)), initial=dyadic_laws(rng, (V,))
    )


def inhomogeneous(seed, T=3, V=2, S=3):
    rng = np.random.default_rng(seed)
    ns = rng.integers(0, S, size=(S, V))
    return st.DecodingChain(
        dyadic_laws(rng, (T, S, V)),
        dyadic_laws(rng, (T, S, V)),
        initial=dyadic_laws(rng, (S,)),
        next_state=ns,
    )


def order2(seed, V=2):
    rng = np.random.default_rng(seed)
    S = V * V
    ns = (np.arange(S)[:, None] * V + np.arange(V)[None, :]) % S
    return st.DecodingChain(
        dyadic_laws(rng, (S, V)), dyadic_laws(rng, (S, V)), initial=dyadic_laws(rng, (S,)), next_state=ns
    )


def prefix_tree(seed, T=3):
    rng = np.random.default_rng(seed)
    table_t = {p: dyadic_laws(rng, (2,)) for p in [(), (0,), (1,), (0, 0), (0, 1), (1, 0), (1, 1)]}
    table_d = {p: dyadic_laws(rng, (2,)) for p in table_t}
    return st.DecodingChain.prefix_tree(lambda p: table_t[p], lambda p: table_d[p], 2, T)


CASES = [
    ("homogeneous V=2", lambda: homogeneous(0), 4),
    ("homogeneous V=3", lambda: homogeneous(1, V=3), 3),
    ("inhomogeneous S=3 V=2", lambda: inhomogeneous(2), 3),
    ("order-2 n-gram V=2", lambda: order2(3), 4),
    ("prefix tree V=2", lambda: prefix_tree(4), 3),
]


@pytest.mark.parametrize("name, make, T", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("gamma", [1, 3])
@pytest.mark.parametrize("bonus", [False, True])
def test_enumeration_agrees_with_recursion(name, make, T, gamma, bonus):
    chain = make()
    out = protocol_outcomes(chain, T, gamma, bonus)
    assert sum(out.values()) == 1
    res = chain.protocol(T, gamma, bonus=bonus)
    for field, value in [
        ("calls", res.target_calls),
        ("rejections", res.rejections),
        ("draft_tokens", res.draft_tokens),
    ]:
        np.testing.assert_allclose(
            float(outcome_expectation(out, field)), value, rtol=0, atol=1e-12, err_msg=field
        )
    hist = [float(h) for h in accepted_histogram(out, gamma)]
    np.testing.assert_allclose(hist, res.accepted_counts, rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.accepted_count_law, np.array(hist) / sum(hist), atol=1e-12)
    # exact losslessness: the generated law equals the target law as Fractions
    spec = outcome_sequence_law(out)
    target = target_sequence_law_exact(chain, T)
    assert spec == target
    # and the float sequence law (prefix-augmented phase recursion) agrees with both
    law = chain.sequence_law(T, gamma=gamma, bonus=bonus)
    dense = np.zeros_like(law)
    for toks, p in target.items():
        dense[toks] = float(p)
    np.testing.assert_allclose(law, dense, rtol=0, atol=1e-15)
    np.testing.assert_allclose(chain.sequence_law(T, method="target"), dense, rtol=0, atol=1e-15)


@pytest.mark.parametrize("name, make, T", CASES[:4], ids=[c[0] for c in CASES[:4]])
def test_theorem1_exact_in_fractions(name, make, T):
    """bonus=False: E[rejections] == sum_n E[TV_n] exactly, for every gamma."""
    chain = make()

    # exact Fraction sum: walk the target prefixes with their state, adding TV at each step
    def walk(n, s, prob):
        nonlocal exact
        if n == T:
            return
        t, d = chain.kernels(n)
        tv = sum(abs(Fraction(float(a)) - Fraction(float(b))) for a, b in zip(t[s], d[s])) / 2
        exact += prob * tv
        for y in range(chain.vocab_size):
            py = Fraction(float(t[s, y]))
            if py:
                walk(n + 1, int(chain.next_state[s, y]), prob * py)

    exact = Fraction(0)
    for s0 in range(chain.n_states):
        if chain.initial[s0]:
            walk(0, s0, Fraction(float(chain.initial[s0])))
    for gamma in (1, 2, 3):
        out = protocol_outcomes(chain, T, gamma, bonus=False)
        assert outcome_expectation(out, "rejections") == exact
    np.testing.assert_allclose(chain.rejection_lower_bound(T), float(exact), rtol=0, atol=1e-12)


@pytest.mark.parametrize("scale", [Fraction(1, 2), Fraction(7, 8)])
def test_scaled_verifier_lossless_and_worse_in_fractions(scale):
    chain = homogeneous(5, V=3)
    T, gamma = 3, 2
    out = protocol_outcomes(chain, T, gamma, bonus=False, accept_scale=scale)
    assert outcome_sequence_law(out) == target_sequence_law_exact(chain, T)
    base = outcome_expectation(protocol_outcomes(chain, T, gamma, bonus=False), "rejections")
    rej = outcome_expectation(out, "rejections")
    assert rej > base
    acc, rejm = analysis.scaled_masses(chain, float(scale))
    res = analysis.phase_recursion(chain, T, gamma, False, acc, rejm)
    np.testing.assert_allclose(res.rejections, float(rej), rtol=0, atol=1e-12)
    np.testing.assert_allclose(res.target_calls, float(outcome_expectation(out, "calls")), atol=1e-12)


def test_tokens_per_call_ratio_vs_mean_ratio():
    """T / E[calls] is the recursion's value; E[T / calls] is larger (Jensen), strictly here."""
    chain = homogeneous(6)
    T, gamma = 4, 2
    out = protocol_outcomes(chain, T, gamma, bonus=True)
    ratio = Fraction(T) / outcome_expectation(out, "calls")
    mean_ratio = outcome_expectation(out, None, lambda o: Fraction(T, o.calls))
    np.testing.assert_allclose(chain.expected_tokens_per_call(T, gamma), float(ratio), atol=1e-12)
    assert mean_ratio > ratio
    np.testing.assert_allclose(
        chain.expected_tokens_per_call(T, gamma, per_generation=True), float(mean_ratio), atol=1e-12
    )


@pytest.mark.parametrize("name, make, T", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("bonus", [False, True])
def test_calls_law_matches_enumeration(name, make, T, bonus):
    chain = make()
    gamma = 2
    law = analysis.target_calls_law(chain, T, gamma, bonus)
    exact = np.zeros(T + 1)
    for o, p in protocol_outcomes(chain, T, gamma, bonus).items():
        exact[o.calls] += float(p)
    np.testing.assert_allclose(law, exact, rtol=0, atol=1e-12)


def test_enumeration_bad_inputs():
    chain = homogeneous(0)
    with pytest.raises(ValueError, match="gamma"):
        protocol_outcomes(chain, 2, 0)
    with pytest.raises(ValueError, match="accept_scale"):
        protocol_outcomes(chain, 2, 1, accept_scale=0)
    with pytest.raises(ValueError, match="horizon"):
        protocol_outcomes(inhomogeneous(0, T=3), 4, 1)

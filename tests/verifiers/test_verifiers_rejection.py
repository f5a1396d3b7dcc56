"""Rejection-based verifiers: exact step laws, Theorem 1 attained, Theorem 2 (others reject more)."""

from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_frequencies, assert_positional_mc, law_pair
from hypothesis import given, settings
from hypothesis import strategies as hst

import spectheory as st
from spectheory.exact import phase_recursion
from spectheory.montecarlo import simulate
from spectheory.verifiers.rejection import (
    RejectionRule,
    is_unbiased,
    optimal_rejection_law,
    rejection_step,
    rejection_verify,
    rule_expected_rejections,
    sample_rejection_step,
    scaled_acceptance,
    scaled_rule,
    standard_acceptance,
    standard_rule,
    unbiased_rejection_law,
)

SEEDS = hst.integers(0, 2**32 - 1)


def test_step_law_matches_fraction_enumeration():
    t = [F(1, 6), F(1, 2), F(1, 3)]
    d = [F(1, 2), F(1, 4), F(1, 4)]
    b = [F(1, 5), F(2, 3), F(1)]
    P = [F(1, 7), F(4, 7), F(2, 7)]
    out = [F(0)] * 3
    rho = F(0)
    for x in range(3):  # enumerate draft token, then accept / reject branch
        out[x] += d[x] * b[x]
        for y in range(3):
            out[y] += d[x] * (1 - b[x]) * P[y]
        rho += d[x] * (1 - b[x])
    step = rejection_step(*(np.array(v, dtype=float) for v in (t, d, b, P)))
    np.testing.assert_allclose(step.output, np.array(out, dtype=float), atol=1e-12)
    np.testing.assert_allclose(step.rejection, float(rho), atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(SEEDS, hst.floats(0.0, 1.0))
def test_theorem2_per_step(seed, s):
    t, d = law_pair(seed)
    tv = float(st.tv(t, d))
    std = rejection_step(t, d, standard_acceptance(t, d), st.residual(t, d))
    np.testing.assert_allclose(std.output, t, atol=1e-12)
    np.testing.assert_allclose(std.rejection, tv, atol=1e-12)  # standard attains TV
    b = scaled_acceptance(t, d, s)
    P = unbiased_rejection_law(t, d, b)
    assert is_unbiased(t, d, b, P, atol=1e-10)
    step = rejection_step(t, d, b, P)
    np.testing.assert_allclose(step.rejection, 1 - s * (1 - tv), atol=1e-12)
    assert step.rejection >= tv - 1e-12
    # any unbiased acceptance b <= min(1, t/d), with random shrink factors
    u = np.random.default_rng(seed).random(t.size)
    b2 = u * standard_acceptance(t, d)
    step2 = rejection_step(t, d, b2, unbiased_rejection_law(t, d, b2))
    np.testing.assert_allclose(step2.output, t, atol=1e-10)
    assert step2.rejection >= tv - 1e-12
    np.testing.assert_allclose(optimal_rejection_law(t, d, b2), unbiased_rejection_law(t, d, b2), atol=1e-10)


@settings(max_examples=100, deadline=None)
@given(SEEDS)
def test_unbiased_law_exists_iff_below_target(seed):
    t, d = law_pair(seed)
    b = np.ones_like(t)  # accept everything: a = d
    if np.any(d > t + 1e-12):
        with pytest.raises(ValueError, match="accept"):
            unbiased_rejection_law(t, d, b)
    else:  # d <= t everywhere means d == t
        np.testing.assert_allclose(d, t, atol=1e-9)
    # naive law P = target with scaled acceptance: output - target = s (min(t, d) - (1 - TV) t),
    # so it is unbiased iff min(t, d) is proportional to t
    b = scaled_acceptance(t, d, 0.5)
    proportional = np.all(np.abs(np.minimum(t, d) - (1 - st.tv(t, d)) * t) <= 1e-9)
    assert bool(is_unbiased(t, d, b, t, atol=1e-9)) == bool(proportional)


def test_rule_on_hand_picked_uniforms():
    tok, rej = rejection_verify(
        [0.4, 0.4, 1.0], [[0.0, 0.5, 0.5]] * 3, [0, 0, 2], [0.39, 0.4, 0.999], [0.5, 0.5, 0.1]
    )
    assert tok.tolist() == [0, 2, 2] and rej.tolist() == [False, True, False]


def test_step_sampler_matches_exact_law():
    t, d = np.array([0.1, 0.0, 0.5, 0.4]), np.array([0.3, 0.3, 0.2, 0.2])
    b = scaled_acceptance(t, d, 0.7)
    P = unbiased_rejection_law(t, d, b)
    n = 200_000
    tok, rej = sample_rejection_step(t, d, b, P, n, rng=7)
    freq = np.bincount(tok, minlength=4) / n
    assert_frequencies(freq, t, n, "output law")  # seed fixed
    rho = rejection_step(t, d, b, P).rejection
    assert abs(rej.mean() - rho) <= 5 * np.sqrt(rho * (1 - rho) / n)


CHAINS = [
    st.DecodingChain.random(4, rng=11),
    st.DecodingChain.random(3, n_states=5, horizon=7, rng=12),
    st.DecodingChain.random(5, concentration=0.3, rng=13),
]


@pytest.mark.parametrize("chain", CHAINS)
def test_theorems_1_and_2_on_chains(chain):
    T = 7
    theorem1 = chain.tv_profile(T).sum()
    std = rule_expected_rejections(chain, T, standard_rule())
    np.testing.assert_allclose(std, theorem1, rtol=1e-12)
    prev = std
    for s in (0.9, 0.6, 0.3):  # smaller acceptance -> strictly more rejections
        r = rule_expected_rejections(chain, T, scaled_rule(s))
        assert r > prev + 1e-9
        prev = r
    rng = np.random.default_rng(3)
    shrink = rng.random((chain.n_states, chain.vocab_size))
    rnd = RejectionRule(lambda t, d: shrink * standard_acceptance(t, d), "unbiased", "random")
    assert rule_expected_rejections(chain, T, rnd) > std
    for gamma in (1, 3, None):  # every position is a check when bonus is off
        np.testing.assert_allclose(
            rule_expected_rejections(chain, T, scaled_rule(0.6), gamma=gamma, bonus=False, method="analysis"),
            rule_expected_rejections(chain, T, scaled_rule(0.6)),
            rtol=1e-12,
        )


def _rule_recursion(chain, T, gamma, bonus, rule):
    """The exact phase recursion with a rule's masses (``gamma=None``: drafts to the end)."""

    def masses(n):
        return rule.masses(*chain.kernels(n))

    return phase_recursion(
        chain, T, T if gamma is None else gamma, bonus, lambda n, i: masses(n)[0], lambda n, i: masses(n)[1]
    )


@pytest.mark.parametrize("chain", CHAINS[:2])
def test_phase_recursion_state_masses_with_rule_masses(chain):
    T = 7
    target_law = chain.state_marginals(T)
    for rule in (standard_rule(), scaled_rule(0.6)):
        rho = np.stack([rule.tables(*chain.kernels(n))[2] for n in range(T)])
        for gamma, bonus in ((1, False), (3, True), (3, False), (T, True)):
            res = _rule_recursion(chain, T, gamma, bonus, rule)
            # rejections at n = (check mass at n) . rho_n
            np.testing.assert_allclose(
                res.rejection_by_position, np.einsum("ns,ns->n", res.check_mass, rho), atol=1e-12
            )
            # every position is a check or a bonus token
            np.testing.assert_allclose(res.check_mass.sum() + res.bonus_tokens, T, rtol=1e-12)
            if not bonus:  # unbiased rule, all positions checked: the state law is the target's
                np.testing.assert_allclose(res.check_mass, target_law, atol=1e-12)
            np.testing.assert_allclose(
                rule_expected_rejections(chain, T, rule, gamma, bonus, "analysis"), res.rejections, rtol=1e-12
            )
        np.testing.assert_allclose(
            rule_expected_rejections(chain, T, rule, 2, False, "analysis"),
            rule_expected_rejections(chain, T, rule),
            rtol=1e-12,
        )


@pytest.mark.parametrize("gamma,bonus", [(3, True), (2, False), (None, False)])
def test_chain_exact_vs_monte_carlo(gamma, bonus):
    chain = CHAINS[1]
    T, n = 7, 20_000
    for rule in (standard_rule(), scaled_rule(0.6)):
        exact = _rule_recursion(chain, T, gamma, bonus, rule)
        sim = simulate(chain, T, T if gamma is None else gamma, n, rng=5, bonus=bonus, verifier=rule)
        assert_positional_mc(
            sim,
            exact.rejections,
            exact.target_calls,
            exact.draft_tokens,  # 5 SE, seed fixed
            exact.rejection_by_position,
        )


def test_bad_input():
    t, d = [0.5, 0.5], [0.9, 0.1]
    with pytest.raises(ValueError, match="scale"):
        scaled_acceptance(t, d, 1.5)
    with pytest.raises(ValueError, match="accept"):
        rejection_step(t, d, [0.5, 1.2], t)
    with pytest.raises(ValueError, match="accept"):
        rejection_step(t, d, [0.5], t)
    with pytest.raises(ValueError, match="rejection"):
        rejection_step(t, d, [0.5, 0.5], [0.5, 0.6])
    chain = CHAINS[0]
    with pytest.raises(ValueError, match="gamma"):
        rule_expected_rejections(chain, 4, standard_rule(), gamma=0, bonus=True)
    # gamma=None drafts to the end of the horizon: no bonus token either way (bonus=True default)
    assert rule_expected_rejections(chain, 4, standard_rule(), bonus=True) == rule_expected_rejections(
        chain, 4, standard_rule(), bonus=False
    )
    with pytest.raises(ValueError, match="rejection"):
        rule_expected_rejections(chain, 4, RejectionRule(standard_acceptance, "bogus"))


@pytest.mark.parametrize(
    "accept",
    [
        lambda t, d: np.full_like(t, 5.0),
        lambda t, d: np.full_like(t, -0.5),
        lambda t, d: np.full_like(t, np.nan),
        lambda t, d: np.ones(3),
    ],
)
def test_rule_acceptance_outside_unit_interval_raises(accept):
    """A rule's acceptance is checked like rejection_step's (it used to be clipped silently:
    acceptance 5 gave 0 rejections)."""
    chain = st.DecodingChain.random(2, rng=0)
    for fn in (
        lambda r: rule_expected_rejections(chain, 3, r),
        lambda r: simulate(chain, 3, 3, 10, rng=0, verifier=r),
    ):
        with pytest.raises(ValueError, match="accept"):
            fn(RejectionRule(accept, "optimal"))


@pytest.mark.parametrize("law", [lambda t, d, b: 2 * t, lambda t, d, b: t - 0.5, lambda t, d, b: t[..., :1]])
def test_rule_callable_rejection_law_must_be_a_law(law):
    chain = st.DecodingChain.random(2, rng=0)
    with pytest.raises(ValueError, match="rejection"):
        rule_expected_rejections(chain, 3, RejectionRule(standard_acceptance, law))


def test_unbiased_and_optimal_laws_agree_on_a_tiny_gap():
    """Both laws normalise any gap mass above one shared threshold: a gap of 1e-11 (below the
    unbiased tolerance 1e-9 used by rules, above rounding) is a real residual, not target."""
    t = np.array([0.5, 0.5])
    d = np.array([0.5 + 1e-11, 0.5 - 1e-11])
    b = standard_acceptance(t, d)
    opt = optimal_rejection_law(t, d, b)
    np.testing.assert_allclose(opt, [0.0, 1.0], atol=1e-4)
    np.testing.assert_allclose(unbiased_rejection_law(t, d, b, atol=1e-9), opt, rtol=0, atol=0)
    b_rule, P_rule, _ = standard_rule().tables(t[None], d[None])
    np.testing.assert_allclose(P_rule[0], opt, rtol=0, atol=0)

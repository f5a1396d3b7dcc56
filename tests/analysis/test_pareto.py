"""The Pareto fronts of lossy rules: the one-position line is attained, and the sequence-level TV of a
rule on a chain (enumerated, forward likelihoods, Monte Carlo)."""

import numpy as np
import pytest
from _helpers import assert_frequencies, assert_mean_within_se, assert_within_se

import spectheory as st
from spectheory.analysis.pareto import (
    all_sequences,
    pareto_front,
    sequence_front,
    sequence_log_likelihoods,
    sequence_tv,
)
from spectheory.montecarlo import sequence_tv_mc, simulate
from spectheory.verifiers.biased import (
    additive_acceptance,
    biased_rule,
    biased_step,
    lenient_acceptance,
    typical_acceptance,
)
from spectheory.verifiers.rejection import rule_expected_rejections, standard_rule


def test_front_is_attained_by_mixtures():
    t, d = np.array([0.1, 0.0, 0.6, 0.3]), np.array([0.4, 0.2, 0.2, 0.2])
    front = pareto_front(t, d, num=7)
    for lam, rho, loss in zip(front.mixing, front.rejection, front.loss):
        b = (1 - lam) * np.minimum(1, t / d) + lam
        step = biased_step(t, d, b)
        np.testing.assert_allclose([step.rejection, step.loss], [rho, loss], atol=1e-12)
    np.testing.assert_allclose([front.rejection[0], front.loss[-1]], [st.tv(t, d)] * 2)


CHAIN = st.DecodingChain.random(3, rng=31)


RULES = [
    standard_rule(),
    biased_rule(additive_acceptance(0.1)),
    biased_rule(additive_acceptance(0.1), "target"),
    biased_rule(lenient_acceptance(0.5)),
    biased_rule(typical_acceptance(), "target"),
]


def test_forward_likelihood_equals_output_kernel_product():
    T = 4
    X = all_sequences(3, T)
    for rule in RULES:
        lg, lt = sequence_log_likelihoods(CHAIN, T, rule, X, gamma=2, bonus=False)
        acc, rej = rule.masses(CHAIN.target, CHAIN.draft)
        out = acc + rej
        direct = np.zeros(len(X))
        for j, seq in enumerate(X):
            for s0 in range(3):
                p, s = CHAIN.initial[s0], s0
                for x in seq:
                    p *= out[s, x]
                    s = x
                direct[j] += p
        np.testing.assert_allclose(np.exp(lg), direct, atol=1e-14)
        np.testing.assert_allclose(np.exp(lg).sum(), 1.0, atol=1e-12)


@pytest.mark.parametrize("gamma,bonus", [(None, False), (2, True)])
def test_sequence_tv_exact_vs_monte_carlo(gamma, bonus):
    T = 4
    assert sequence_tv(CHAIN, T, standard_rule(), gamma, bonus) < 1e-12  # lossless
    for rule in RULES[1:]:
        exact = sequence_tv(CHAIN, T, rule, gamma, bonus)
        est, se, rej = sequence_tv_mc(CHAIN, T, rule, 20_000, rng=9, gamma=gamma, bonus=bonus)
        assert_within_se(est, se, exact, "sequence TV")  # seed fixed
        assert_mean_within_se(
            rej, rule_expected_rejections(CHAIN, T, rule, gamma=gamma, bonus=bonus), "rejections"
        )


def test_sampled_sequence_law_with_bonus():
    T, n = 3, 60_000
    rule = RULES[2]
    X = all_sequences(3, T)
    lg, _ = sequence_log_likelihoods(CHAIN, T, rule, X, gamma=1, bonus=True)
    sim = simulate(CHAIN, T, 1, n, rng=13, bonus=True, verifier=rule, return_tokens=True)
    freq = np.bincount(sim.tokens @ (3 ** np.arange(T)[::-1]), minlength=27) / n
    g = np.exp(lg)
    assert_frequencies(freq, g, n, "sequence law")


def test_sequence_front_rows():
    rows = sequence_front(CHAIN, 4, RULES, gamma=2, bonus=False)
    assert rows[0]["sequence_tv"] < 1e-12
    for row in rows[1:4]:  # the over-accepting rules
        assert row["rejections"] < rows[0]["rejections"]  # over-acceptance rejects less
        assert row["sequence_tv"] > 0
    assert rows[4]["sequence_tv"] > 0  # typical acceptance is lossy too

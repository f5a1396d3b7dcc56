"""Helpers shared by the tests: random law pairs from seeds, and the Monte Carlo assertions.

Monte Carlo assertions compare an estimate with an exact value at ``Z_MAX = 5`` standard errors:
with a fixed seed a correct implementation fails with probability about 1 in 1.7 million.
Laws come from the conformance kit's generator (:func:`spectheory.testing.strategies.random_law`),
so the tests and the users' property tests draw the same kinds of laws.
"""

import numpy as np

from spectheory.montecarlo import mean_and_se
from spectheory.testing.strategies import random_law

#: Monte Carlo tolerance, in standard errors.
Z_MAX = 5.0

_PAIR_KINDS = ("dirichlet", "zeros", "one_hot")


def law_pair(seed):
    """``(target, draft)`` from an integer seed: V in 1..6, dirichlet / with zeros / one-hot laws;
    about 1 in 6 pairs are equal laws."""
    rng = np.random.default_rng(seed)
    V = int(rng.integers(1, 7))
    t = random_law(rng, V, _PAIR_KINDS[rng.integers(3)])
    if rng.random() < 1 / 6:
        return t, t.copy()
    return t, random_law(rng, V, _PAIR_KINDS[rng.integers(3)])


def assert_within_se(estimate, se, exact, what="", z=Z_MAX, atol=1e-12):
    """``|estimate - exact| <= z * se (+ atol)``, elementwise."""
    estimate, se, exact = (np.asarray(a, dtype=np.float64) for a in (estimate, se, exact))
    bad = np.abs(estimate - exact) > z * se + atol
    assert not np.any(bad), (
        f"{what}: Monte Carlo {estimate} +- {se} vs exact {exact} (more than {z} SE apart)"
    )


def assert_mean_within_se(samples, exact, what="", z=Z_MAX):
    """The sample mean of ``samples`` against ``exact`` at ``z`` standard errors."""
    mean, se = mean_and_se(samples)
    assert_within_se(mean, se, exact, what, z)


def assert_frequencies(freq, law, n, what="", z=Z_MAX):
    """Empirical frequencies of ``n`` draws against exact cell probabilities, cell by cell at ``z``
    binomial standard errors ``sqrt(p (1 - p) / n)``."""
    law = np.asarray(law, dtype=np.float64)
    assert_within_se(freq, np.sqrt(law * (1 - law) / n), law, what, z)


def assert_positional_mc(sim, rejections, target_calls, draft_tokens, rejection_profile):
    """A simulation (``SimulationResult``) against exact values: per-run means of rejections,
    target calls and draft tokens within 5 SE, and each position's rejection frequency within
    5 binomial SE (seeds are fixed by the callers)."""
    for name, value in (
        ("rejections", rejections),
        ("target_calls", target_calls),
        ("draft_tokens", draft_tokens),
    ):
        assert_within_se(*sim.mean_se(name), value, name)
    assert_frequencies(
        sim.rejection_by_position / sim.n_runs, rejection_profile, sim.n_runs, "rejection profile"
    )

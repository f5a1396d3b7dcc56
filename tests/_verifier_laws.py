"""Random law pairs for the verifier tests (zeros, one-hots and equal laws included)."""
import numpy as np


def law(rng, V, kind):
    if kind == "onehot":
        x = np.zeros(V)
        x[rng.integers(V)] = 1.0
        return x
    x = rng.dirichlet(np.full(V, 0.7))
    if kind == "zeros":
        x[rng.random(V) < 0.4] = 0.0
        if x.sum() == 0:
            x[rng.integers(V)] = 1.0
        x = x / x.sum()
    return x


def law_pair(seed):
    """``(target, draft)`` from an integer seed; about 1 in 6 pairs are equal laws."""
    rng = np.random.default_rng(seed)
    V = int(rng.integers(1, 7))
    kinds = ["dirichlet", "zeros", "onehot"]
    t = law(rng, V, kinds[rng.integers(3)])
    if rng.random() < 1 / 6:
        return t, t.copy()
    return t, law(rng, V, kinds[rng.integers(3)])


def assert_positional_mc(sim, rejections, target_calls, draft_tokens, rejection_profile):
    """A position-level simulation (``PositionalResult``) against exact values: per-run means
    of rejections, target calls and draft tokens within 5 SE, and each position's rejection
    frequency within 5 binomial SE (seeds are fixed by the callers)."""
    n = sim.n_runs
    for name, value in (("rejections", rejections), ("target_calls", target_calls),
                        ("draft_tokens", draft_tokens)):
        assert abs(sim.mean(name) - value) <= 5 * sim.se(name), name
    p = np.asarray(rejection_profile)
    assert np.all(np.abs(sim.rejection_by_position / n - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12)

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

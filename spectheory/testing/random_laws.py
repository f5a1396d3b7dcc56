"""Random probability vectors of adversarial shapes, from a numpy Generator (no hypothesis needed).

The pure functions behind the hypothesis strategies of :mod:`spectheory.testing.strategies`
and the random tree instances of :mod:`spectheory.testing.trees`. p = target, q = draft.
"""

from __future__ import annotations

import numpy as np

__all__ = ["LAW_KINDS", "random_law"]

#: Shapes of laws that :func:`random_law` draws: Dirichlet(1), peaked (Dirichlet(0.2)), exact
#: zeros, one-hot, near-one-hot (``1 - 1e-6``), tiny entries (``1e-6``), uniform.
LAW_KINDS = ("dirichlet", "peaked", "zeros", "one_hot", "near_one_hot", "tiny", "uniform")


def random_law(rng: np.random.Generator, V: int, kind: str = "dirichlet") -> np.ndarray:
    """A random law ``[V]`` of one of :data:`LAW_KINDS` from a numpy Generator (the pure function
    behind :func:`spectheory.testing.strategies.laws`; tests that draw from seeds use it directly).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.testing.random_laws import random_law
    >>> random_law(np.random.default_rng(0), 3, "one_hot").tolist()
    [0.0, 0.0, 1.0]
    """
    if V == 1:
        return np.ones(1)
    if kind == "dirichlet":
        w = rng.dirichlet(np.ones(V))
    elif kind == "peaked":
        w = rng.dirichlet(np.full(V, 0.2))
    elif kind == "zeros":
        w = rng.dirichlet(np.ones(V))
        w[rng.choice(V, size=rng.integers(1, V), replace=False)] = 0.0
    elif kind == "one_hot":
        w = np.eye(V)[rng.integers(V)]
    elif kind == "near_one_hot":
        w = 1e-6 * rng.dirichlet(np.ones(V))
        w[rng.integers(V)] = 1.0 - 1e-6
    elif kind == "tiny":
        w = rng.dirichlet(np.ones(V))
        w[rng.choice(V, size=rng.integers(1, V), replace=False)] = 1e-6
    elif kind == "uniform":
        w = np.ones(V)
    else:  # pragma: no cover - guarded by sampled_from
        raise ValueError(f"kind: unknown {kind!r}")
    w = np.maximum(w, 0.0)
    if w.sum() == 0:
        w[rng.integers(V)] = 1.0
    return w / w.sum()

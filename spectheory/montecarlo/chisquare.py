"""The statistics every result and test uses: the mean with its standard error, and Pearson's
chi-square with small cells pooled (samples against an exact law)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..rounds.standard_error import mean_and_se

__all__ = ["mean_and_se", "pooled_chisquare"]


def pooled_chisquare(samples: ArrayLike, law: ArrayLike, min_expected: float = 5.0) -> dict:
    """Pearson chi-square of categorical ``samples`` against ``law`` with small cells pooled.

    Cells with expected count ``n * law < min_expected`` are merged into one cell (kept
    only if its expected count is positive). A sample in a cell of probability 0 gives
    statistic ``inf`` and p-value 0.

    Parameters
    ----------
    samples : int array, shape (n,) of flat cell indices, or (n, d) (flattened C-order)
    law : array, any shape, sums to 1

    Returns
    -------
    dict with ``statistic``, ``dof``, ``pvalue``, ``cells`` (after pooling), ``n``.

    Examples
    --------
    >>> import numpy as np
    >>> law = np.array([0.5, 0.3, 0.2])
    >>> x = np.random.default_rng(0).choice(3, size=2000, p=law)
    >>> from spectheory.montecarlo.chisquare import pooled_chisquare
    >>> pooled_chisquare(x, law)["pvalue"] > 1e-3
    True
    """
    law = np.asarray(law, dtype=np.float64)
    flat_law = law.ravel()
    s = np.asarray(samples, dtype=np.int64)
    if s.ndim == 2:
        s = np.ravel_multi_index(tuple(s.T), law.shape)
    elif s.ndim != 1:
        raise ValueError(f"samples: expected shape (n,) or (n, d), got {s.shape}")
    n = s.size
    if n == 0:
        raise ValueError("samples: empty")
    observed = np.bincount(s, minlength=flat_law.size).astype(np.float64)
    if np.any(observed[flat_law <= 0] > 0):
        return {
            "statistic": float("inf"),
            "dof": 0,
            "pvalue": 0.0,
            "cells": 0,
            "n": n,
            "impossible_samples": int(observed[flat_law <= 0].sum()),
        }
    expected = n * flat_law
    big = expected >= min_expected
    rest = expected[~big].sum()
    pooled = rest > 0
    obs = np.append(observed[big], observed[~big].sum()) if pooled else observed[big]
    exp = np.append(expected[big], rest) if pooled else expected[big]
    stat = float(((obs - exp) ** 2 / exp).sum())
    dof = max(len(obs) - 1, 1)
    from scipy import stats as _stats  # slow to import: only when a test statistic is asked for

    return {
        "statistic": stat,
        "dof": int(dof),
        "pvalue": float(_stats.chi2.sf(stat, dof)),
        "cells": int(len(obs)),
        "n": int(n),
        "impossible_samples": 0,
    }

"""The mean with its standard error: the one SE convention of every result type.

It lives with the rounds (the lowest room that makes results) so that every result -- Monte
Carlo, decoder, validation tables -- imports it without importing :mod:`scipy.stats`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["mean_and_se"]


def mean_and_se(values: ArrayLike, axis: int | None = None) -> tuple[Any, Any]:
    """Sample mean and its standard error ``std(ddof=1) / sqrt(n)`` (NaN when n < 2).

    The one definition every result type uses (:class:`~spectheory.SimulationResult`, the
    decoder's ``DecodeStats``, the validation tables). ``axis=None`` pools all values and
    returns floats; an integer axis returns arrays.

    Examples
    --------
    >>> mean_and_se([1.0, 2.0, 3.0])
    (2.0, 0.5773502691896258)
    >>> mean_and_se([4.0])
    (4.0, nan)
    """
    v = np.asarray(values, dtype=np.float64)
    n = v.size if axis is None else v.shape[axis]
    if n == 0:
        raise ValueError("values: empty")
    mean = v.mean(axis=axis)
    if n > 1:
        se = v.std(axis=axis, ddof=1) / np.sqrt(n)
    else:
        se = np.full_like(mean, np.nan) if axis is not None else np.nan
    if axis is None:
        return float(mean), float(se)
    return mean, se

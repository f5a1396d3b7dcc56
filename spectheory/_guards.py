"""Input validation shared by every public function.

Every check raises :class:`ValueError` with a message that names the argument and
the problem. Nothing is silently renormalised unless the caller asks
(``normalize=True`` in :func:`as_law`).
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from ._typing import RNGLike

#: Absolute tolerance on ``|sum(row) - 1|`` accepted for a probability law.
SUM_TOL = 1e-6


def as_law(
    x: ArrayLike, name: str = "law", *, atol: float = SUM_TOL, normalize: bool = False, min_ndim: int = 1
) -> np.ndarray:
    """Return ``x`` as a float64 array of laws over its last axis, or raise.

    Parameters
    ----------
    x : array_like, shape (..., V)
        Probability vectors along the last axis.
    name : str
        Argument name used in error messages.
    atol : float
        Rows must satisfy ``|sum - 1| <= atol`` (default ``1e-6``).
    normalize : bool
        If True, divide each row by its sum (rows must still have positive mass).
    min_ndim : int
        Minimum number of dimensions.

    Raises
    ------
    ValueError
        Empty vocabulary, NaN/inf or negative entries, rows not summing to 1.
    """
    a = np.asarray(x, dtype=np.float64)
    if a.ndim < min_ndim:
        raise ValueError(f"{name}: expected at least {min_ndim} dimension(s), got shape {a.shape}")
    if a.ndim == 0 or a.shape[-1] == 0:
        raise ValueError(f"{name}: empty vocabulary (shape {a.shape})")
    if a.size == 0:
        raise ValueError(f"{name}: empty array (shape {a.shape})")
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: contains NaN or infinite entries")
    if np.any(a < 0):
        raise ValueError(f"{name}: contains negative entries (min {a.min():.3g})")
    sums = a.sum(axis=-1)
    if normalize:
        if np.any(sums <= 0):
            raise ValueError(f"{name}: a row has zero total mass, cannot normalise")
        return a / sums[..., None]
    bad = np.abs(sums - 1.0) > atol
    if np.any(bad):
        worst = sums.flat[np.argmax(np.abs(sums - 1.0).ravel())]
        raise ValueError(f"{name}: rows must sum to 1 within {atol:g} (found a row summing to {worst:.10g})")
    return a


def as_law_pair(
    target: ArrayLike, draft: ArrayLike, *, atol: float = SUM_TOL
) -> tuple[np.ndarray, np.ndarray]:
    """Validate two laws with identical shapes; return float64 arrays."""
    t = as_law(target, "target", atol=atol)
    d = as_law(draft, "draft", atol=atol)
    if t.shape != d.shape:
        raise ValueError(f"target and draft: shape mismatch {t.shape} vs {d.shape}")
    return t, d


def check_int(value: object, name: str, minimum: int | None = None) -> int:
    """Return ``value`` as int, raising if it is not an integer ``>= minimum``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise ValueError(f"{name}: expected an integer, got {value!r}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name}: must be >= {minimum}, got {value}")
    return value


def check_prob(value: ArrayLike, name: str, *, open_low: bool = False, open_high: bool = False) -> np.ndarray:
    """Return ``value`` as a float array in [0, 1] (optionally open ends), or raise."""
    a = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name}: must be finite, got {value!r}")
    lo_bad = (a <= 0) if open_low else (a < 0)
    hi_bad = (a >= 1) if open_high else (a > 1)
    if np.any(lo_bad) or np.any(hi_bad):
        lo = "(" if open_low else "["
        hi = ")" if open_high else "]"
        raise ValueError(f"{name}: must lie in {lo}0, 1{hi}, got {value!r}")
    return a


def check_nonneg(value: ArrayLike, name: str) -> np.ndarray:
    """Return ``value`` as a float array of finite non-negative numbers, or raise."""
    a = np.asarray(value, dtype=np.float64)
    if not np.all(np.isfinite(a)) or np.any(a < 0):
        raise ValueError(f"{name}: must be finite and >= 0, got {value!r}")
    return a


def check_bool(value: object, name: str) -> bool:
    """Return ``value`` as a bool, raising if it is not one.

    ``True``/``False`` and numpy booleans pass; anything else (``"no"``, ``0``, ``None``)
    raises, because ``bool("no")`` is ``True`` and a silent reading is worse than an error.

    Examples
    --------
    >>> check_bool(False, "bonus")
    False
    >>> check_bool("no", "bonus")
    Traceback (most recent call last):
    ...
    ValueError: bonus: expected True or False, got 'no'
    """
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    raise ValueError(f"{name}: expected True or False, got {value!r}")


def as_rng(rng: RNGLike | Sequence[int], name: str = "rng") -> np.random.Generator:
    """The :class:`numpy.random.Generator` meant by an ``rng`` argument, or a clear error.

    Accepted: ``None`` (fresh entropy), an integer seed ``>= 0``, a sequence of such integers
    (``[seed, gamma]``; bools inside count as 0/1, as numpy reads them), a :class:`numpy.random.SeedSequence` or ``BitGenerator`` (a new
    generator on it) or a ``Generator`` (returned as it is, so draws continue its stream).
    Anything else raises a ``TypeError`` (a negative seed a ``ValueError``) naming ``name``,
    where numpy's own message ("SeedSequence expects int or sequence of ints") named neither
    the argument nor what is accepted.

    Examples
    --------
    >>> g = as_rng(0)
    >>> as_rng(g) is g
    True
    >>> as_rng("abc")
    Traceback (most recent call last):
    ...
    TypeError: rng: expected None, an integer seed >= 0, a sequence of such integers, a numpy SeedSequence or a numpy Generator, got str 'abc'
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, (np.random.SeedSequence, np.random.BitGenerator)):
        return np.random.default_rng(rng)
    seeds: list = []
    if isinstance(rng, numbers.Integral) and not isinstance(rng, (bool, np.bool_)):
        seeds = [rng]
    elif isinstance(rng, (list, tuple, np.ndarray)) and len(rng) > 0:
        seeds = list(np.asarray(rng, dtype=object).ravel())
    # inside a sequence a bool is an integer 0/1 to numpy (``[seed, gamma, bonus]`` seeds are used)
    ok = bool(seeds) and all(isinstance(x, (numbers.Integral, np.bool_)) for x in seeds)
    if not ok:
        shown = repr(rng) if len(repr(rng)) <= 60 else repr(rng)[:57] + "..."
        raise TypeError(
            f"{name}: expected None, an integer seed >= 0, a sequence of such integers, a numpy "
            f"SeedSequence or a numpy Generator, got {type(rng).__name__} {shown}"
        )
    if min(int(x) for x in seeds) < 0:
        raise ValueError(f"{name}: seeds must be >= 0, got {rng!r}")
    return np.random.default_rng(rng)

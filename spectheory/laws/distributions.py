r"""Single-step theory of speculative sampling over a finite vocabulary.

Notation: :math:`p` = **target** law, :math:`q` = **draft** law (Leviathan et al. 2023
convention; Chen et al. and Yin et al. swap the letters, so code always says
``target``/``draft``). All functions work on the last axis and broadcast over
leading axes; inputs are validated (see ``spectheory._guards``: rows must
sum to 1 within ``1e-6``).

One speculative step: draw :math:`x \sim q`, accept with probability
:math:`\min(1, p(x)/q(x))`, otherwise emit :math:`y \sim \mathrm{norm}(\max(p - q, 0))`.
The emitted token has law exactly :math:`p` (see :func:`speculative_step_law`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law, as_law_pair
from .sampling import normalize_or, safe_ratio

__all__ = [
    "tv",
    "acceptance_rate",
    "residual",
    "acceptance_probs",
    "speculative_step_law",
    "speculative_step_parts",
    "maximal_coupling",
]


def tv(a: ArrayLike, b: ArrayLike) -> np.ndarray | float:
    r"""Total variation distance :math:`\tfrac12 \sum_x |a(x) - b(x)|` over the last axis.

    Parameters
    ----------
    a, b : array_like, shape (..., V)
        Probability laws (rows sum to 1 within 1e-6, no negative/NaN entries).

    Returns
    -------
    float or ndarray, shape (...)
        Values in [0, 1].

    Examples
    --------
    >>> import spectheory as st
    >>> float(st.tv([0.5, 0.5], [1.0, 0.0]))
    0.5
    """
    a, b = as_law_pair(a, b)
    out = 0.5 * np.abs(a - b).sum(axis=-1)
    return np.clip(out, 0.0, 1.0)[()]


def acceptance_rate(target: ArrayLike, draft: ArrayLike) -> np.ndarray | float:
    r"""Probability that one speculative step accepts the draft token.

    .. math:: \beta = \sum_x q(x)\min\!\Big(1, \frac{p(x)}{q(x)}\Big) = \sum_x \min(p(x), q(x)) = 1 - \mathrm{TV}(p, q).

    Parameters
    ----------
    target, draft : array_like, shape (..., V)

    Returns
    -------
    float or ndarray, shape (...)

    Examples
    --------
    >>> import spectheory as st
    >>> float(st.acceptance_rate([0.25, 0.75], [0.5, 0.5]))
    0.75
    """
    t, d = as_law_pair(target, draft)
    return np.clip(np.minimum(t, d).sum(axis=-1), 0.0, 1.0)[()]


def _residual_unchecked(t: np.ndarray, d: np.ndarray) -> np.ndarray:
    # Zero residual mass happens exactly when target == draft (up to rounding): return target.
    return normalize_or(np.maximum(t - d, 0.0), t)[0]


def residual(target: ArrayLike, draft: ArrayLike) -> np.ndarray:
    r"""Residual law :math:`\mathrm{norm}(\max(p - q, 0))` sampled after a rejection.

    When target equals draft the residual has zero mass (a rejection never happens);
    the function then returns ``target`` (never NaN), which keeps every formula that
    multiplies the residual by the rejection probability exact.

    Parameters
    ----------
    target, draft : array_like, shape (..., V)

    Returns
    -------
    ndarray, shape (..., V)
        A probability law on every row.

    Examples
    --------
    >>> import spectheory as st
    >>> st.residual([0.25, 0.75], [0.5, 0.5]).tolist()
    [0.0, 1.0]
    """
    t, d = as_law_pair(target, draft)
    return _residual_unchecked(t, d)


def acceptance_probs(target: ArrayLike, draft: ArrayLike) -> np.ndarray:
    r"""Per-token acceptance probability :math:`\min(1, p(x)/q(x))`.

    Where :math:`q(x) = 0` the token is never proposed; the value is set to 1 by
    convention (it multiplies a zero). Shape ``(..., V)``.
    """
    t, d = as_law_pair(target, draft)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = safe_ratio(t, d, 1.0)
    return np.minimum(1.0, ratio)


def speculative_step_parts(target: ArrayLike, draft: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Decompose one speculative step into its accepted and rejected parts.

    Returns
    -------
    accepted : ndarray, shape (..., V)
        :math:`a(x) = q(x)\min(1, p(x)/q(x)) = \min(p(x), q(x))`, the probability
        that ``x`` is proposed and accepted.
    rejection : ndarray, shape (...)
        :math:`\rho = 1 - \sum_x a(x) = \mathrm{TV}(p, q)`.
    residual : ndarray, shape (..., V)
        The law emitted after a rejection.
    """
    t, d = as_law_pair(target, draft)
    acc = np.minimum(t, d)
    rho = np.clip(1.0 - acc.sum(axis=-1), 0.0, 1.0)
    return acc, rho, _residual_unchecked(t, d)


def speculative_step_law(target: ArrayLike, draft: ArrayLike) -> np.ndarray:
    r"""Exact law of the token emitted by one speculative step.

    .. math::
        P(Y = y) = \min(p(y), q(y)) + \mathrm{TV}(p, q)\,\frac{\max(p(y) - q(y), 0)}{\mathrm{TV}(p, q)} = p(y),

    since :math:`\sum_y \max(p - q, 0) = \mathrm{TV}(p, q)` and
    :math:`\min(p, q) + \max(p - q, 0) = p`. The function computes the left side
    (it does not return ``target``), so tests can check losslessness numerically.

    Examples
    --------
    >>> import numpy as np, spectheory as st
    >>> t, d = np.array([0.1, 0.6, 0.3]), np.array([0.5, 0.25, 0.25])
    >>> np.testing.assert_allclose(st.speculative_step_law(t, d), t)
    """
    acc, rho, res = speculative_step_parts(target, draft)
    return acc + rho[..., None] * res


def maximal_coupling(a: ArrayLike, b: ArrayLike) -> np.ndarray:
    r"""A maximal coupling of two laws: a joint law with marginals ``a`` and ``b``
    maximising :math:`P(X = Y)`.

    .. math::
        \pi(x, y) = \min(a(x), b(x))\,[x = y] + \frac{(a(x) - b(x))_+ (b(y) - a(y))_+}{\mathrm{TV}(a, b)}.

    Its agreement probability :math:`\sum_x \pi(x, x) = \sum_x \min(a, b) = 1 - \mathrm{TV}(a, b)`,
    which is the speculative acceptance rate: speculative sampling *is* this coupling
    between the draft token and the emitted token.

    Parameters
    ----------
    a, b : array_like, shape (V,)

    Returns
    -------
    ndarray, shape (V, V)
        ``pi[x, y]``; rows sum to ``a``, columns to ``b``.

    Examples
    --------
    >>> import numpy as np, spectheory as st
    >>> pi = st.maximal_coupling([0.5, 0.5], [0.2, 0.8])
    >>> float(np.trace(pi))
    0.7
    """
    a = as_law(a, "a")
    b = as_law(b, "b")
    if a.ndim != 1 or a.shape != b.shape:
        raise ValueError(f"a and b: expected two 1-d laws of equal length, got {a.shape} and {b.shape}")
    pi = np.diag(np.minimum(a, b))
    gap = 0.5 * np.abs(a - b).sum()
    if gap > 0:
        pi = pi + np.outer(np.maximum(a - b, 0.0), np.maximum(b - a, 0.0)) / gap
    return pi

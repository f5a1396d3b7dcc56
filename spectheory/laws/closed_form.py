r"""Closed forms of Leviathan et al. (2023) under i.i.d. acceptance.

Assume every draft token is accepted independently with the same probability
:math:`\alpha` (the average acceptance :math:`E[\beta]`), the draft proposes
:math:`\gamma` tokens per round and a *bonus* token is sampled from the target when
all are accepted. The number :math:`N` of accepted draft tokens in a round is a
geometric variable capped at :math:`\gamma`:

.. math:: P(N = i) = \alpha^i (1 - \alpha) \ (i < \gamma), \qquad P(N = \gamma) = \alpha^\gamma,

and the tokens per target call are :math:`N + 1`, with mean
:math:`\sum_{i=0}^{\gamma} \alpha^i = (1 - \alpha^{\gamma+1}) / (1 - \alpha)`.

Every name starts with ``iid_``: these are the i.i.d. idealisation, not the exact values of a
:class:`~spectheory.DecodingChain` (``chain.expected_tokens_per_call(T, gamma)`` and friends,
whose gap to these formulas is :mod:`spectheory.exact.iid_gap`).

All functions accept scalars or arrays for ``alpha`` and ``c``, are exact at
``alpha = 0`` and ``alpha = 1`` (the geometric sum is evaluated as a sum of
powers, never as a ratio) and raise ``ValueError`` for bad input.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int, check_nonneg, check_prob

__all__ = [
    "iid_tokens_per_call",
    "iid_speedup",
    "iid_optimal_gamma",
    "iid_accepted_count_law",
    "iid_operations_factor",
    "iid_mean_accepted",
    "iid_causal_acceptance",
]


def _geom_sum(alpha: np.ndarray, n_terms: int) -> np.ndarray:
    """sum_{i=0}^{n_terms-1} alpha**i, exact at alpha = 1."""
    powers = alpha[..., None] ** np.arange(n_terms)
    return powers.sum(axis=-1)


def iid_tokens_per_call(alpha: ArrayLike, gamma: int) -> np.ndarray | float:
    r"""Expected tokens produced per target call, :math:`(1 - \alpha^{\gamma+1}) / (1 - \alpha)`.

    Parameters
    ----------
    alpha : float or array_like
        Acceptance probability in [0, 1].
    gamma : int
        Draft length, ``>= 1`` (``gamma = 0`` is plain decoding and also accepted
        here, giving 1).

    Returns
    -------
    float or ndarray
        Equal to ``gamma + 1`` at ``alpha = 1`` and ``1`` at ``alpha = 0``.

    Examples
    --------
    >>> import spectheory as st
    >>> round(float(st.iid_tokens_per_call(0.5, 3)), 6)
    1.875
    """
    a = check_prob(alpha, "alpha")
    g = check_int(gamma, "gamma", 0)
    return _geom_sum(a, g + 1)[()]


def iid_mean_accepted(alpha: ArrayLike, gamma: int) -> np.ndarray | float:
    r"""Mean accepted draft tokens per round, :math:`\alpha(1 - \alpha^\gamma)/(1 - \alpha)`."""
    return iid_tokens_per_call(alpha, gamma) - 1.0


def iid_causal_acceptance(alpha: ArrayLike, gamma: int) -> np.ndarray | float:
    r"""Accepted over drafted tokens, :math:`\alpha(1 - \alpha^\gamma) / (\gamma(1 - \alpha))`."""
    g = check_int(gamma, "gamma", 1)
    return iid_mean_accepted(alpha, g) / g


def iid_speedup(alpha: ArrayLike, gamma: int, c: ArrayLike) -> np.ndarray | float:
    r"""Expected walltime improvement factor over plain decoding.

    .. math:: S(\alpha, \gamma, c) = \frac{1 - \alpha^{\gamma+1}}{(1 - \alpha)(\gamma c + 1)},

    with ``c`` = time of one draft step / time of one target call.

    Examples
    --------
    >>> import spectheory as st
    >>> round(float(st.iid_speedup(0.8, 4, 0.05)), 4)
    2.8013
    """
    g = check_int(gamma, "gamma", 1)
    cc = check_nonneg(c, "c")
    return (iid_tokens_per_call(alpha, g) / (g * cc + 1.0))[()]


def _gains(a: float, c: float, g: int) -> bool:
    r"""True iff :math:`S(g+1) > S(g)`, i.e. :math:`\psi(g) = \alpha^{g+1}((1-\alpha)(gc+1) + c) - c > 0`."""
    return a ** (g + 1) * ((1.0 - a) * (g * c + 1.0) + c) > c


def iid_optimal_gamma(alpha: float, c: float, max_gamma: int | None = None) -> int:
    r"""Integer :math:`\gamma \ge 1` maximising :func:`iid_speedup`.

    With :math:`E(\gamma) = \sum_{i \le \gamma}\alpha^i` and :math:`D(\gamma) = \gamma c + 1`,
    :math:`S(\gamma+1) > S(\gamma)` iff :math:`\alpha^{\gamma+1} D(\gamma) > c E(\gamma)`, i.e.
    (multiplying by :math:`1 - \alpha > 0`) iff

    .. math:: \psi(\gamma) = \alpha^{\gamma+1}\big((1-\alpha)(\gamma c + 1) + c\big) - c > 0 .

    The gain changes sign once: if :math:`\alpha^{\gamma+1} D(\gamma) \le c E(\gamma)` then
    :math:`\alpha^{\gamma+2} D(\gamma+1) - c E(\gamma+1) \le \alpha c E(\gamma) +
    c\alpha^{\gamma+2} - cE(\gamma) - c\alpha^{\gamma+1} = -c(1-\alpha)E(\gamma+1) \le 0`.
    So :math:`\{\gamma : \psi(\gamma) > 0\}` is an initial segment and the exact integer
    argmax (ties to the smaller ``gamma``) is the first :math:`\gamma` with
    :math:`\psi(\gamma) \le 0`. For :math:`\alpha < 1, c > 0` such a :math:`\gamma` exists
    (:math:`\psi \to -c`); it is bracketed by doubling and found by bisection on the sign of
    :math:`\psi`, :math:`O(\log \gamma^*)` evaluations (``alpha = 0.999999, c = 1e-7``:
    about 2.6 million, in ~45 steps). At :math:`\alpha = 1`, :math:`\psi = 0`: the argmax is
    1 when :math:`c \ge 1`.

    When ``alpha = 1`` with ``c < 1``, or ``c = 0`` with ``alpha > 0``, the speedup
    increases forever; then ``max_gamma`` must be given and is returned. Otherwise the result
    is ``min(argmax, max_gamma)`` (``S`` increases up to its argmax).

    Parameters
    ----------
    alpha : float in [0, 1]
    c : float >= 0
    max_gamma : int, optional
        Upper limit of the search.

    Examples
    --------
    >>> import spectheory as st
    >>> st.iid_optimal_gamma(0.8, 0.05)
    8
    """
    for value, name in ((alpha, "alpha"), (c, "c")):
        if np.ndim(value) != 0:
            raise ValueError(
                f"{name}: expected a scalar, got shape {np.shape(value)} "
                "(iid_optimal_gamma is not vectorised; call it per value)"
            )
    a = float(check_prob(alpha, "alpha"))
    cc = float(check_nonneg(c, "c"))
    if max_gamma is not None:
        max_gamma = check_int(max_gamma, "max_gamma", 1)
    unbounded = (a == 1.0 and cc < 1.0) or (cc == 0.0 and a > 0.0)
    if unbounded:
        if max_gamma is None:
            raise ValueError(
                "iid_optimal_gamma: speedup increases without bound for alpha=1, c<1 or c=0; pass max_gamma"
            )
        return max_gamma
    limit = max_gamma if max_gamma is not None else 1 << 62
    if not _gains(a, cc, 1):
        return 1
    lo, hi = 1, 2  # invariant: psi(lo) > 0, so the argmax is > lo
    while _gains(a, cc, hi):  # doubling until psi(hi) <= 0
        if hi >= limit:  # S still increases at limit
            return limit
        lo, hi = hi, 2 * hi
    return min(_bisect(a, cc, lo, hi), limit)


def _bisect(a, c, lo, hi):
    """First ``g`` in ``(lo, hi]`` with ``psi(g) <= 0``, given ``psi(lo) > 0 >= psi(hi)``."""
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if _gains(a, c, mid):
            lo = mid
        else:
            hi = mid
    return hi


def iid_accepted_count_law(alpha: ArrayLike, gamma: int) -> np.ndarray:
    r"""Law of the accepted count :math:`N \in \{0, \dots, \gamma\}` of one round.

    Returns
    -------
    ndarray, shape (gamma + 1,) (or ``alpha.shape + (gamma + 1,)``)
        ``P(N = i) = alpha**i * (1 - alpha)`` for ``i < gamma``, ``alpha**gamma`` at ``i = gamma``.

    Examples
    --------
    >>> import spectheory as st
    >>> st.iid_accepted_count_law(0.5, 2).tolist()
    [0.5, 0.25, 0.25]
    """
    a = check_prob(alpha, "alpha")
    g = check_int(gamma, "gamma", 1)
    powers = a[..., None] ** np.arange(g + 1)
    law = powers * (1.0 - a[..., None])
    law[..., g] = powers[..., g]
    return law


def iid_operations_factor(alpha: ArrayLike, gamma: int, c_hat: ArrayLike) -> np.ndarray | float:
    r"""Expected factor of increase in arithmetic operations (Leviathan et al., Thm 3.11).

    .. math:: \frac{(1 - \alpha)(\gamma \hat c + \gamma + 1)}{1 - \alpha^{\gamma+1}},

    with :math:`\hat c` = arithmetic operations per token of the draft relative to
    the target: each round runs :math:`\gamma` draft steps (cost :math:`\gamma\hat c`)
    and the target on :math:`\gamma + 1` positions, and yields
    :math:`E(\gamma)` tokens.
    """
    g = check_int(gamma, "gamma", 1)
    ch = check_nonneg(c_hat, "c_hat")
    return ((g * ch + g + 1.0) / iid_tokens_per_call(alpha, g))[()]

r"""Closed forms of Leviathan et al. (2023) under i.i.d. acceptance.

Assume every draft token is accepted independently with the same probability
:math:`\alpha` (the average acceptance :math:`E[\beta]`), the draft proposes
:math:`\gamma` tokens per round and a *bonus* token is sampled from the target when
all are accepted. The number :math:`N` of accepted draft tokens in a round is a
geometric variable capped at :math:`\gamma`:

.. math:: P(N = i) = \alpha^i (1 - \alpha) \ (i < \gamma), \qquad P(N = \gamma) = \alpha^\gamma,

and the tokens per target call are :math:`N + 1`, with mean
:math:`\sum_{i=0}^{\gamma} \alpha^i = (1 - \alpha^{\gamma+1}) / (1 - \alpha)`.

All functions accept scalars or arrays for ``alpha`` and ``c``, are exact at
``alpha = 0`` and ``alpha = 1`` (the geometric sum is evaluated as a sum of
powers, never as a ratio) and raise ``ValueError`` for bad input.
"""
from __future__ import annotations

import numpy as np

from ._validation import check_int, check_nonneg, check_prob

__all__ = [
    "expected_tokens_per_call", "walltime_speedup", "optimal_gamma", "accepted_count_law",
    "arithmetic_operations_factor", "mean_accepted", "causal_acceptance",
]


def _geom_sum(alpha: np.ndarray, n_terms: int) -> np.ndarray:
    """sum_{i=0}^{n_terms-1} alpha**i, exact at alpha = 1."""
    powers = alpha[..., None] ** np.arange(n_terms)
    return powers.sum(axis=-1)


def expected_tokens_per_call(alpha, gamma):
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
    >>> round(float(st.expected_tokens_per_call(0.5, 3)), 6)
    1.875
    """
    a = check_prob(alpha, "alpha")
    g = check_int(gamma, "gamma", 0)
    return _geom_sum(a, g + 1)[()]


def mean_accepted(alpha, gamma):
    r"""Mean accepted draft tokens per round, :math:`\alpha(1 - \alpha^\gamma)/(1 - \alpha)`."""
    return expected_tokens_per_call(alpha, gamma) - 1.0


def causal_acceptance(alpha, gamma):
    r"""Accepted over drafted tokens, :math:`\alpha(1 - \alpha^\gamma) / (\gamma(1 - \alpha))`."""
    g = check_int(gamma, "gamma", 1)
    return mean_accepted(alpha, g) / g


def walltime_speedup(alpha, gamma, c):
    r"""Expected walltime improvement factor over plain decoding.

    .. math:: S(\alpha, \gamma, c) = \frac{1 - \alpha^{\gamma+1}}{(1 - \alpha)(\gamma c + 1)},

    with ``c`` = time of one draft step / time of one target call.

    Examples
    --------
    >>> import spectheory as st
    >>> round(float(st.walltime_speedup(0.8, 4, 0.05)), 4)
    2.8013
    """
    g = check_int(gamma, "gamma", 1)
    cc = check_nonneg(c, "c")
    return (expected_tokens_per_call(alpha, g) / (g * cc + 1.0))[()]


def optimal_gamma(alpha, c, max_gamma: int | None = None) -> int:
    r"""Integer :math:`\gamma \ge 1` maximising :func:`walltime_speedup`.

    :math:`E(\gamma) = \sum_{i \le \gamma}\alpha^i` is concave in :math:`\gamma` and
    :math:`\gamma c + 1` is positive and linear, so :math:`S` is quasi-concave: its
    superlevel sets :math:`\{E(\gamma) \ge s(\gamma c + 1)\}` are intervals. The
    exact integer argmax is therefore found by stepping ``gamma`` up until
    ``S`` stops increasing (ties go to the smaller ``gamma``).

    When ``alpha = 1`` with ``c < 1``, or ``c = 0`` with ``alpha > 0``, the speedup
    increases forever; then ``max_gamma`` must be given and is returned.

    Parameters
    ----------
    alpha : float in [0, 1]
    c : float >= 0
    max_gamma : int, optional
        Upper limit of the search.

    Examples
    --------
    >>> import spectheory as st
    >>> st.optimal_gamma(0.8, 0.05)
    8
    """
    a = float(check_prob(alpha, "alpha"))
    cc = float(check_nonneg(c, "c"))
    if max_gamma is not None:
        max_gamma = check_int(max_gamma, "max_gamma", 1)
    unbounded = (a == 1.0 and cc < 1.0) or (cc == 0.0 and a > 0.0)
    if unbounded and max_gamma is None:
        raise ValueError("optimal_gamma: speedup increases without bound for alpha=1, c<1 "
                         "or c=0; pass max_gamma")
    limit = max_gamma if max_gamma is not None else 1 << 30
    best_g, best_s, g = 1, float(walltime_speedup(a, 1, cc)), 1
    e = 1.0 + a  # E(gamma) at gamma = 1, updated incrementally
    power = a
    while g < limit:
        g += 1
        power *= a
        e += power
        s = e / (g * cc + 1.0)
        if s > best_s:
            best_g, best_s = g, s
        else:
            break
    return best_g


def accepted_count_law(alpha, gamma) -> np.ndarray:
    r"""Law of the accepted count :math:`N \in \{0, \dots, \gamma\}` of one round.

    Returns
    -------
    ndarray, shape (gamma + 1,) (or ``alpha.shape + (gamma + 1,)``)
        ``P(N = i) = alpha**i * (1 - alpha)`` for ``i < gamma``, ``alpha**gamma`` at ``i = gamma``.

    Examples
    --------
    >>> import spectheory as st
    >>> st.accepted_count_law(0.5, 2).tolist()
    [0.5, 0.25, 0.25]
    """
    a = check_prob(alpha, "alpha")
    g = check_int(gamma, "gamma", 1)
    powers = a[..., None] ** np.arange(g + 1)
    law = powers * (1.0 - a[..., None])
    law[..., g] = powers[..., g]
    return law


def arithmetic_operations_factor(alpha, gamma, c_hat):
    r"""Expected factor of increase in arithmetic operations (Leviathan et al., Thm 3.11).

    .. math:: \frac{(1 - \alpha)(\gamma \hat c + \gamma + 1)}{1 - \alpha^{\gamma+1}},

    with :math:`\hat c` = arithmetic operations per token of the draft relative to
    the target: each round runs :math:`\gamma` draft steps (cost :math:`\gamma\hat c`)
    and the target on :math:`\gamma + 1` positions, and yields
    :math:`E(\gamma)` tokens.
    """
    g = check_int(gamma, "gamma", 1)
    ch = check_nonneg(c_hat, "c_hat")
    return ((g * ch + g + 1.0) / expected_tokens_per_call(alpha, g))[()]

r"""Closed forms of batch speculative decoding for Bernoulli and uniform instances.

Per-step all-rejected probabilities of the first-token construction, derived from the
scale form of the recursive residuals (see :mod:`spectheory.verifiers.batch_step`), and the expected rejections on a
one-state chain when each round drafts to the end of the horizon. The tests check each
against the recursions. Notation: p = target, q = draft.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int, check_prob
from ..verifiers.batch_step import _check_M

__all__ = [
    "bernoulli_batch_rejection",
    "uniform_batch_rejection",
    "uniform_instance",
    "iid_batch_expected_rejections",
]


def bernoulli_batch_rejection(p_target: ArrayLike, p_draft: ArrayLike, M: int) -> np.ndarray | float:
    r"""Closed form for ``target = (1 - a, a)``, ``draft = (1 - b, b)`` (``a = p_target``, ``b = p_draft``).

    Let :math:`x_+` be the token with :math:`p > q` and :math:`x_-` the other. Then
    :math:`r_2 = \delta_{x_+}` and :math:`r_m = \delta_{x_+}` for all :math:`m \ge 2`, so
    :math:`\mathrm{TV}(q, r_m) = q(x_-)` and

    .. math:: P(\text{all rejected}) = |a - b| \; q(x_-)^{M-1}, \qquad
              q(x_-) = 1 - b \text{ if } a > b, \; b \text{ if } a < b.

    Limit: 0 unless :math:`q(x_-) = 1`, i.e. the draft puts no mass on :math:`x_+`
    (then the value is :math:`p(x_+)`, the target mass outside the draft's support).
    """
    a = check_prob(p_target, "p_target")
    b = check_prob(p_draft, "p_draft")
    M = _check_M(M, allow_inf=True)
    q_minus = np.where(a > b, 1.0 - b, b)
    delta = np.abs(a - b)
    if np.isinf(M):
        return np.where(q_minus >= 1.0, delta, 0.0)[()]
    return (delta * q_minus ** (M - 1))[()]


def uniform_batch_rejection(target_size: int, draft_size: int, overlap: int, M: int) -> float:
    r"""Closed form for target uniform on a set ``A`` and draft uniform on ``B``.

    With :math:`a = |A|`, :math:`b = |B|`, :math:`k = |A \cap B|`:
    :math:`Z(c) = \sum_x (p - c q)_+ = \max(1 - k/a,\; 1 - k c / b)`, and the recursion
    :math:`c_{m+1} = c_m + Z(c_m)` gives :math:`Z_m = \max(u, r^{m-1})` with
    :math:`u = 1 - k/a` (target mass outside ``B``) and :math:`r = 1 - k/b` (while
    :math:`1 - k c_m/b > u`, :math:`c_m = (b/k)(1 - r^{m-1})`; afterwards :math:`Z = u`).
    Hence

    .. math:: P(\text{all } M \text{ rejected}) = \max\big(1 - k/a,\; (1 - k/b)^M\big),

    which is :math:`\mathrm{TV} = 1 - k/\max(a, b)` at :math:`M = 1` and tends to
    :math:`1 - k/a` (no improvement at all when :math:`a \ge b`).
    """
    a = check_int(target_size, "target_size", 1)
    b = check_int(draft_size, "draft_size", 1)
    k = check_int(overlap, "overlap", 0)
    if k > min(a, b):
        raise ValueError(f"overlap: must be <= min(target_size, draft_size), got {k}")
    M = _check_M(M, allow_inf=True)
    u = 1.0 - k / a
    if np.isinf(M):
        return u  # (1 - k/b)^M -> 0 unless k = 0, where u = 1 anyway
    return max(u, (1.0 - k / b) ** M)


def uniform_instance(target_size: int, draft_size: int, overlap: int) -> tuple[np.ndarray, np.ndarray]:
    r"""The laws of :func:`uniform_batch_rejection`: target uniform on ``A``, draft uniform on ``B``.

    Tokens ``0..a-1`` form ``A`` and ``a-k..a+b-k-1`` form ``B`` (``|A| = a``, ``|B| = b``,
    ``|A \cap B| = k``), over ``V = a + b - k`` tokens.

    Returns
    -------
    target, draft : ndarray, shape (a + b - k,)

    Examples
    --------
    >>> from spectheory.analysis.batch_closed_form import uniform_instance
    >>> t, d = uniform_instance(2, 2, 1)
    >>> t.tolist(), d.tolist()
    ([0.5, 0.5, 0.0], [0.0, 0.5, 0.5])
    """
    a = check_int(target_size, "target_size", 1)
    b = check_int(draft_size, "draft_size", 1)
    k = check_int(overlap, "overlap", 0)
    if k > min(a, b):
        raise ValueError(f"overlap: must be <= min(target_size, draft_size), got {k}")
    target = np.zeros(a + b - k)
    draft = np.zeros_like(target)
    target[:a], draft[a - k :] = 1 / a, 1 / b
    return target, draft


def iid_batch_expected_rejections(tv: ArrayLike, rho_batch: ArrayLike, horizon: int) -> tuple[Any, Any]:
    r"""Closed form on a one-state chain with ``gamma=None`` (drafts to the end), no bonus.

    A position starts a round iff it is the first or follows a rejection. With
    :math:`\delta = \mathrm{TV}`, :math:`\rho_B` the batch first-token rejection and
    :math:`\lambda = \rho_B - \delta`, the start probability obeys
    :math:`\pi_0 = 1`, :math:`\pi_{n+1} = \delta + \lambda \pi_n`, so
    :math:`\sum_{n<T} \pi_n = T\pi^* + (1 - \pi^*)(1 - \lambda^T)/(1 - \lambda)` with
    :math:`\pi^* = \delta/(1 - \lambda)`. Returns ``(total, improvement)`` with
    improvement :math:`= (\delta - \rho_B)\sum_{n<T}\pi_n` and total :math:`= T\delta -`
    improvement.
    """
    delta = float(check_prob(tv, "tv"))
    rho = float(check_prob(rho_batch, "rho_batch"))
    T = check_int(horizon, "horizon", 1)
    lam = rho - delta
    pistar = delta / (1.0 - lam)
    s = T * pistar + (1.0 - pistar) * (1.0 - lam**T) / (1.0 - lam)
    imp = (delta - rho) * s
    return T * delta - imp, imp

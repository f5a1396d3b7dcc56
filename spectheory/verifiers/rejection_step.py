r"""One position of a rejection-based verifier: acceptance, rejection law, exact step, sampling.

Notation: p = target, q = draft. At one position the verifier draws ``x ~ q``, accepts it with
probability ``b(x)`` and otherwise emits ``y ~ P``; with the accepted mass :math:`a = q b` the
rejection probability is :math:`\rho = 1 - \sum_x a(x)` and the output law :math:`o = a + \rho P`
(:func:`rejection_step`). It is unbiased iff :math:`a \le p` and :math:`P = (p - a)/\rho`
(:func:`unbiased_rejection_law`). The derivation, Theorem 2 and the rules applied along a chain
are in :mod:`spectheory.verifiers.rejection`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law, as_law_pair, as_rng, check_int, check_prob
from .._typing import RNGLike
from ..laws.sampling import MASS_TOL, normalize_or, safe_ratio
from ._positional import _categorical

__all__ = [
    "standard_acceptance",
    "scaled_acceptance",
    "RejectionStep",
    "rejection_step",
    "unbiased_rejection_law",
    "optimal_rejection_law",
    "is_unbiased",
    "rejection_verify",
    "sample_rejection_step",
    "UNBIASED_ATOL",
    "GAP_MASS_TOL",
    "ACCEPT_ATOL",
]

#: Tolerance used by :func:`is_unbiased` and :func:`unbiased_rejection_law`.
UNBIASED_ATOL = 1e-12

#: A gap ``max(p - q b, 0)`` with at most this mass is rounding noise (``P = target`` then);
#: shared by :func:`unbiased_rejection_law` and :func:`optimal_rejection_law` (and equal to
#: the residual threshold of :func:`spectheory.laws.sampling.residual_weights`).
GAP_MASS_TOL = MASS_TOL

#: Rounding slack for a rule's acceptance: values in ``[-ACCEPT_ATOL, 1 + ACCEPT_ATOL]`` are
#: clipped to [0, 1] by :class:`RejectionRule`; anything further out raises.
ACCEPT_ATOL = 1e-12


def _ratio(t, d):
    return safe_ratio(t, d)


def standard_acceptance(target: ArrayLike, draft: ArrayLike) -> np.ndarray:
    r"""Acceptance :math:`b(x) = \min(1, p(x)/q(x))` of speculative sampling (1 where q = 0).

    Examples
    --------
    >>> from spectheory.verifiers.rejection import standard_acceptance
    >>> standard_acceptance([0.2, 0.8], [0.5, 0.5]).tolist()
    [0.4, 1.0]
    """
    t, d = as_law_pair(target, draft)
    return np.minimum(1.0, _ratio(t, d))


def scaled_acceptance(target: ArrayLike, draft: ArrayLike, scale: float) -> np.ndarray:
    r"""Scaled-down acceptance :math:`b(x) = s \min(1, p(x)/q(x))`, ``scale = s`` in [0, 1].

    With its unique unbiased rejection law it is unbiased and rejects with probability
    :math:`1 - s(1 - \mathrm{TV}) \ge \mathrm{TV}` (strictly if ``s < 1`` and TV < 1).
    """
    s = check_prob(scale, "scale")
    return s * standard_acceptance(target, draft)


def _check_accept(accept, shape, atol=0.0):
    """``accept`` as float64 of shape ``shape`` with entries in [0, 1] (within ``atol``, then
    clipped), or ValueError."""
    b = np.asarray(accept, dtype=np.float64)
    if b.shape != shape:
        raise ValueError(f"accept: expected shape {shape}, got {b.shape}")
    if not np.all(np.isfinite(b)) or np.any(b < -atol) or np.any(b > 1 + atol):
        bad = b[~(np.isfinite(b) & (b >= -atol) & (b <= 1 + atol))].flat[0]
        raise ValueError(f"accept: acceptance probabilities must lie in [0, 1], found {bad!r}")
    return np.clip(b, 0.0, 1.0) if atol > 0 else b


@dataclass
class RejectionStep:
    """Exact single-step behaviour of a rejection-based verifier (arrays over ``[..., V]``).

    Attributes: ``accepted`` (mass :math:`a = q b`), ``rejection`` (:math:`\\rho`, shape
    ``[...]``), ``rejection_law`` (``P``), ``output`` (:math:`a + \\rho P`), ``loss``
    (TV between output and target).
    """

    accepted: np.ndarray
    rejection: np.ndarray
    rejection_law: np.ndarray
    output: np.ndarray
    loss: np.ndarray


def rejection_step(
    target: ArrayLike,
    draft: ArrayLike,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray] | ArrayLike,
    rejection: ArrayLike,
) -> RejectionStep:
    r"""Exact law and rejection probability of one rejection-based step.

    Parameters
    ----------
    target, draft : array_like, shape (..., V)
    accept : array_like, shape (..., V)
        Acceptance probabilities ``b(x)`` in [0, 1].
    rejection : array_like, shape (..., V)
        Rejection law ``P`` (rows sum to 1).

    Returns
    -------
    RejectionStep
        ``output = q b + rho P`` with ``rho = 1 - sum q b``; ``loss = TV(output, target)``.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.rejection import rejection_step, standard_acceptance
    >>> t, d = np.array([0.2, 0.8]), np.array([0.5, 0.5])
    >>> step = rejection_step(t, d, standard_acceptance(t, d), [0.0, 1.0])
    >>> round(float(step.rejection), 12), step.output.round(12).tolist()
    (0.3, [0.2, 0.8])
    """
    t, d = as_law_pair(target, draft)
    b = _check_accept(accept, t.shape)
    P = as_law(rejection, "rejection")
    if P.shape != t.shape:
        raise ValueError(f"rejection: expected shape {t.shape}, got {P.shape}")
    a = d * b
    rho = np.clip(1.0 - a.sum(-1), 0.0, 1.0)
    out = a + rho[..., None] * P
    loss = 0.5 * np.abs(out - t).sum(-1)
    return RejectionStep(a, rho[()], P, out, loss[()])


def unbiased_rejection_law(
    target: ArrayLike,
    draft: ArrayLike,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray] | ArrayLike,
    atol: float = UNBIASED_ATOL,
) -> np.ndarray:
    r"""The unique rejection law making ``accept`` unbiased: :math:`P = (p - q b)/\rho`.

    It exists iff :math:`q b \le p` pointwise (within ``atol``); when :math:`\rho = 0`
    (then :math:`q b = p`) any law works and ``target`` is returned.

    Raises
    ------
    ValueError
        If :math:`q(x) b(x) > p(x) + atol` for some ``x``: no rejection law makes the rule
        unbiased.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.rejection import unbiased_rejection_law, scaled_acceptance
    >>> t, d = np.array([0.2, 0.8]), np.array([0.5, 0.5])
    >>> unbiased_rejection_law(t, d, scaled_acceptance(t, d, 0.5)).round(12).tolist()
    [0.153846153846, 0.846153846154]
    """
    t, d = as_law_pair(target, draft)
    a = d * _check_accept(accept, t.shape)
    excess = a - t
    if np.any(excess > atol):
        raise ValueError(
            f"accept: no unbiased rejection law exists, draft*accept exceeds target "
            f"by up to {excess.max():.3g}"
        )
    return _gap_law(t, a)


def _gap_law(t, a):
    """``norm(max(t - a, 0))``, or ``t`` where the gap mass is at most :data:`GAP_MASS_TOL`."""
    return normalize_or(np.maximum(t - a, 0.0), t)[0]


def optimal_rejection_law(
    target: ArrayLike, draft: ArrayLike, accept: Callable[[np.ndarray, np.ndarray], np.ndarray] | ArrayLike
) -> np.ndarray:
    r"""Rejection law :math:`P^* = \mathrm{norm}(\max(p - q b, 0))` minimising the TV loss.

    Equal to :func:`unbiased_rejection_law` whenever that exists; defined for every ``b``
    (``target`` when the gap has zero mass). See :mod:`spectheory.verifiers.biased` for the
    proof of optimality.
    """
    t, d = as_law_pair(target, draft)
    return _gap_law(t, d * _check_accept(accept, t.shape))


def is_unbiased(
    target: ArrayLike,
    draft: ArrayLike,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray] | ArrayLike,
    rejection: ArrayLike,
    atol: float = UNBIASED_ATOL,
) -> np.ndarray | bool:
    """True where the output law ``q b + rho P`` equals ``target`` within ``atol`` (per row)."""
    step = rejection_step(target, draft, accept, rejection)
    t = as_law(target, "target")
    return np.all(np.abs(step.output - t) <= atol, axis=-1)[()]


def rejection_verify(
    accept_prob: ArrayLike,
    rejection_law: ArrayLike,
    draft_token: ArrayLike,
    u_accept: ArrayLike,
    u_rejection: ArrayLike,
) -> tuple[np.ndarray, np.ndarray]:
    """The rule itself, on hand-given uniforms (no randomness inside).

    Parameters
    ----------
    accept_prob : array_like, shape (R,)
        ``b(x)`` of each run's draft token ``x``.
    rejection_law : array_like, shape (R, V)
    draft_token : array_like of int, shape (R,)
    u_accept, u_rejection : array_like, shape (R,)
        Uniforms in [0, 1).

    Returns
    -------
    token : ndarray of int, shape (R,)
        ``x`` if ``u_accept < b(x)``, else the inverse-CDF sample of ``P`` at ``u_rejection``.
    rejected : ndarray of bool, shape (R,)

    Examples
    --------
    >>> from spectheory.verifiers.rejection import rejection_verify
    >>> tok, rej = rejection_verify([0.4, 0.4], [[0.0, 1.0], [0.0, 1.0]], [0, 0], [0.3, 0.5], [0.1, 0.1])
    >>> tok.tolist(), rej.tolist()
    ([0, 1], [False, True])
    """
    rejected = np.asarray(u_accept) >= np.asarray(accept_prob)
    y = _categorical(np.asarray(rejection_law, dtype=np.float64), np.asarray(u_rejection, dtype=np.float64))
    return np.where(rejected, y, np.asarray(draft_token)), rejected


def sample_rejection_step(
    target: ArrayLike,
    draft: ArrayLike,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray] | ArrayLike,
    rejection: ArrayLike,
    size: int,
    rng: RNGLike = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``size`` independent steps of a rejection-based verifier at one position.

    Draws the draft tokens and the uniforms, then calls :func:`rejection_verify`.
    Returns ``(tokens [size], rejected [size])``.
    """
    t, d = as_law_pair(target, draft)
    if t.ndim != 1:
        raise ValueError(f"target: expected a 1-d law, got shape {t.shape}")
    b = _check_accept(accept, t.shape)
    P = as_law(rejection, "rejection")
    n = check_int(size, "size", 1)
    rng = as_rng(rng)
    x = _categorical(np.broadcast_to(d, (n, d.size)), rng.random(n))
    u1, u2 = rng.random(n), rng.random(n)
    return rejection_verify(b[x], np.broadcast_to(P, (n, P.size)), x, u1, u2)

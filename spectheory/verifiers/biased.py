r"""Biased (lossy) acceptance at one position; the rejection / quality Pareto front it lies on is
:func:`spectheory.analysis.pareto.pareto_front`.

Yin et al. 2024 (arXiv 2411.00841), Theorems 4-5 (statements reconstructed and proved here; ``docs/derivations.md``,
proved here); Leviathan et al. 2023 (lenience); Cai et al. 2024, Medusa (typical
acceptance). Notation: p = target, q = draft. A biased rule is a rejection-based step::

    x ~ draft; accept with probability b(x); else emit y ~ P     (one rejection)

with accepted mass :math:`a = q b`, rejection probability :math:`\rho = 1 - \sum a` and
output :math:`o = a + \rho P` (see :mod:`spectheory.verifiers.rejection`).

**Optimal rejection law (Theorem 4).** For fixed ``b``, :math:`P^* = \mathrm{norm}((p - a)_+)`
minimises :math:`\mathrm{TV}(o, p)`, with loss :math:`L^* = \sum_x (a - p)_+`. *Proof.* For
any ``P``, :math:`o \ge a`, so :math:`\mathrm{TV}(o, p) = \sum (o - p)_+ \ge \sum (a - p)_+`.
With :math:`P^*` and :math:`E = \sum (p - a)_+ = \rho + L^* \ge \rho`: where
:math:`a \ge p`, :math:`o - p = a - p`; where :math:`a < p`,
:math:`o - p = -(p - a)(1 - \rho/E) \le 0`; so the bound is attained. (:math:`E = 0` forces
:math:`a = p`, :math:`\rho = 0`.)

**Pareto line (Theorem 5).** :math:`\rho + L^* = 1 - \sum a + \sum (a - p)_+ = 1 - \sum
\min(a, p) \ge 1 - \sum \min(q, p) = \mathrm{TV}(p, q)` because :math:`a \le q`. Equality iff
:math:`\min(q b, p) = \min(q, p)` for every ``x``, i.e. :math:`b \ge \min(1, p/q)` on the
support of ``q`` (*over-acceptance*). The mixtures :math:`b_\lambda = (1 - \lambda)\min(1,
p/q) + \lambda` give :math:`(\rho, L^*) = ((1 - \lambda)\mathrm{TV}, \lambda\mathrm{TV})`, so the
set of optimal trade-offs is exactly the segment from :math:`(0, \mathrm{TV})` to
:math:`(\mathrm{TV}, 0)`. For an over-accepting ``b``, :math:`(p - a)_+ = (p - q)_+`, so
:math:`P^*` is the usual residual.

**Naive law** :math:`P = p`: :math:`o - p = a - (1 - \rho) p`, loss
:math:`L_{naive} = \sum_x (a - (1-\rho) p)_+ \ge L^*`, with equality iff :math:`\rho = 0` or
:math:`a \le (1 - \rho) p` on the support of ``p`` (compare term by term: where
:math:`p > 0` and :math:`\rho > 0`, :math:`a - (1-\rho)p > a - p`). Otherwise the naive point
lies strictly above the line.

The three characterisations ("equality iff") are checked on every ``(p, q, b)`` with entries in
multiples of ``1/4`` on up to four tokens (``tests/verifiers/test_step_characterisations_grid.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law_pair, check_nonneg, check_prob
from .._typing import RNGLike
from ..laws.sampling import safe_ratio
from .rejection import (
    RejectionRule,
    _check_accept,
    optimal_rejection_law,
    rejection_step,
    sample_rejection_step,
    standard_acceptance,
)

__all__ = [
    "BiasedAcceptance",
    "additive_acceptance",
    "ratio_acceptance",
    "lenient_acceptance",
    "typical_acceptance",
    "BiasedStep",
    "biased_step",
    "over_accepts",
    "biased_rule",
    "sample_biased_step",
]

REJECTIONS = ("optimal", "target")


@dataclass(frozen=True)
class BiasedAcceptance:
    """An acceptance function ``b(target, draft) -> [..., V]`` with a name and parameters.

    Build with :func:`additive_acceptance`, :func:`ratio_acceptance`,
    :func:`lenient_acceptance` or :func:`typical_acceptance`; call it on laws. Each family is a
    subclass that computes its own unclipped acceptance (``_acceptance``); ``kind`` is its label.
    """

    kind: str
    param: float
    param2: float | None = None

    @property
    def name(self) -> str:
        return f"{self.kind}({self.param:g})"

    def _acceptance(self, t: np.ndarray, d: np.ndarray) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__}: define _acceptance(target, draft)")

    def __call__(self, target: np.ndarray, draft: np.ndarray) -> np.ndarray:
        t, d = as_law_pair(target, draft)
        with np.errstate(divide="ignore", invalid="ignore"):
            b = self._acceptance(t, d)
        return np.minimum(1.0, b)


class _Additive(BiasedAcceptance):
    def _acceptance(self, t: np.ndarray, d: np.ndarray) -> np.ndarray:
        return np.where(d > 0, (t + self.param) / np.where(d > 0, d, 1.0), 1.0)


class _Ratio(BiasedAcceptance):
    def _acceptance(self, t: np.ndarray, d: np.ndarray) -> np.ndarray:
        return np.where(d > 0, safe_ratio(t, d) + self.param, 1.0)


class _Lenient(BiasedAcceptance):
    def _acceptance(self, t: np.ndarray, d: np.ndarray) -> np.ndarray:
        return safe_ratio(t, self.param * d, 1.0)


class _Typical(BiasedAcceptance):
    @property
    def name(self) -> str:
        return f"typical(epsilon={self.param:g}, delta={self.param2:g})"

    def _acceptance(self, t: np.ndarray, d: np.ndarray) -> np.ndarray:
        ent = -np.where(t > 0, t * np.log(np.where(t > 0, t, 1.0)), 0.0).sum(-1, keepdims=True)
        thr = np.minimum(self.param, self.param2 * np.exp(-ent))
        return (t > thr).astype(np.float64)


def additive_acceptance(eps: float) -> BiasedAcceptance:
    r"""Over-acceptance :math:`b(x) = \min(1, (p(x) + \varepsilon)/q(x))`, ``eps >= 0``.

    Examples
    --------
    >>> from spectheory.verifiers.biased import additive_acceptance
    >>> additive_acceptance(0.1)([0.2, 0.8], [0.5, 0.5]).round(12).tolist()
    [0.6, 1.0]
    """
    return _Additive("additive", float(check_nonneg(eps, "eps")))


def ratio_acceptance(eps: float) -> BiasedAcceptance:
    r"""Over-acceptance :math:`b(x) = \min(1, p(x)/q(x) + \varepsilon)`, ``eps >= 0``."""
    return _Ratio("ratio", float(check_nonneg(eps, "eps")))


def lenient_acceptance(lenience: float) -> BiasedAcceptance:
    r"""Leviathan et al.'s lenience: :math:`b(x) = \min(1, p(x)/(l\,q(x)))`, ``l`` in (0, 1].

    ``l = 1`` is standard speculative sampling. Accepted mass :math:`\min(p/l, q)`; with
    the optimal (= standard residual) law the loss is :math:`\alpha(l) - \alpha(1)`, the
    excess acceptance :math:`\sum \min(p/l, q) - \sum \min(p, q)`.
    """
    lv = float(check_prob(lenience, "lenience", open_low=True))
    return _Lenient("lenience", lv)


def typical_acceptance(epsilon: float = 0.09, delta: float = 0.3) -> BiasedAcceptance:
    r"""Medusa's typical acceptance (Cai et al. 2024): accept ``x`` iff
    :math:`p(x) > \min(\epsilon, \delta\, e^{-H(p)})`, ``H`` the target's entropy (nats).

    Defaults ``epsilon = 0.09`` (Medusa's ``posterior_threshold``) and ``delta = 0.3``
    (``posterior_alpha``). Medusa, when a candidate is rejected, continues with the
    target's own token, sampled from the target; as a rejection-based step this is
    ``rejection="target"`` (``P = p``). The rule is deterministic given ``x`` and need
    not over-accept (``b = 0`` where :math:`p` is below the threshold).
    """
    e = float(check_nonneg(epsilon, "epsilon"))
    dl = float(check_nonneg(delta, "delta"))
    return _Typical("typical", e, dl)


def _acceptance_array(target, draft, accept):
    """``b`` from a callable ``accept(target, draft)`` or an array, checked to lie in [0, 1]."""
    return _check_accept(accept(target, draft) if callable(accept) else accept, np.shape(target))


@dataclass
class BiasedStep:
    """Exact single-step behaviour of a biased rule.

    Attributes
    ----------
    accept : ndarray (..., V)            acceptance probabilities ``b``
    accepted : ndarray (..., V)          accepted mass ``a = q b``
    rejection : ndarray (...)            rejection probability ``rho``
    rejection_law : ndarray (..., V)     ``P`` (optimal or target)
    output : ndarray (..., V)            output law ``a + rho P``
    loss : ndarray (...)                 ``TV(output, target)``
    tv : ndarray (...)                   ``TV(target, draft)`` (the front's intercept)
    """

    accept: np.ndarray
    accepted: np.ndarray
    rejection: np.ndarray
    rejection_law: np.ndarray
    output: np.ndarray
    loss: np.ndarray
    tv: np.ndarray

    @property
    def excess(self) -> np.ndarray:
        """``rejection + loss - TV``: 0 on the Pareto line, > 0 above it."""
        return self.rejection + self.loss - self.tv


def biased_step(
    target: ArrayLike,
    draft: ArrayLike,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray] | ArrayLike,
    rejection: str = "optimal",
) -> BiasedStep:
    r"""Rejection probability, output law and TV loss of a biased rule at one position.

    Parameters
    ----------
    target, draft : array_like, shape (..., V)
    accept : callable or array_like
        ``accept(target, draft) -> b`` (e.g. :func:`additive_acceptance`) or ``b`` itself.
    rejection : {"optimal", "target"}
        :math:`P^* = \mathrm{norm}((p - q b)_+)` or the naive :math:`P = p`.

    Examples
    --------
    >>> from spectheory.verifiers.biased import biased_step, additive_acceptance
    >>> t, d = [0.2, 0.8], [0.5, 0.5]
    >>> opt = biased_step(t, d, additive_acceptance(0.1))
    >>> round(float(opt.rejection), 12), round(float(opt.loss), 12), round(float(opt.tv), 12)
    (0.2, 0.1, 0.3)
    >>> round(float(biased_step(t, d, additive_acceptance(0.1), "target").loss), 12)
    0.14
    """
    t, d = as_law_pair(target, draft)
    if rejection not in REJECTIONS:
        raise ValueError(f"rejection: expected one of {REJECTIONS}, got {rejection!r}")
    b = _acceptance_array(t, d, accept)
    P = optimal_rejection_law(t, d, b) if rejection == "optimal" else t
    step = rejection_step(t, d, b, P)
    tv = 0.5 * np.abs(t - d).sum(-1)
    return BiasedStep(b, step.accepted, step.rejection, P, step.output, step.loss, tv[()])


def over_accepts(
    target: ArrayLike,
    draft: ArrayLike,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray] | ArrayLike,
    atol: float = 1e-12,
) -> np.ndarray | bool:
    r"""True where :math:`b \ge \min(1, p/q)` on the support of ``q`` (per row)."""
    t, d = as_law_pair(target, draft)
    b = _acceptance_array(t, d, accept)
    ok = (b >= standard_acceptance(t, d) - atol) | (d == 0)
    return np.all(ok, axis=-1)[()]


def biased_rule(
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray], rejection: str = "optimal"
) -> RejectionRule:
    """A :class:`~spectheory.verifiers.rejection.RejectionRule` applying ``accept`` at every position."""
    if rejection not in REJECTIONS:
        raise ValueError(f"rejection: expected one of {REJECTIONS}, got {rejection!r}")
    name = getattr(accept, "name", "biased")
    return RejectionRule(accept, rejection, f"{name}/{rejection}")


def sample_biased_step(
    target: ArrayLike,
    draft: ArrayLike,
    accept: Callable[[np.ndarray, np.ndarray], np.ndarray] | ArrayLike,
    rejection: str = "optimal",
    size: int = 1,
    rng: RNGLike = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Draw ``size`` independent steps of a biased rule at one position.

    Returns ``(tokens [size], rejected [size])``; the law of ``tokens`` is
    ``biased_step(target, draft, accept, rejection).output``.
    """
    step = biased_step(target, draft, accept, rejection)
    return sample_rejection_step(target, draft, step.accept, step.rejection_law, size, rng)

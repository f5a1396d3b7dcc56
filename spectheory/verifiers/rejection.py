r"""General rejection-based verifiers and the optimality of speculative sampling.

Yin et al. 2024 (arXiv 2411.00841), Theorems 1-2. Notation: p = target, q = draft.
A *rejection-based verifier* at one position::

    x ~ draft                       # the draft token
    with probability b(x): emit x   # accepted
    otherwise: emit y ~ P           # rejected: one rejection is counted

for any acceptance function ``b(x) in [0, 1]`` and any rejection law ``P``. With the
accepted mass :math:`a(x) = q(x) b(x)`:

- rejection probability :math:`\rho = 1 - \sum_x a(x)`;
- output law :math:`o = a + \rho P`;
- unbiased (:math:`o = p`) iff :math:`a \le p` pointwise and, when :math:`\rho > 0`,
  :math:`P = (p - a)/\rho`. Indeed :math:`P \ge 0` forces :math:`a \le p`; conversely
  :math:`\sum (p - a) = \rho`, so :math:`(p - a)/\rho` is a law and makes :math:`o = p`.
  The unbiased ``P`` is therefore unique when it exists (:func:`unbiased_rejection_law`).

**Theorem 2 (per step).** If :math:`o = p` then :math:`a \le \min(p, q)` (since
:math:`b \le 1`), so :math:`\rho = 1 - \sum a \ge 1 - \sum \min(p, q) = \mathrm{TV}(p, q)`,
with equality iff :math:`a = \min(p, q)`, i.e. :math:`b = \min(1, p/q)` on the support of
``q``: standard speculative sampling. **Over a horizon** (``bonus=False``, every position is
a check): an unbiased rule keeps prefixes target-distributed, so the expected number of
rejections is :math:`\sum_n E[\rho_n] \ge \sum_n E[\mathrm{TV}_n]` (Theorem 1 is the equality
case); :func:`rule_expected_rejections` computes both exactly. The "iff"s above are checked on
every ``(p, q, b)`` with entries in multiples of ``1/4`` on up to four tokens
(``tests/verifiers/test_step_characterisations_grid.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._guards import as_law, check_int, check_prob
from ..laws.sampling import sample_categorical
from ._positional import per_kernel
from .base import Verifier

# The step's rules are defined and listed (``__all__``) in :mod:`.rejection_step`; they stay
# importable from here.
from .rejection_step import (
    ACCEPT_ATOL,
    GAP_MASS_TOL,  # noqa: F401  (re-exported)
    UNBIASED_ATOL,  # noqa: F401  (re-exported)
    RejectionStep,  # noqa: F401  (re-exported)
    _check_accept,
    is_unbiased,  # noqa: F401  (re-exported)
    optimal_rejection_law,
    rejection_step,  # noqa: F401  (re-exported)
    rejection_verify,  # noqa: F401  (re-exported)
    sample_rejection_step,  # noqa: F401  (re-exported)
    scaled_acceptance,  # noqa: F401  (re-exported)
    standard_acceptance,
    unbiased_rejection_law,
)

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["RejectionRule", "standard_rule", "scaled_rule", "rule_expected_rejections"]


# ----------------------------------------------------------------- rules on chains
@dataclass(frozen=True, repr=False)
class RejectionRule(Verifier):
    """A rejection-based rule applied at every drafted position: a token-by-token
    :class:`~spectheory.verifiers.base.Verifier`.

    ``accept(target [.., V], draft [.., V]) -> b`` and ``rejection`` one of
    ``"unbiased"`` (:func:`unbiased_rejection_law`; raises if none exists),
    ``"optimal"`` (:func:`optimal_rejection_law`), ``"target"`` (``P = target``), or a
    callable ``(target, draft, b) -> P``.

    :meth:`tables` validates what the callables return: ``b`` must have the kernels' shape
    and lie in [0, 1] (rounding slack ``ACCEPT_ATOL``, then clipped), a callable's ``P``
    must be laws of that shape; otherwise ValueError naming ``accept`` or ``rejection``.

    As a Verifier, the pure rule accepts draft ``i`` iff ``u_accept[i] < b_i(x_i)``; at the
    first rejection the final token is ``P_i``'s inverse-CDF sample at ``u_final``, after
    ``k`` acceptances the target's bonus law's. Exact values come from the phase recursion
    with the masses ``q b`` and ``rho P`` (:meth:`masses`).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers import standard_rule
    >>> rule = standard_rule()                     # b = min(1, p/q): token verification
    >>> t = np.array([[[0.5, 0.5], [0.5, 0.5]]]); d = np.array([[[0.8, 0.2]]])
    >>> rule.rule(t, d, [[0]], [1], [[0.6]], [0.3])   # b(0) = 0.625 > 0.6: accepted
    (array([1]), array([0]))
    >>> rule.lossless
    True
    """

    accept: Callable
    rejection: object = "optimal"
    name: str = "rule"

    @property
    def lossless(self) -> bool:  # type: ignore[override]  # derived here, a class attribute on Verifier
        """True for the ``"unbiased"`` rejection law (the output is the target's)."""
        return isinstance(self.rejection, str) and self.rejection == "unbiased"

    def _rule(self, t, d, x, k, u_accept, u_final):
        R, g, _ = d.shape
        rows = np.arange(R)
        b, P, _ = self.tables(t[:, :g], d)
        bx = np.take_along_axis(b, x[..., None], axis=-1)[..., 0]
        ok = (u_accept < bx) & (np.arange(g)[None, :] < k[:, None])
        j = np.cumprod(ok, axis=1).sum(axis=1).astype(np.int64)
        rejected = j < k
        jc = np.minimum(j, g - 1)
        law = np.where(rejected[:, None], P[rows, jc], t[rows, k])
        return j, sample_categorical(law, u_final)

    def phase_masses(self, chain: ChainLike) -> tuple[Any, Any, bool]:
        masses = per_kernel(chain, self.masses)
        return (lambda n, i: masses(n)[0]), (lambda n, i: masses(n)[1]), False

    def __repr__(self) -> str:
        return f"RejectionRule(name={self.name!r}, rejection={self.rejection!r})"

    def tables(self, target: np.ndarray, draft: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(b, P, rho)`` for kernels ``[S, V]``."""
        t = np.asarray(target, dtype=np.float64)
        b = _check_accept(self.accept(target, draft), t.shape, ACCEPT_ATOL)
        if callable(self.rejection):
            P = as_law(self.rejection(target, draft, b), "rejection")
            if P.shape != t.shape:
                raise ValueError(f"rejection: the rejection law must have shape {t.shape}, got {P.shape}")
        elif self.rejection == "unbiased":
            P = unbiased_rejection_law(target, draft, b, atol=1e-9)
        elif self.rejection == "optimal":
            P = optimal_rejection_law(target, draft, b)
        elif self.rejection == "target":
            P = np.asarray(target, dtype=np.float64)
        else:
            raise ValueError(
                f"rejection: expected 'unbiased', 'optimal', 'target' or a callable, got {self.rejection!r}"
            )
        rho = np.clip(1.0 - (draft * b).sum(-1), 0.0, 1.0)
        return b, P, rho

    def masses(self, target: np.ndarray, draft: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(accepted mass q b, rejected mass rho P)``, each ``[S, V]``."""
        b, P, rho = self.tables(target, draft)
        return draft * b, rho[..., None] * P


def standard_rule() -> RejectionRule:
    """Speculative sampling: ``b = min(1, p/q)``, ``P = norm(max(p - q, 0))``."""
    return RejectionRule(standard_acceptance, "unbiased", "standard")


def scaled_rule(scale: float) -> RejectionRule:
    """Unbiased rule with acceptance ``scale * min(1, p/q)`` and its unique rejection law."""
    s = float(check_prob(scale, "scale"))
    return RejectionRule(lambda t, d: s * standard_acceptance(t, d), "unbiased", f"scaled({s:g})")


def rule_expected_rejections(
    chain: ChainLike,
    horizon: int,
    rule: RejectionRule,
    gamma: int | None = None,
    bonus: bool = True,
    method: str = "direct",
) -> float:
    r"""Exact expected rejections of a rejection-based rule over ``horizon`` tokens.

    With ``bonus=False`` every position is a check whatever ``gamma`` is, and so with
    ``gamma=None`` (rounds draft to the end of the horizon, so no round ends with a bonus
    token, whatever ``bonus`` says); the state law then follows the output kernel
    :math:`o_n = a_n + \rho_n P_n`; ``method="direct"``
    computes :math:`\sum_n E_{s \sim \text{output}}[\rho_n(s)]` by propagating that law.
    ``method="analysis"`` (used whenever ``bonus=True`` and ``gamma`` is given) runs
    :func:`spectheory.exact.phase.phase_recursion` with the rule's masses (``gamma=None``:
    drafts to the end of the horizon). For unbiased rules the
    state law is the target's, so the value is :math:`\ge \sum_n E[\mathrm{TV}_n]`
    (Theorem 2) with equality for :func:`standard_rule` (Theorem 1).

    Returns
    -------
    float

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.verifiers.rejection import rule_expected_rejections, standard_rule, scaled_rule
    >>> chain = st.DecodingChain.random(3, rng=1)
    >>> r_std = rule_expected_rejections(chain, 5, standard_rule())
    >>> bool(abs(r_std - chain.tv_profile(5).sum()) < 1e-12)
    True
    >>> bool(rule_expected_rejections(chain, 5, scaled_rule(0.8)) > r_std)
    True
    """
    T = chain.check_horizon(horizon)
    masses = per_kernel(chain, rule.masses)
    if method not in ("direct", "analysis"):
        raise ValueError(f"method: expected 'direct' or 'analysis', got {method!r}")
    if method == "analysis" or (bonus and gamma is not None):
        G = T if gamma is None else check_int(gamma, "gamma", 1)
        return rule.exact(chain, T, G, bonus).rejections
    vec = chain.initial
    total = 0.0
    for n in range(T):
        acc, rej = masses(n)
        total += float(vec @ rej.sum(-1))
        if n + 1 < T:
            vec = np.asarray(vec @ chain.transition_operator(acc + rej)).ravel()
    return total

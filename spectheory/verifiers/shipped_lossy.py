r"""Lossy acceptance rules that engines and papers ship, as token-by-token rejection rules.

Each is a :class:`~spectheory.verifiers.biased.BiasedAcceptance` (an acceptance ``b(p, q)``)
made into a :class:`~spectheory.verifiers.rejection.RejectionRule` (a
:class:`~spectheory.verifiers.base.Verifier`: it runs in ``st.simulate`` and the exact
engines) by :func:`shipped_lossy_rules`. Notation p = target, q = draft, per position.

* **Speculative cascades** (Narasimhan et al., ICLR 2025, arXiv 2405.19261; the Chow deferral
  rule): use the draft's law where the draft is confident enough, ``max q >= max p - alpha``,
  else the target's. As a step: ``b = 1`` where the draft is used, ``b = min(1, p/q)``
  elsewhere, with the residual rejection law (speculative sampling against the mixed target).
* **Fuzzy speculative decoding** (FSD; Holsman et al. 2025, arXiv 2502.20704): accept the drafted
  token outright when a divergence between the two laws is at most a threshold (here the
  Jensen-Shannon divergence in nats), else verify it as usual.
* **BiLD's rollback** (Kim et al., NeurIPS 2023, arXiv 2302.07863): keep the small model's
  token unless the large model finds it too unlikely, ``-log p(x) > r``; on a rollback the
  large model's own token is emitted (``P = p``).
* **Typical acceptance** (Medusa; :func:`~spectheory.verifiers.biased.typical_acceptance`).

Rules that read tokens *after* the position they judge (FLy's deferred window, Li et al., ICLR
2026) are outside the token-by-token class and are not modelled here.

Examples
--------
>>> import numpy as np
>>> from spectheory.verifiers.shipped_lossy import cascade_acceptance, fsd_acceptance
>>> p, q = np.array([0.5, 0.5]), np.array([0.9, 0.1])
>>> cascade_acceptance(0.5)(p, q).tolist()  # max q = 0.9 >= 0.5 - 0.5: the draft is used
[1.0, 1.0]
>>> fsd_acceptance(0.0)(p, q).round(6).tolist()  # threshold 0: plain speculative sampling
[0.555556, 1.0]
"""

from __future__ import annotations

import numpy as np

from .._guards import check_nonneg
from .biased import BiasedAcceptance, biased_rule, typical_acceptance
from .rejection import RejectionRule

__all__ = [
    "cascade_acceptance",
    "fsd_acceptance",
    "bild_acceptance",
    "js_divergence",
    "shipped_lossy_rules",
]


def _standard(t: np.ndarray, d: np.ndarray) -> np.ndarray:
    return np.where(d > 0, np.minimum(1.0, t / np.where(d > 0, d, 1.0)), 1.0)


def js_divergence(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Jensen-Shannon divergence (nats) of the last axis, keeping it as a size-1 axis."""
    m = 0.5 * (p + q)

    def kl(a: np.ndarray) -> np.ndarray:
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(a > 0, a * np.log(np.where(a > 0, a, 1.0) / np.where(m > 0, m, 1.0)), 0.0).sum(
                -1, keepdims=True
            )

    return 0.5 * kl(p) + 0.5 * kl(q)


class _Cascade(BiasedAcceptance):
    def _acceptance(self, t: np.ndarray, d: np.ndarray) -> np.ndarray:
        use_draft = d.max(-1, keepdims=True) >= t.max(-1, keepdims=True) - self.param
        return np.where(use_draft, 1.0, _standard(t, d))


class _FSD(BiasedAcceptance):
    def _acceptance(self, t: np.ndarray, d: np.ndarray) -> np.ndarray:
        return np.where(js_divergence(t, d) <= self.param, 1.0, _standard(t, d))


class _BiLD(BiasedAcceptance):
    def _acceptance(self, t: np.ndarray, d: np.ndarray) -> np.ndarray:
        return (t >= np.exp(-self.param)).astype(np.float64)


def cascade_acceptance(alpha: float) -> BiasedAcceptance:
    """Speculative cascades' Chow deferral: ``b = 1`` on rows with ``max q >= max p - alpha``."""
    return _Cascade("cascade", float(check_nonneg(alpha, "alpha")))


def fsd_acceptance(threshold: float) -> BiasedAcceptance:
    """FSD: ``b = 1`` on rows whose Jensen-Shannon divergence is at most ``threshold`` (nats)."""
    return _FSD("fsd", float(check_nonneg(threshold, "threshold")))


def bild_acceptance(r: float) -> BiasedAcceptance:
    """BiLD's rollback test: keep ``x`` iff ``-log p(x) <= r``."""
    return _BiLD("bild", float(check_nonneg(r, "r")))


def shipped_lossy_rules(quick: bool = False) -> list[tuple[str, float | str, RejectionRule]]:
    """The shipped lossy rules at a few settings each: ``[(family, parameter, rule), ...]``."""
    cas = [0.05, 0.2] if quick else [0.02, 0.05, 0.1, 0.2, 0.4]
    fsd = [0.05, 0.2] if quick else [0.01, 0.03, 0.05, 0.1, 0.2, 0.4]
    bild = [1.5, 3.0] if quick else [0.7, 1.0, 1.5, 2.0, 3.0]
    typ = [(0.09, 0.3)] if quick else [(0.05, 0.2), (0.09, 0.3), (0.2, 0.45)]
    out: list[tuple[str, float | str, RejectionRule]] = []
    out += [("cascade (Chow)", a, biased_rule(cascade_acceptance(a), "optimal")) for a in cas]
    out += [("FSD (JS)", t, biased_rule(fsd_acceptance(t), "optimal")) for t in fsd]
    out += [("BiLD rollback", r, biased_rule(bild_acceptance(r), "target")) for r in bild]
    out += [
        ("typical (Medusa)", f"{e:g}/{d:g}", biased_rule(typical_acceptance(e, d), "target")) for e, d in typ
    ]
    return out

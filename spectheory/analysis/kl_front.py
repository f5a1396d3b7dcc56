r"""The exact KL-constrained sequence-level front: the fewest expected rejections at a KL budget.

``docs/sequence_front.md`` shows that every token-by-token rejection-based rule that emits the
sequence law :math:`O` rejects at least

.. math:: C(O) = \sum_{n} E_{X \sim O}\big[\mathrm{TV}(O_n(\cdot \mid X_{<n}), q_n(\cdot \mid X_{<n}))\big]

times in expectation (bonus off), with equality for the rule that runs speculative sampling with
:math:`O_n` in the target's place. With the quality measured by the TV of :math:`O` from the
target's law :math:`P_T` the front is a linear program (:mod:`.sequence_front`). With
:math:`\mathrm{KL}(O \,\|\, P_T)` it is a convex program, solved here exactly by its Lagrangian:
for :math:`\lambda > 0`,

.. math:: L(\lambda) = \min_O\; C(O) + \lambda\, \mathrm{KL}(O \,\|\, P_T).

By the chain rule both terms are sums over prefixes of the prefix's mass times a function of its
conditional, so the minimum is a backward recursion over the prefix tree: with :math:`J = 0` at
the leaves, at a prefix :math:`h` with next-token laws :math:`p, q` and children's values
:math:`c_x = J(hx)`,

.. math:: J(h) = \min_{o \in \Delta} \sum_x \big[(o_x - q_x)_+ + \lambda\, o_x \log\tfrac{o_x}{p_x} + c_x o_x\big].

Its KKT conditions give, for a multiplier :math:`\nu`, :math:`o_x = p_x e^{-(c_x+\nu)/\lambda - 1}`
where that is below :math:`q_x`, :math:`o_x = p_x e^{-(c_x+\nu+1)/\lambda - 1}` where that is above,
and :math:`o_x = q_x` in between: a non-increasing function of :math:`\nu`, so
:math:`\sum_x o_x = 1` is solved by bisection in a closed-form bracket to machine precision.
Each :math:`\lambda` gives one point :math:`(\mathrm{KL}(O_\lambda), C(O_\lambda))` of the front
(the minimiser is unique: KL is strictly convex), and :math:`C + \lambda\,\mathrm{KL} \ge
L(\lambda)` for **every** law :math:`O`: the weak-duality test that no law beats the front.

Examples
--------
>>> import spectheory as st
>>> from spectheory.analysis.kl_front import kl_front
>>> front = kl_front(st.DecodingChain.random(2, rng=0), 3, lambdas=[1e-3, 1.0, 1e3], start_state=0)
>>> bool(front.kl[0] == 0 and front.rejections[0] > front.rejections[-1])  # KL 0 costs most
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._protocols import ChainLike
from .sequence_front_tree import PrefixForest, prefix_forest, rule_point

__all__ = ["KLFront", "kl_front", "kl_step", "sequence_kl", "rule_kl"]


def kl_step(p: np.ndarray, q: np.ndarray, c: np.ndarray, lam: float, iters: int = 200) -> np.ndarray:
    r"""The minimiser :math:`o` of :math:`\sum_x (o_x - q_x)_+ + \lambda o_x \log(o_x/p_x) + c_x o_x`
    over the simplex, row by row (``[N, V]`` arrays; ``lam > 0``). Tokens with ``p = 0`` get 0."""
    if lam <= 0:
        raise ValueError(f"lam: the multiplier must be > 0, got {lam}")
    p, q, c = (np.asarray(a, dtype=np.float64) for a in (p, q, c))
    with np.errstate(divide="ignore"):
        logp = np.where(p > 0, np.log(np.where(p > 0, p, 1.0)), -np.inf)
    base = logp - c / lam - 1.0  # log of o at t = 0 in the "below q" branch; o = exp(base + t)
    top = np.max(base, axis=1, keepdims=True)
    # sum_x exp(base + t) = 1 at t_a, and the "above q" branch equals it at t_a + 1/lam: the root
    # of sum o(t) = 1 lies in [t_a, t_a + 1/lam] since o is between the two branches
    t_a = -(top + np.log(np.exp(base - top).sum(1, keepdims=True)))
    lo, hi = t_a, t_a + 1.0 / lam

    def law(t: np.ndarray) -> np.ndarray:
        with np.errstate(over="ignore"):
            below = np.exp(base + t)
            above = np.exp(base + t - 1.0 / lam)
        return np.where(below < q, below, np.where(above > q, above, q)) * (p > 0)

    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        big = law(mid).sum(1, keepdims=True) > 1.0
        hi = np.where(big, mid, hi)
        lo = np.where(big, lo, mid)
    o = law(0.5 * (lo + hi))
    return o / o.sum(1, keepdims=True)


def sequence_kl(forest: PrefixForest, leaves: ArrayLike) -> float:
    r""":math:`\mathrm{KL}(O \,\|\, P_T)` of a leaf law against the target's (``inf`` off its support)."""
    o = np.asarray(leaves, dtype=np.float64)
    p = forest.target_mass[-1]
    pos = o > 0
    if np.any(pos & (p <= 0)):
        return float("inf")
    return float(np.sum(o[pos] * np.log(o[pos] / p[pos])))


@dataclass(frozen=True)
class KLFront:
    """Points of the exact KL front, one per multiplier, sorted by KL.

    Attributes
    ----------
    lambdas, kl, rejections : ndarray ``[L]``; the first point is the exact ``lambda = inf`` end
        (``O = P_T``, ``KL = 0``, Theorem 1's rejections)
    dual : ndarray ``[L]``, :math:`L(\\lambda) = C + \\lambda\\,KL` at the minimiser: for every law
        O, ``C(O) + lambda * KL(O) >= dual`` (weak duality)
    laws : ndarray ``[L, leaves]``, the optimal sequence laws
    forest : the prefix forest they live on
    """

    lambdas: np.ndarray
    kl: np.ndarray
    rejections: np.ndarray
    dual: np.ndarray
    laws: np.ndarray
    forest: PrefixForest

    def optimum(self, kl_budget: float) -> float:
        """Fewest rejections at ``KL <= kl_budget``, by linear interpolation between points (an
        upper bound on the exact convex front between them, exact at the points)."""
        return float(np.interp(kl_budget, self.kl, self.rejections))

    def duality_slack(self, rejections: float, kl: float) -> float:
        r""":math:`\min_\lambda\, C + \lambda\,KL - L(\lambda)` of a law with these values: never
        negative (weak duality); 0 up to rounding for the front's own points."""
        finite = np.isfinite(self.lambdas)
        return float(np.min(rejections + self.lambdas[finite] * kl - self.dual[finite]))

    def lower_bound(self, kl: float) -> float:
        r"""A certified lower bound on the front at ``kl``: :math:`\max_\lambda L(\lambda) - \lambda\,kl`."""
        finite = np.isfinite(self.lambdas)
        bounds = self.dual[finite] - self.lambdas[finite] * kl
        return float(max(np.max(bounds), 0.0) if kl > 0 else self.rejections[0])


def kl_front(
    chain: ChainLike,
    horizon: int,
    lambdas: Sequence[float] | None = None,
    start_state: int | None = None,
) -> KLFront:
    r"""The exact front :math:`\min\{C(O) : \mathrm{KL}(O \,\|\, P_T) \le \varepsilon\}` traced by
    its Lagrange multipliers (bonus off; the chain's prefix forest, small :math:`V^T`).

    Parameters
    ----------
    chain : DecodingChain
    horizon : T
    lambdas : multipliers > 0 (default: 41 points log-spaced over 1e-3..1e3); large lambda
        gives O -> P_T (KL -> 0), small lambda gives O -> Q_T (no rejections)
    start_state : fix the start state (default: the chain's initial law)
    """
    forest = prefix_forest(chain, horizon, start_state)
    lams = np.sort(np.asarray(np.logspace(-3, 3, 41) if lambdas is None else lambdas, dtype=float))[::-1]
    if np.any(lams <= 0):
        raise ValueError("lambdas: multipliers must be > 0")
    V, T = forest.vocab_size, forest.horizon
    laws, kls, rejs, duals = [], [], [], []
    for lam in lams:
        J = np.zeros(forest.level_sizes()[T])
        steps: list[np.ndarray] = [np.zeros(0)] * T
        for n in range(T - 1, -1, -1):
            p, q = forest.target[n], forest.draft[n]
            c = J.reshape(-1, V)
            o = kl_step(p, q, c, lam)
            steps[n] = o
            with np.errstate(divide="ignore", invalid="ignore"):
                kl_terms = np.where(o > 0, o * np.log(np.where(o > 0, o, 1.0) / np.where(p > 0, p, 1.0)), 0.0)
            J = (np.maximum(o - q, 0.0) + lam * kl_terms + c * o).sum(1)
        mass = forest.weights.copy()
        for n in range(T):
            mass = (mass[:, None] * steps[n]).ravel()
        laws.append(mass)
        kls.append(sequence_kl(forest, mass))
        rejs.append(float(forest.rejections_of(mass)))
        duals.append(float(forest.weights @ J))
    # the lambda -> infinity end, exactly: O = P_T, KL = 0, C(P_T) (Theorem 1's value)
    laws.append(forest.target_mass[-1].copy())
    kls.append(0.0)
    rejs.append(float(forest.rejections_of(forest.target_mass[-1])))
    duals.append(rejs[-1])
    lams = np.append(lams, np.inf)
    order = np.argsort(kls, kind="stable")
    return KLFront(
        lams[order],
        np.array(kls)[order],
        np.array(rejs)[order],
        np.array(duals)[order],
        np.array(laws)[order],
        forest,
    )


def rule_kl(forest: PrefixForest, rule: object) -> tuple[float, float]:
    """``(expected rejections, KL(O || P_T))`` of a per-state rejection rule (bonus off), exactly,
    from its emitted sequence law (:func:`~spectheory.analysis.sequence_front_tree.rule_point`)."""
    point = rule_point(forest, rule)  # type: ignore[arg-type]
    return point.rejections, sequence_kl(forest, point.law)

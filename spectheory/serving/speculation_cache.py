r"""Speculation caches (SSD / Saguaro, Kumar, Dao & May, ICLR 2026, arXiv 2603.03251), exactly.

While the target verifies a round of K drafted tokens, the speculator prepares the next round
for several possible verification outcomes :math:`(k, b)`: k drafts accepted and the token b
the target emits after them (the resampled token, or the bonus token when k = K). With a
*fan-out* :math:`F_k` it caches :math:`F_k` guesses of b for each k; the next round starts at
once on a *hit* (the outcome is a cached key). ``docs/speculation_cache.md`` derives:

* the **joint law of the outcome** from a round-start law :math:`\mu` on a chain (token
  verification): with :math:`M = \min(p, q)` (the accepted mass) and :math:`f_0 = \mu`,
  :math:`f_{j+1} = f_j M` (propagated through the chain's states),

  .. math:: P(A = j, b = y) = (f_j\,(p - M))(y)\ (j < K), \qquad P(A = K, b = y) = (f_K\, p)(y);

* the **hit probability** of a fan-out allocation whose guesses at count k are a function of
  the state after the k accepted drafts (the speculator knows them: it drafted them), e.g. the
  draft's own top-:math:`F_k` tokens there: :math:`\sum_k \sum_s f_k(s) \sum_{y \in G_k(s)}
  g_k(s, y)` with :math:`g_k = p - M` for k < K and :math:`p` for k = K. The drafted token at
  position k + 1 is integrated out: given the state, the probability of rejecting it times the
  residual law is :math:`(p - M)(s, \cdot)` whatever was drafted;
* the **optimal allocation** under a budget :math:`\sum_k F_k \le B`: a knapsack over k
  (dynamic programming, exact; the gains need not be concave in F);
* the paper's **power-law assumption** (the miss probability at count k falls like
  :math:`F^{-r}`, from which it derives a capped geometric allocation
  :math:`F_k \propto P(A = k)^{1/(1+r)}`) tested on a chain: the fitted exponent, the fit's
  worst relative error, and the hit probability of the geometric allocation against the optimum.

Examples
--------
>>> import spectheory as st
>>> from spectheory.serving.speculation_cache import hit_probability, outcome_law
>>> chain = st.DecodingChain.random(6, concentration=0.5, similarity=0.6, rng=0)
>>> law = outcome_law(chain, 3)
>>> law.shape, bool(abs(law.sum() - 1) < 1e-12)
((4, 6), True)
>>> bool(abs(hit_probability(chain, 3, [6, 6, 6, 6]) - 1) < 1e-12)  # every key cached
True
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..chain.classes import require_one_closed_class, stationary_distribution

__all__ = [
    "outcome_law",
    "round_start_law",
    "hit_probability",
    "optimal_fanout",
    "geometric_fanout",
    "power_law_test",
    "PowerLawTest",
]


def _dense(op: Any) -> np.ndarray:
    return op.toarray() if hasattr(op, "toarray") else np.asarray(op)


def _tables(chain: Any, k: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if not chain.is_homogeneous:
        raise ValueError("chain: a speculation cache is analysed on a homogeneous chain (one kernel pair)")
    p, q = chain.target, chain.draft
    m = np.minimum(p, q)
    return p, q, m, _dense(chain.transition_operator(m))


def round_start_law(chain: Any, k: int) -> np.ndarray:
    r"""Stationary law of the round-start state when every round drafts K tokens (``[S]``).

    The next round starts at the state after the emitted token: the round-start kernel is
    :math:`\sum_{j<K} A^j R + A^K P` with :math:`A, R, P` the transition operators of the
    accepted mass, the rejected mass :math:`p - \min(p, q)` and the target. Needs one closed
    class.
    """
    k = check_int(k, "K", 1)
    p, _, m, a = _tables(chain, k)
    r, pt = _dense(chain.transition_operator(p - m)), _dense(chain.transition_operator(p))
    kernel, power = np.zeros_like(a), np.eye(a.shape[0])
    for _ in range(k):
        kernel += power @ r
        power = power @ a
    kernel += power @ pt
    require_one_closed_class(kernel, "round_start_law")
    return stationary_distribution(kernel)


def _start(chain: Any, k: int, start: ArrayLike | int | None) -> np.ndarray:
    if start is None:
        return round_start_law(chain, k)
    if np.isscalar(start):
        state = check_int(start, "start", 0)
        if state >= chain.n_states:
            raise ValueError(f"start: state {state} of a chain with {chain.n_states} states")
        mu = np.zeros(chain.n_states)
        mu[state] = 1.0
        return mu
    mu = np.asarray(start, dtype=float)
    if mu.shape != (chain.n_states,) or np.any(mu < 0) or abs(mu.sum() - 1.0) > 1e-9:
        raise ValueError(f"start: a probability vector over the chain's {chain.n_states} states")
    return mu


def _forward(chain: Any, k: int, start: ArrayLike | int | None) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``f_j`` (state mass after j accepted drafts) and ``g_j`` (``[S, V]`` mass of the emitted
    token given the state) for j = 0..K."""
    p, _, m, a = _tables(chain, k)
    f = [_start(chain, k, start)]
    for _ in range(k):
        f.append(f[-1] @ a)
    return f, [p - m] * k + [p]


def outcome_law(chain: Any, k: int, start: ArrayLike | int | None = None) -> np.ndarray:
    """Joint law ``[K + 1, V]`` of (accepted count, emitted token) of one round of K drafts.

    ``start``: a state, a law over states, or ``None`` (the long-run round-start law).
    """
    k = check_int(k, "K", 1)
    f, g = _forward(chain, k, start)
    return np.stack([fj @ gj for fj, gj in zip(f, g)])


def _gains(chain: Any, k: int, max_fanout: int, start: Any, guesses: str) -> np.ndarray:
    """``G[j, F]``: probability of outcome count j with the emitted token among the F guesses."""
    f, g = _forward(chain, k, start)
    if guesses not in ("draft", "oracle"):
        raise ValueError(f"guesses: 'draft' (the draft's top tokens) or 'oracle', got {guesses!r}")
    out = np.zeros((k + 1, max_fanout + 1))
    for j in range(k + 1):
        rank = np.argsort(-(chain.draft if guesses == "draft" else g[j]), axis=1, kind="stable")
        mass = np.take_along_axis(g[j], rank, axis=1)[:, :max_fanout]  # [S, F]
        out[j, 1 : mass.shape[1] + 1] = np.cumsum(f[j] @ mass)
        out[j, mass.shape[1] + 1 :] = out[j, mass.shape[1]]
    return out


def hit_probability(
    chain: Any, k: int, fanout: Sequence[int], start: ArrayLike | int | None = None, guesses: str = "draft"
) -> float:
    """Exact probability that a round's outcome is a cached key.

    Parameters
    ----------
    chain : homogeneous DecodingChain
    k : draft length K
    fanout : K + 1 non-negative ints, the guesses cached for accepted count 0..K
    start : round-start state or law (default: the long-run round-start law)
    guesses : ``"draft"``: the draft's top-F tokens at the state after the accepted drafts (what
        a speculator can compute); ``"oracle"``: the true emitted-token law's top-F there
    """
    k = check_int(k, "K", 1)
    fan = [check_int(v, "fanout", 0) for v in fanout]
    if len(fan) != k + 1:
        raise ValueError(f"fanout: {k + 1} entries (accepted counts 0..{k}), got {len(fan)}")
    gains = _gains(chain, k, max(fan + [1]), start, guesses)
    return float(sum(gains[j, fan[j]] for j in range(k + 1)))


def optimal_fanout(
    chain: Any, k: int, budget: int, start: ArrayLike | int | None = None, guesses: str = "draft"
) -> tuple[list[int], float]:
    """The allocation with the highest hit probability among those with ``sum(F) <= budget``
    (a knapsack over the counts: exact dynamic programming, ``O(K B^2)``)."""
    k, budget = check_int(k, "K", 1), check_int(budget, "budget", 0)
    gains = _gains(chain, k, max(budget, 1), start, guesses)
    best = np.full(budget + 1, 0.0)  # best[b]: best hit with budget b over the counts so far
    choice = np.zeros((k + 1, budget + 1), dtype=int)
    for j in range(k + 1):
        new = np.full(budget + 1, -1.0)
        for b in range(budget + 1):
            vals = best[b - np.arange(b + 1)] + gains[j, : b + 1]
            choice[j, b] = int(np.argmax(vals))
            new[b] = vals[choice[j, b]]
        best = new
    fan, b = [0] * (k + 1), budget
    for j in range(k, -1, -1):
        fan[j] = int(choice[j, b])
        b -= fan[j]
    return fan, float(best[budget])


def geometric_fanout(count_law: ArrayLike, budget: int, r: float, cap: int) -> list[int]:
    r"""The paper's allocation: :math:`F_k \propto P(A = k)^{1/(1+r)}`, each in ``[0, cap]``,
    rounded to integers summing to at most ``budget`` (largest remainders)."""
    w = np.asarray(count_law, dtype=float) ** (1.0 / (1.0 + r))
    raw = np.minimum(budget * w / w.sum(), cap)
    fan = np.floor(raw).astype(int)
    for i in np.argsort(-(raw - fan)):
        if fan.sum() >= budget:
            break
        if fan[i] < cap:
            fan[i] += 1
    return fan.tolist()


@dataclass(frozen=True)
class PowerLawTest:
    """The power-law assumption on one chain: per count k, the fitted exponent r_k of
    miss(F) ~ c F^{-r}; the worst relative error of the fit; the hit of the paper's geometric
    allocation (with the pooled r) and of the optimal one, at the budget."""

    exponents: np.ndarray
    worst_relative_error: float
    pooled_exponent: float
    geometric_fanout: list[int]
    geometric_hit: float
    optimal_fanout: list[int]
    optimal_hit: float


def power_law_test(
    chain: Any, k: int, budget: int, max_fanout: int = 8, start: ArrayLike | int | None = None
) -> PowerLawTest:
    """Fit ``miss_k(F) = 1 - P(hit | A = k)`` against ``F`` = 1..max_fanout on a log-log scale per
    count k (draft guesses), and compare the resulting geometric allocation with the optimum."""
    k = check_int(k, "K", 1)
    gains = _gains(chain, k, max_fanout, start, "draft")
    pa = outcome_law(chain, k, start).sum(1)  # P(A = j)
    F = np.arange(1, max_fanout + 1)
    rs, errs, xs, ys = [], [], [], []
    for j in range(k + 1):
        miss = 1.0 - gains[j, 1:] / pa[j] if pa[j] > 0 else np.zeros(max_fanout)
        keep = miss > 1e-12
        if keep.sum() < 2:
            rs.append(np.nan)
            continue
        slope, icpt = np.polyfit(np.log(F[keep]), np.log(miss[keep]), 1)
        fit = np.exp(icpt) * F[keep] ** slope
        errs.append(float(np.max(np.abs(fit / miss[keep] - 1.0))))
        rs.append(-slope)
        xs.append(np.log(F[keep]))
        ys.append(np.log(miss[keep]) - icpt)
    pooled = float(-np.polyfit(np.concatenate(xs), np.concatenate(ys), 1)[0]) if xs else float("nan")
    geo = geometric_fanout(pa, budget, max(pooled, 1e-6), max_fanout)
    opt, best = optimal_fanout(chain, k, budget, start)
    return PowerLawTest(
        np.array(rs),
        max(errs) if errs else 0.0,
        pooled,
        geo,
        hit_probability(chain, k, geo, start),
        opt,
        best,
    )

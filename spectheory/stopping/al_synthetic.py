r"""What a synthetic accepted-count schedule changes against the true accepted-count law.

Cross-engine benchmarks replace real drafting by an injected accepted count whose mean matches
a "golden" acceptance length AL(K) (``docs/acceptance_length.md``). The mean is then right,
but not the law. Two things read the law and not the mean, and both are computed exactly here
for rounds whose accepted counts are independent with a given law (the i.i.d. model of
Leviathan et al., or a chain's pooled ``accepted_count_law``):

* **latency tails**: the number of target calls :math:`C_N` that a request of N tokens needs.
  Under the true law it is a renewal count with :math:`P(C_N \le c) = P(S_c \ge N)`, where
  :math:`S_c` is the sum of c rounds' emitted tokens. Under the *min-variance* schedule
  (accepted counts :math:`\lfloor m \rfloor` and :math:`\lceil m \rceil` in the proportions of
  the mean m, the schedule with least variance for that mean) it is nearly constant;
* **adaptive controllers**: a draft-length policy with memory (HF's schedule: +2 after a round
  that accepts all K drafts, -1 otherwise; :class:`~spectheory.stopping.HFSchedule`) moves on
  the event "all K accepted", whose probability is :math:`\alpha^K` under i.i.d. acceptance but
  the min-variance schedule's share of :math:`\lceil m \rceil = K`, zero as soon as
  :math:`m < K - 1`. The controller's long-run draft length and tokens per call differ.

Examples
--------
>>> from spectheory.stopping.al_synthetic import iid_count_law, min_variance_law
>>> iid_count_law(0.5, 2).tolist()
[0.5, 0.25, 0.25]
>>> min_variance_law(1.25, 2).tolist()
[0.0, 0.75, 0.25]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..chain.classes import require_one_closed_class, stationary_distribution

__all__ = [
    "iid_count_law",
    "min_variance_law",
    "calls_law",
    "controller_long_run",
    "ControllerLongRun",
]


def iid_count_law(alpha: float, k: int) -> np.ndarray:
    r"""Law of the accepted count of a round of K drafts under i.i.d. acceptance ``alpha``:
    :math:`P(A = a) = \alpha^a (1 - \alpha)` for a < K and :math:`\alpha^K` for a = K."""
    k = check_int(k, "K", 1)
    if not 0.0 <= alpha <= 1.0:
        raise ValueError(f"alpha: must lie in [0, 1], got {alpha}")
    law = alpha ** np.arange(k + 1) * (1.0 - alpha)
    law[-1] = alpha**k
    return law


def min_variance_law(mean: float, k: int) -> np.ndarray:
    r"""The accepted-count law on {0..K} with the given mean and the least variance: mass on
    :math:`\lfloor m \rfloor` and :math:`\lceil m \rceil` only."""
    k = check_int(k, "K", 1)
    if not 0.0 <= mean <= k:
        raise ValueError(f"mean: an accepted count of K = {k} drafts has mean in [0, {k}], got {mean}")
    lo = int(np.floor(mean))
    law = np.zeros(k + 1)
    frac = mean - lo
    law[lo] = 1.0 - frac
    if frac > 0:
        law[lo + 1] = frac
    return law


def calls_law(count_law: ArrayLike, n_tokens: int, bonus: bool = True) -> np.ndarray:
    r"""Exact law of the target calls :math:`C_N` for N tokens when rounds are independent with
    accepted-count law ``count_law`` (a round accepting a drafts emits a + 1 tokens; with all K
    accepted and ``bonus=False``, K).

    Returns ``P(C_N = c)`` for c = 0..N (a call emits at least one token, so :math:`C_N \le N`).

    Examples
    --------
    >>> calls_law([0.0, 1.0], 4).tolist()  # always 2 tokens a call
    [0.0, 0.0, 1.0, 0.0, 0.0]
    """
    law = np.asarray(count_law, dtype=float)
    n = check_int(n_tokens, "n_tokens", 1)
    if law.ndim != 1 or law.size < 2 or np.any(law < 0) or abs(law.sum() - 1.0) > 1e-9:
        raise ValueError("count_law: a probability vector over accepted counts 0..K (K >= 1)")
    k = law.size - 1
    emit = np.zeros(k + 2)  # law of tokens emitted by one call
    for a, p in enumerate(law):
        emit[a + 1 if (a < k or bonus) else k] += p
    # dist[t]: P(S_c = t) for t < N (not yet done); done mass collected per c
    dist = np.zeros(n)
    dist[0] = 1.0
    out = np.zeros(n + 1)
    for c in range(1, n + 1):
        new = np.zeros(n + k + 2)
        for t in np.nonzero(dist)[0]:
            new[t : t + k + 2] += dist[t] * emit
        out[c] = new[n:].sum()
        dist = new[:n]
        if dist.sum() < 1e-16:
            break
    return out


@dataclass(frozen=True)
class ControllerLongRun:
    """Long-run behaviour of a memory controller fed by an accepted-count law per K.

    Attributes
    ----------
    length_law : ndarray ``[K_max]``, stationary law of the round's draft length K = 1..K_max
    tokens_per_call : long-run tokens per target call
    mean_length : long-run mean draft length
    """

    length_law: np.ndarray
    tokens_per_call: float
    mean_length: float


def controller_long_run(policy: Any, count_laws: dict[int, ArrayLike]) -> ControllerLongRun:
    r"""Exact long run of a draft-length controller with memory when a round of K drafts has
    accepted-count law ``count_laws[K]`` (independent rounds).

    Parameters
    ----------
    policy : object
        A policy with ``initial_memory``, ``max_depth`` and
        ``next_memory(memory, all_accepted)``, where memory m means a round of K = m + 1 drafts
        (:class:`~spectheory.stopping.HFSchedule` without ``confidence``).
    count_laws : dict
        K -> law over 0..K, for every K = 1..policy.max_depth.

    Examples
    --------
    >>> from spectheory.stopping import HFSchedule
    >>> laws = {k: iid_count_law(1.0, k) for k in range(1, 5)}
    >>> controller_long_run(HFSchedule(2, max_depth=4), laws).mean_length
    4.0
    """
    kmax = check_int(policy.max_depth, "policy.max_depth", 1)
    missing = [k for k in range(1, kmax + 1) if k not in count_laws]
    if missing:
        raise ValueError(f"count_laws: no law for K = {missing}")
    P = np.zeros((kmax, kmax))
    tokens = np.zeros(kmax)
    for m in range(kmax):
        law = np.asarray(count_laws[m + 1], dtype=float)
        if law.shape != (m + 2,):
            raise ValueError(f"count_laws[{m + 1}]: expected {m + 2} entries, got {law.shape}")
        full = float(law[-1])
        up, down = (int(policy.next_memory(np.array([m]), np.array([flag]))[0]) for flag in (True, False))
        P[m, up] += full
        P[m, down] += 1.0 - full
        tokens[m] = float(law @ (np.arange(m + 2) + 1.0))
    # the memory chain from the policy's initial memory: keep the states it reaches, which must
    # hold one closed class (else the long run depends on chance), and solve nu P = nu there
    reach = {int(policy.initial_memory)}
    frontier = list(reach)
    while frontier:
        for j in np.nonzero(P[frontier.pop()] > 0)[0]:
            if int(j) not in reach:
                reach.add(int(j))
                frontier.append(int(j))
    idx = sorted(reach)
    sub = P[np.ix_(idx, idx)]
    require_one_closed_class(sub, "controller_long_run")
    law = np.zeros(kmax)
    law[idx] = stationary_distribution(sub)
    return ControllerLongRun(law, float(law @ tokens), float(law @ np.arange(1, kmax + 1)))

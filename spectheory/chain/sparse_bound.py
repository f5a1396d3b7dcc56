r"""The certified error of a truncated chain: how far the true chain's exact values can be.

A :class:`~spectheory.chain.SparseDecodingChain` whose rows are truncations carries, per state,
:math:`\varepsilon^p_s \ge \mathrm{TV}(p_s, \tilde p_s)` and
:math:`\varepsilon^q_s \ge \mathrm{TV}(q_s, \tilde q_s)` (true rows :math:`p, q`, stored rows
:math:`\tilde p, \tilde q`; the same transitions). The proof (``docs/sparse_chains.md``):

1. *One step.* Token verification in state ``s`` emits one token per position: a draft check
   has the outcome law ``(accepted, x)`` with mass :math:`\min(p, q)(x)` and ``(rejected, y)``
   with mass :math:`(p - q)_+(y)`; a bonus draw has law :math:`p`. Moving ``p`` alone changes
   both masses in the direction of the change, summing to it; moving ``q`` alone changes them
   by opposite amounts each at most :math:`|\Delta q|`. So the outcome laws of the true and
   the stored rows are within :math:`\delta_s = \varepsilon^p_s + 2\varepsilon^q_s` in TV.
2. *Coupling.* Run the true and the stored protocol together, each position's outcome drawn
   from a maximal coupling. They first differ at position ``n`` with probability at most
   :math:`d_n = \sum_s \tilde\mu_n(s)\,\delta_s`, :math:`\tilde\mu_n` the stored chain's state
   law before token ``n + 1`` (lossless: the stored protocol's state has the stored target
   chain's law), and :math:`\sum_n P(\text{first at } n) \le 1`.
3. *Counters.* Runs equal up to position ``n`` share every round up to the one covering
   ``n``; after it each run starts at most ``T - 1 - n`` rounds, so
   :math:`|\Delta E[\text{calls}]| \le \sum_n \pi_n (T - 1 - n)`, with :math:`\pi` the
   largest first-difference law allowed (:math:`\pi_n \le d_n`, total at most 1, filled from
   ``n = 0``, where the weights are largest); rejections and accepted drafts ``T - n``; draft
   tokens :math:`\sum_{m > n} \min(\gamma, T - m)`.
4. *Refined (calls and draft tokens).* With the stored chain's value functions :math:`\tilde W`
   of a reward collected at round starts (:mod:`.sparse_values`), the performance-difference
   identity :math:`E - \tilde E = \sum_n E_{\text{true}}[(K_n - \tilde K_n)\tilde W_{n+1}(X_n)]`
   bounds the difference by :math:`\sum_n w_n\,E_{\text{true}}[\delta(s_n)]`, :math:`w_n` the
   oscillation of :math:`\tilde W_{n+1}` over the configurations one step reaches; the smaller
   of the two bounds is reported.
5. *Theorem 1's sum.* :math:`|\Delta \mathrm{tv}_n| \le \tilde\mu_n \cdot (\varepsilon^p +
   \varepsilon^q) + \min(1, \sum_{m < n} \tilde\mu_m \cdot \varepsilon^p)` (the TV triangle
   inequality, and the target chains coupled step by step).

Token verification only (the one-step bound is its outcome law's).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

from .._guards import check_bool, check_int, check_nonneg

if TYPE_CHECKING:
    from ..exact.result import ExactResult

__all__ = ["TruncationBound", "truncation_bound"]


class TruncatedChain(Protocol):
    """What the bound reads of a chain (a :class:`~spectheory.chain.SparseDecodingChain`):
    its exact protocol, its state marginals and the tails of its rows."""

    @property
    def target_tail(self) -> np.ndarray: ...
    @property
    def draft_tail(self) -> np.ndarray: ...
    def protocol(self, horizon: int, round: Any = None, **kwargs: Any) -> ExactResult: ...
    def state_marginals(self, horizon: int) -> np.ndarray: ...
    @property
    def n_states(self) -> int: ...
    def transition_operator(self, mass: Any) -> Any: ...
    def target_operator(self, n: int) -> Any: ...


@dataclass(frozen=True)
class TruncationBound:
    r"""Certified bounds ``|E_true[X] - E_stored[X]|`` for the counters of one generation.

    Attributes
    ----------
    horizon, gamma : int
    bonus : bool
    result : ExactResult
        The stored (sparse) chain's exact result, the centre of every interval.
    first_difference : ndarray, shape (T,)
        :math:`d_n`: bound on P(the coupled runs first differ at position ``n``).
    divergence : float
        ``min(1, first_difference.sum())``: bound on P(the runs differ at all).
    target_calls, rejections, accepted, draft_tokens : float
        Bounds on the differences of the expected counters.
    tv_profile : ndarray, shape (T,)
        Bounds on ``|tv_true[n] - tv_stored[n]|``.
    rejection_lower_bound : float
        Bound on the difference of Theorem 1's sum (``tv_profile.sum()``).
    """

    horizon: int
    gamma: int
    bonus: bool
    result: ExactResult
    first_difference: np.ndarray
    divergence: float
    target_calls: float
    rejections: float
    accepted: float
    draft_tokens: float
    tv_profile: np.ndarray
    rejection_lower_bound: float

    def interval(self, name: str) -> tuple[float, float]:
        """``(value - bound, value + bound)`` of a counter (``"target_calls"``, ``"rejections"``,
        ``"accepted"``, ``"draft_tokens"``), the value the stored chain's."""
        if name not in ("target_calls", "rejections", "accepted", "draft_tokens"):
            raise ValueError(f"name: expected a counter, got {name!r}")
        v, b = float(getattr(self.result, name)), float(getattr(self, name))
        return v - b, v + b

    @property
    def tokens_per_call_interval(self) -> tuple[float, float]:
        """Interval holding the true ``T / E[calls]`` (calls are at least ``T / (gamma + bonus)``)."""
        T = self.horizon
        lo, hi = self.interval("target_calls")
        floor = math.ceil(T / (self.gamma + int(self.bonus)))
        return T / hi, T / max(lo, floor)

    def speedup_interval(self, c: float) -> tuple[float, float]:
        """Interval holding the true ``T / (E[calls] + c E[draft tokens])`` at draft cost ``c``."""
        c = float(check_nonneg(c, "c"))
        T = self.horizon
        t = self.result.target_calls + c * self.result.draft_tokens
        b = self.target_calls + c * self.draft_tokens
        floor = math.ceil(T / (self.gamma + int(self.bonus)))
        return T / (t + b), T / max(t - b, floor)


def _fill(d: np.ndarray) -> np.ndarray:
    """Largest sub-law ``pi <= d`` of total at most 1, filled from the first entry."""
    before = np.concatenate([[0.0], np.cumsum(d)[:-1]])
    return np.minimum(d, np.clip(1.0 - before, 0.0, None))


def truncation_bound(
    chain: TruncatedChain, horizon: int, gamma: int, bonus: bool = True, *, refine: bool = True
) -> TruncationBound:
    r"""Certified bounds between the stored chain's exact values and the true chain's
    (token verification, paths of ``gamma`` drafts; the proof is the module's).

    ``refine`` (default) also computes the stored chain's value functions
    (:func:`~spectheory.chain.sparse_values.start_reward_values`, about the cost of one more
    ``protocol``) and bounds target calls and draft tokens by the smaller of the two bounds.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.chain import SparseDecodingChain
    >>> true = st.DecodingChain.random(6, concentration=0.3, rng=1)
    >>> cut = SparseDecodingChain.from_dense(true.target, true.draft, mass=0.99)
    >>> b = cut.truncation_bound(20, 3)
    >>> lo, hi = b.interval("target_calls")
    >>> bool(lo <= true.protocol(20, 3).target_calls <= hi)
    True
    """
    T = check_int(horizon, "horizon", 1)
    G = check_int(gamma, "gamma", 1)
    bonus = check_bool(bonus, "bonus")
    res = chain.protocol(T, gamma=G, bonus=bonus)
    mu = chain.state_marginals(T)  # [T, S]
    ep, eq = np.asarray(chain.target_tail), np.asarray(chain.draft_tail)
    d = np.clip(mu @ (ep + 2.0 * eq), 0.0, 1.0)
    pi = _fill(d)
    n = np.arange(T)
    after = T - n
    drafts = np.minimum(G, T - n)  # a round starting at n drafts min(G, T - n)
    later = np.concatenate([np.cumsum(drafts[::-1])[::-1][1:], [0]])  # sum over m > n
    apart = np.minimum(1.0, np.concatenate([[0.0], np.cumsum(mu @ ep)[:-1]]))
    tv = np.minimum(1.0, mu @ (ep + eq) + apart)
    calls, draft_tokens = float(pi @ (after - 1)), float(pi @ later)
    if refine:
        from .sparse_values import start_reward_values

        spread, _ = start_reward_values(chain, T, G, bonus)
        delta = ep + 2.0 * eq
        top, spread_delta = float(delta.max()), float(delta.max() - delta.min())
        step = np.minimum(top, mu @ delta + apart * spread_delta)  # >= E_true[delta(s_n)]
        calls = min(calls, float(step @ spread[:, 0]))
        draft_tokens = min(draft_tokens, float(step @ spread[:, 1]))
    return TruncationBound(
        horizon=T,
        gamma=G,
        bonus=bonus,
        result=res,
        first_difference=d,
        divergence=float(min(1.0, d.sum())),
        target_calls=calls,
        rejections=float(pi @ after),
        accepted=float(pi @ after),
        draft_tokens=draft_tokens,
        tv_profile=tv,
        rejection_lower_bound=float(tv.sum()),
    )

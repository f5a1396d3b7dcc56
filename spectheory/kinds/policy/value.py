"""What an exact policy evaluation returns (:class:`PolicyValue`) and the backward-recursion
helpers shared by the round recursion (:mod:`.evaluate`) and the path enumeration (:mod:`.paths`)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ...cost.base import Cost
from ...exact.result import ExactResult, NotComputedError
from ._kernels import BONUS, CALLS, DRAFTS, N_COMP, REJECTIONS, TTIME

if TYPE_CHECKING:
    from ._kernels import Kernels

__all__ = ["PolicyValue", "Counters", "backward_positions", "bonus_value", "reject_value"]

_E = np.eye(N_COMP)


@dataclass(repr=False)
class PolicyValue(ExactResult):
    """Exact expectations of one generation of ``horizon`` tokens under a draft-length policy.

    An :class:`~spectheory.exact.ExactResult` (the shared result vocabulary, ``docs/architecture.md``)
    computed by a backward recursion under ``cost``: the counters ``target_calls``,
    ``rejections``, ``draft_tokens``, ``accepted``, ``bonus_tokens``, ``tokens_per_call`` and the
    cost members ``time(cost)``, ``speedup(cost)``, ``time_per_token(cost)`` (methods, by default
    under the policy's own ``cost``). The per-position masses (``round_starts``,
    ``rejection_by_position``) and the per-round histogram (``accepted_counts``, so
    ``accepted_count_law``) come from a forward recursion over the same round law
    (:mod:`spectheory.kinds.policy.forward_counters`), run on first use and kept; a value built without
    one (``counters=None``) raises :class:`~spectheory.exact.NotComputedError` for them.

    Attributes
    ----------
    horizon : int
    cost : Cost
        The cost the value was computed under (the default of the cost members).
    target_calls, draft_tokens, target_time : float
        Expected rounds, draft forward steps and total target-call time ``sum t(k)``.
    rejections, bonus_tokens : float
        Expected rounds ended by a rejection and bonus tokens.
    policy : str
    extra : dict
        Method-specific details (e.g. the optimal policy's decisions).
    bonus : bool
        Always ``True`` (the only protocol the stopping engines support).
    counters : Counters, callable or None
        The forward masses, or what computes them on first use (``None``: not computed).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma, evaluate_policy
    >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])   # always accepted
    >>> v = evaluate_policy(chain, FixedGamma(4), 10, 0.25)
    >>> v.target_calls, v.accepted, v.time(), v.speedup(), v.speedup(0.0)
    (2.0, 8.0, 4.0, 2.5, 5.0)
    >>> v.accepted_counts.tolist(), v.round_starts.sum(-1).tolist()[:6]
    ([0.0, 0.0, 0.0, 0.0, 2.0], [1.0, 0.0, 0.0, 0.0, 0.0, 1.0])
    """

    horizon: int
    cost: Cost
    target_calls: float
    draft_tokens: float
    target_time: float
    rejections: float
    bonus_tokens: float
    policy: str = ""
    extra: dict = field(default_factory=dict, repr=False)
    bonus: bool = True
    counters: Any = field(default=None, repr=False, compare=False)

    @property
    def accepted(self) -> float:
        """Expected accepted drafts: every position emits one accepted, correction or bonus token."""
        return self.horizon - self.rejections - self.bonus_tokens

    def _forward(self, name: str) -> Counters:
        if self.counters is None:
            raise NotComputedError(
                f"PolicyValue.{name}: this value was built without its forward recursion "
                "(counters=None); evaluate the policy with evaluate_policy or chain.protocol, or "
                "estimate it by Monte Carlo (st.simulate(chain, T, policy))"
            )
        if not isinstance(self.counters, Counters):  # computed on first use, then kept
            self.counters = self.counters()
        return self.counters

    @property
    def accepted_counts(self) -> np.ndarray:
        """Expected rounds accepting ``j`` drafts, ``[max_depth + 1]`` (sums to ``target_calls``)."""
        return self._forward("accepted_counts").accepted_counts

    @property
    def rejection_by_position(self) -> np.ndarray:
        """P(the token at position ``n`` is a correction after a rejection), ``[horizon]``."""
        return self._forward("rejection_by_position").rejection_by_position

    @property
    def round_starts(self) -> np.ndarray:
        """P(a round starts at position ``n`` in state ``s``), ``[horizon, S]``."""
        return self._forward("round_starts").round_starts

    def _call_time(self, cost: Cost) -> float:
        if cost.target_call == self.cost.target_call:  # equal costs (CostModel.at) compare equal
            return self.target_time
        if cost.target_call is None:
            return self.target_calls
        raise ValueError(
            "cost: this PolicyValue knows its target-call time only under its own target_call "
            "(or t = 1); evaluate the policy again under the new cost"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "horizon": self.horizon,
            "c": self.cost.c,
            "target_calls": self.target_calls,
            "rejections": self.rejections,
            "draft_tokens": self.draft_tokens,
            "accepted": self.accepted,
            "bonus_tokens": self.bonus_tokens,
            "target_time": self.target_time,
            "time": self.time(),
            "tokens_per_call": self.tokens_per_call,
            "time_per_token": self.time_per_token(),
        }


@dataclass(frozen=True)
class Counters:
    """The forward masses of a generation under a policy (what :class:`PolicyValue` reads).

    Attributes
    ----------
    round_starts : ndarray [T, S]
    rejection_by_position : ndarray [T]
    accepted_counts : ndarray [D + 1]
    """

    round_starts: np.ndarray
    rejection_by_position: np.ndarray
    accepted_counts: np.ndarray


def _value(
    T: int, cost: Any, vec: np.ndarray, policy: Any, extra: dict | None = None, counters: Any = None
) -> PolicyValue:
    return PolicyValue(
        T,
        cost,
        float(vec[CALLS]),
        float(vec[DRAFTS]),
        float(vec[TTIME]),
        float(vec[REJECTIONS]),
        float(vec[BONUS]),
        getattr(policy, "name", str(policy)),
        extra or {},
        counters=counters,
    )


def backward_positions(total: int, desc: str, progress: bool | None, work: float) -> Iterable[int]:
    """``total - 1, ..., 0`` with a tqdm bar when the work is large (or ``progress=True``)."""
    from ..._progress import progress_range

    show = (work > 2e9) if progress is None else bool(progress)
    return progress_range(total, desc, show=show, reverse=True) if show else range(total - 1, -1, -1)


def bonus_value(K: Kernels, W: Any, n: int, T: int, memory: int = 0) -> np.ndarray:
    """``B(s) = e_bonus + sum_y p_n(y|s) W_{n+1}[memory](next(s, y))``: stopping alive with ``n``
    tokens emitted (0 at ``n = T``: no bonus at the end)."""
    if n >= T:
        return np.zeros((K.S, N_COMP))
    return _E[BONUS] + K.apply(K.at(n).target, W[n + 1][memory])


def reject_value(K: Kernels, rej: np.ndarray, W_next: np.ndarray) -> np.ndarray:
    """``sum_y R(y|s) (e_rejections + W_next(next(s, y)))``: the rejection branch of a check with
    residual mass ``rej [S, V]`` (its total is the rejection probability)."""
    return K.apply(rej, W_next) + rej.sum(-1)[:, None] * _E[REJECTIONS]

"""What an exact policy evaluation returns (:class:`PolicyValue`) and the backward-recursion
helpers shared by the round recursion (:mod:`.evaluate`) and the path enumeration (:mod:`.paths`)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._kernels import CALLS, DRAFTS, N_COMP, TTIME
from .cost import Cost

__all__ = ["PolicyValue", "backward_positions", "bonus_value"]


@dataclass
class PolicyValue:
    """Exact expectations of one generation of ``horizon`` tokens under a policy.

    Attributes
    ----------
    horizon : int
    cost : Cost
    target_calls, draft_tokens, target_time : float
        Expected rounds, draft forward steps and total target-call time ``sum t(k)``.
    policy : str
    extra : dict
        Method-specific details (e.g. the optimal policy's decisions).
    """

    horizon: int
    cost: Cost
    target_calls: float
    draft_tokens: float
    target_time: float
    policy: str = ""
    extra: dict = field(default_factory=dict, repr=False)

    @property
    def time(self) -> float:
        """Expected time ``c * draft_tokens + target_time`` (units of one target call)."""
        return self.cost.c * self.draft_tokens + self.target_time

    @property
    def tokens_per_call(self) -> float:
        """``horizon / target_calls`` (as :meth:`SimulationResult.summary` reports it)."""
        return self.horizon / self.target_calls

    @property
    def time_per_token(self) -> float:
        return self.time / self.horizon

    @property
    def speedup(self) -> float:
        """``horizon / time``: speedup over plain decoding at one unit of time per token."""
        return self.horizon / self.time

    def as_dict(self) -> dict:
        return {
            "policy": self.policy,
            "horizon": self.horizon,
            "c": self.cost.c,
            "target_calls": self.target_calls,
            "draft_tokens": self.draft_tokens,
            "target_time": self.target_time,
            "time": self.time,
            "tokens_per_call": self.tokens_per_call,
            "time_per_token": self.time_per_token,
        }


def _value(T, cost, vec, policy, extra=None):
    return PolicyValue(
        T,
        cost,
        float(vec[CALLS]),
        float(vec[DRAFTS]),
        float(vec[TTIME]),
        getattr(policy, "name", str(policy)),
        extra or {},
    )


def backward_positions(total, desc, progress, work):
    """``total - 1, ..., 0`` with a tqdm bar when the work is large (or ``progress=True``)."""
    from tqdm.auto import tqdm

    show = (work > 2e9) if progress is None else bool(progress)
    return tqdm(range(total - 1, -1, -1), desc=desc, disable=not show, leave=False)


def bonus_value(K, W, n, T, memory=0):
    """``B(s) = sum_y p_n(y|s) W_{n+1}[memory](next(s, y))`` (0 at ``n = T``: no bonus at the end)."""
    if n >= T:
        return np.zeros((K.S, N_COMP))
    return K.apply(K.at(n).target, W[n + 1][memory])

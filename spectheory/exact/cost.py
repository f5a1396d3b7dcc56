r"""The cost model of a round: what drafting and verifying cost in time.

A draft forward step costs ``c`` (in units of one target call); a target call that scores
``k`` drafted tokens (it returns the target's laws at the ``k`` drafted positions and the
one after them) costs ``t(k)``, by default 1 for every ``k``. A round that drafts ``k``
tokens therefore costs ``c k + t(k)``, and a generation of ``T`` tokens costs

.. math:: \text{time} = c \cdot \#\text{draft steps} + \sum_{\text{rounds}} t(k_r),

with plain autoregressive decoding costing ``T t(1)`` (Leviathan et al.'s unit, ``t = 1``).
``t`` may be any callable, so a latency curve measured on a real decoder can be plugged in.
For a token tree ``k`` is the number of drafted nodes the call scores (``M k`` for ``M`` draft
sequences of ``k`` tokens). Every result type takes a :class:`Cost` or a bare number ``c`` in
its ``time(cost)`` and ``speedup(cost)`` (``docs/architecture.md``); the draft-length policies
of :mod:`spectheory.stopping` are optimised under one. See ``docs/stopping.md``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["Cost", "as_cost"]


@dataclass(frozen=True)
class Cost:
    r"""Time of draft steps and target calls, relative to one target call.

    Parameters
    ----------
    c : float >= 0
        Time of one draft forward step.
    target_call : callable ``k -> float``, optional
        Time of a target call that scores ``k >= 1`` drafted tokens (default: 1).

    Examples
    --------
    >>> from spectheory.stopping import Cost
    >>> cost = Cost(0.1, target_call=lambda k: 1 + 0.02 * k)
    >>> cost.round_time(4)
    1.48
    >>> Cost(0.05).call_times(3).tolist()
    [1.0, 1.0, 1.0]
    """

    c: float = 0.0
    target_call: Callable[[int], float] | None = None

    def __post_init__(self) -> None:
        c = float(self.c)
        if not np.isfinite(c) or c < 0:
            raise ValueError(f"c: draft step cost must be finite and >= 0, got {self.c!r}")
        object.__setattr__(self, "c", c)
        if self.target_call is not None and not callable(self.target_call):
            raise ValueError("target_call: must be a callable k -> time (or None for 1)")

    def call_times(self, max_k: int) -> np.ndarray:
        """``[t(1), ..., t(max_k)]`` as float64, checked finite and >= 0."""
        if self.target_call is None:
            return np.ones(int(max_k))
        out = np.array([float(self.target_call(k)) for k in range(1, int(max_k) + 1)])
        if out.size and (not np.all(np.isfinite(out)) or out.min() < 0):
            raise ValueError("target_call: must return finite times >= 0 for k = 1..max_depth")
        return out

    def round_time(self, k: int) -> float:
        """``c k + t(k)``: the time of a round that drafts ``k`` tokens."""
        return self.c * int(k) + float(self.call_times(int(k))[-1])

    def weights(self) -> np.ndarray:
        """Weights of the value components ``(calls, draft steps, target time)`` giving time."""
        return np.array([0.0, self.c, 1.0])


def as_cost(cost: Cost | float | None) -> Cost:
    """A :class:`Cost` from a ``Cost``, a number (the draft step cost ``c``) or None (``c = 0``)."""
    if isinstance(cost, Cost):
        return cost
    if cost is None:
        return Cost(0.0)
    if np.ndim(cost) != 0:
        raise ValueError(f"cost: expected a Cost or a scalar draft step cost, got shape {np.shape(cost)}")
    return Cost(float(cost))

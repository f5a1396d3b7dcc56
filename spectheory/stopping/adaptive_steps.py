r"""SGLang's adaptive speculative steps as a draft-length controller (:class:`EMASteps`).

Reproduced from SGLang pull request #21599 ("add adaptive speculative_num_steps for EAGLE
topk=1", merged 2026), ``python/sglang/srt/speculative/adaptive_spec_params.py``,
``AdaptiveSpeculativeParams``, with its defaults: candidate steps ``(1, 3, 7)``, EMA weight
``ema_alpha = 0.2``, ``warmup_batches = 10``, ``update_interval = 5``, hysteresis
``down = -0.25``, ``up = 0.0``. After every verify the EMA of the accepted draft count is
updated, ``ema <- (1 - alpha) ema + alpha * mean_batch(accepted)`` (initial value
``steps - 1``); after the warm-up, every ``update_interval`` batches the step moves down the
candidate list while ``ema <= prev - 0.5 + down`` and then up while ``ema > cur - 0.5 + up``. A
round drafts ``steps`` tokens (topk = 1: a path). SGLang keeps one controller per batch (the
batch mean); here each run is its own batch of one request (per-request control). Later
SGLang changes (per-batch-size slots, #24055; a throughput-aware policy, #28045) are not
reproduced. The memory (steps, EMA, count) is continuous: ``memory_kind = "online"``, scored
by Monte Carlo (``docs/stopping.md`` §10).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .._guards import check_int
from ..kinds.policy.context import RoundFeedback, StopContext
from ..kinds.policy.policies import Policy, _threshold

__all__ = ["EMASteps"]


class EMASteps(Policy):
    """SGLang's adaptive ``speculative_num_steps`` (module docstring).

    Parameters
    ----------
    candidate_steps : sequence of int
        Draft lengths the controller switches between (at least two).
    initial : int, optional
        Starting step (default: the middle candidate, SGLang's nearest to its initial steps).
    ema_alpha, warmup_batches, update_interval, down_hysteresis, up_hysteresis
        SGLang's constants.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import EMASteps
    >>> chain = st.DecodingChain.random(3, concentration=1.0, rng=0)
    >>> res = st.simulate(chain, 40, EMASteps(), 200, rng=0, cost=0.1)
    >>> 1.0 < res.summary()["tokens_per_call"]["mean"] < 8.0
    True
    """

    memory_kind = "online"

    def __init__(
        self,
        candidate_steps: Sequence[int] = (1, 3, 7),
        initial: int | None = None,
        ema_alpha: float = 0.2,
        warmup_batches: int = 10,
        update_interval: int = 5,
        down_hysteresis: float = -0.25,
        up_hysteresis: float = 0.0,
    ) -> None:
        steps = sorted({check_int(s, "candidate_steps", 1) for s in candidate_steps})
        if len(steps) < 2:
            raise ValueError(f"candidate_steps: need at least 2 distinct values, got {list(candidate_steps)}")
        self.candidates = np.array(steps, dtype=np.float64)
        self.max_depth = int(steps[-1])
        start = steps[len(steps) // 2] if initial is None else check_int(initial, "initial", 1)
        self.initial = min(steps, key=lambda s: (abs(s - start), -s))
        self.alpha = _threshold(ema_alpha, "ema_alpha", 0.0, 1.0)
        self.warmup = check_int(warmup_batches, "warmup_batches", 0)
        self.interval = check_int(update_interval, "update_interval", 1)
        self.down = float(down_hysteresis)
        self.up = float(up_hysteresis)
        # memory row: index of the current step, EMA of the accepted count, rounds seen
        self.initial_memory = np.array([float(steps.index(self.initial)), self.initial - 1.0, 0.0])  # type: ignore[assignment]

    def stop(self, ctx: StopContext) -> np.ndarray:
        mem = np.asarray(ctx.memory, dtype=np.float64)
        steps = self.candidates[mem[..., 0].astype(np.int64)]
        out = ctx.depth >= steps
        return np.broadcast_to(out, np.broadcast_shapes(np.shape(out), np.shape(ctx.state)))

    def _recompute(self, idx: np.ndarray, ema: np.ndarray) -> np.ndarray:
        c, top = self.candidates, self.candidates.size - 1
        idx = idx.copy()
        while True:  # down while ema <= previous candidate - 0.5 + down
            prev = c[np.maximum(idx - 1, 0)]
            move = (idx > 0) & (ema <= prev - 0.5 + self.down)
            if not move.any():
                break
            idx = idx - move
        while True:  # then up while ema > current candidate - 0.5 + up
            move = (idx < top) & (ema > c[idx] - 0.5 + self.up)
            if not move.any():
                break
            idx = idx + move
        return idx

    def update(self, memory: np.ndarray, feedback: RoundFeedback) -> np.ndarray:
        mem = np.array(memory, dtype=np.float64)
        j = np.asarray(feedback.accepted, dtype=np.float64)
        mem[:, 1] = (1.0 - self.alpha) * mem[:, 1] + self.alpha * j
        mem[:, 2] += 1.0
        count = mem[:, 2] - self.warmup
        due = (count > 0) & (np.mod(count, self.interval) == 0)
        idx = mem[:, 0].astype(np.int64)
        mem[:, 0] = np.where(due, self._recompute(idx, mem[:, 1]), idx)
        return mem

    def __repr__(self) -> str:
        return f"EMASteps({[int(s) for s in self.candidates]}, alpha={self.alpha:g})"

r"""A verification schedule in the real decoder: how many drafts of each row one target call checks.

:func:`~spectheory.decoder.speculative_generate` drafts ``k = min(gamma, r)`` tokens per row
(``r`` the tokens the row still needs) and scores them in one target call. With
``schedule=DecoderSchedule(...)`` it then reads, per group of ``batch`` consecutive rows, the
slot features of the drafted blocks (:class:`~spectheory.schedules.slots.SlotFeatures`) from the
laws along the drafted paths -- the draft's :math:`q(\cdot \mid x_{<i})` and the target's
:math:`p(\cdot \mid x_{<i})`, which that call returned -- asks the schedule for ``L [batch]``,
and verifies each row's first :math:`\min(L_b, k_b)` drafts (token verification, the bonus token
after ``L_b`` accepted drafts). The features are those of
:func:`~spectheory.schedules.slots.slot_features` on the same laws (``conf`` and ``survival``
exact: an oracle confidence head), except ``stale``: the row's live survival curve of its
previous round (ones before its first), what an engine reading the previous step's confidences
has. A row's slots beyond its ``k`` get feature 0 (never admitted, nothing counted).

The target scores the whole drafted block and the schedule only cuts what is verified (as an
engine that truncates after its verify forward): tokens per call are the schedule's, time is
not saved. Whether ``slot i`` is verified may read the target's laws at prefixes
:math:`x_{<i}` without anticipating (``docs/verification_schedules.md``).

Examples
--------
Needs torch (skipped by the doctest run):

>>> import torch                                                          # doctest: +SKIP
>>> from spectheory.cost.staircase import StaircaseCost
>>> from spectheory.schedules import EarlyStopGreedy
>>> hook = DecoderSchedule(EarlyStopGreedy(), StaircaseCost((2, 4), (1.0, 1.5)), batch=1)
>>> hook.start(1)
>>> q = torch.tensor([[[0.5, 0.5], [0.5, 0.5]]], dtype=torch.float64)   # doctest: +SKIP
>>> p = torch.tensor([[[0.7, 0.3], [0.7, 0.3], [0.7, 0.3]]], dtype=torch.float64)  # doctest: +SKIP
>>> hook(torch.tensor([[0, 1]]), q, p, torch.tensor([2])).tolist()       # doctest: +SKIP
[1]
"""

from __future__ import annotations

import math
from typing import Any

from ..cost.staircase import StaircaseCost
from .schedulers import Schedule
from .slots import SlotFeatures
from .throughput import check_lengths

__all__ = ["DecoderSchedule"]


class DecoderSchedule:
    """The schedule hook of :func:`~spectheory.decoder.speculative_generate` (module docstring).

    Parameters
    ----------
    schedule : Schedule
    cost : StaircaseCost
        The step time curve the schedule reads (its largest bucket holds ``batch`` rows).
    batch : int >= 1
        Rows scheduled together (consecutive rows of the decoder's batch).
    """

    def __init__(self, schedule: Schedule, cost: StaircaseCost, batch: int = 1) -> None:
        if not isinstance(schedule, Schedule):
            raise ValueError(f"schedule: expected a Schedule, got {type(schedule).__name__}")
        if not isinstance(cost, StaircaseCost) or cost.max_tokens < batch:
            raise ValueError("cost: expected a StaircaseCost whose largest bucket holds the batch")
        if int(batch) != batch or batch < 1:
            raise ValueError(f"batch: expected an int >= 1, got {batch}")
        self.schedule, self.cost, self.batch = schedule, cost, int(batch)
        self._stale: list[list[float]] | None = None

    def start(self, batch_size: int) -> None:
        """A new generation of ``batch_size`` rows: no previous round (``stale`` all ones)."""
        self._stale = [[] for _ in range(int(batch_size))]

    def _features(
        self, rows: range, cols: list[list[list[float]]], tokens: list[tuple[int, ...]]
    ) -> SlotFeatures:
        f = [[cols[b][j] for b in rows] for j in range(8)]
        return SlotFeatures(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], [tokens[b] for b in rows])

    def __call__(self, drafts: Any, draft_laws: Any, target_laws: Any, k: Any) -> Any:
        """The verified lengths ``min(L, k)`` [B] of a round: ``drafts`` [B, K], ``draft_laws``
        [B, K, V], ``target_laws`` [B, >= K, V] (the target's law before each draft), ``k`` [B]."""
        import torch

        B, K = drafts.shape
        if self._stale is None or len(self._stale) != B:
            self.start(B)
        assert self._stale is not None
        q = draft_laws.double()
        p = target_laws[:, :K].double()
        valid = torch.arange(K, device=k.device)[None, :] < k[:, None]
        conf = torch.minimum(p, q).sum(-1) * valid
        surv = torch.cumprod(conf, 1)
        top = torch.topk(q, min(2, q.shape[-1]), dim=-1).values
        margin = (top[..., 0] - (top[..., 1] if top.shape[-1] > 1 else 0)) * valid
        logq = torch.where(q > 0, q.clamp_min(1e-300).log(), torch.zeros_like(q))
        ent = -(q * logq).sum(-1) * valid
        own = q.gather(2, drafts[..., None])[..., 0]
        acc = torch.where(
            own > 0, torch.minimum(torch.ones_like(own), p.gather(2, drafts[..., None])[..., 0] / own), own
        )
        host = [
            t.cpu().tolist() for t in (conf, surv, margin, top[..., 0] * valid, ent, own * valid, acc * valid)
        ]
        tokens = [tuple(int(v) for v in row) for row in drafts.cpu().tolist()]
        cols = []
        for b in range(B):
            prev = self._stale[b]
            stale = [prev[i] if i < len(prev) else 1.0 for i in range(K)]
            c = [
                host[0][b],
                host[1][b],
                [s if ok else 0.0 for s, ok in zip(stale, valid[b].tolist(), strict=True)],
            ]
            c += [host[j][b] for j in range(2, 7)]
            cols.append(c)
        kk = k.cpu().tolist()
        L = [0] * B
        for start in range(0, B, self.batch):
            grp = range(start, min(B, start + self.batch))
            out = check_lengths(
                self.schedule.lengths(self._features(grp, cols, tokens), self.cost), len(grp), K, self.cost
            )
            for b, n in zip(grp, out, strict=True):
                L[b] = min(n, kk[b])
        for b in range(B):
            if kk[b] > 0:
                self._stale[b] = [s for s in host[1][b][: kk[b]] if not math.isnan(s)]
        return torch.as_tensor(L, dtype=k.dtype, device=k.device)

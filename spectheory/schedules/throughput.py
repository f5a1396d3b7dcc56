r"""A schedule's throughput on a batch, exactly (enumerating the drafts) and by Monte Carlo.

One verification step of a batch of rows (:class:`~spectheory.schedules.slots.BlockRow`): every
row drafts ``gamma`` tokens, the schedule picks ``L [B]`` from the slot features, each row's
first ``L_b`` drafts are checked by token verification (accept :math:`x_i` with probability
:math:`a_i = \min(1, p/q)(x_i)`, stop at the first rejection) and the row emits its accepted
drafts and one more token. Given the drafts :math:`x` the schedule's lengths are fixed, so

.. math:: E[\text{tokens} \mid x] = \sum_b \Big(1 + \sum_{i \le L_b(x)} \prod_{k \le i} a_{b,k}\Big),
   \qquad \text{time}(x) = \text{cost.time}\Big(\sum_b (L_b(x) + 1)\Big),

and the schedule's throughput is the renewal rate :math:`\Theta = E[\text{tokens}] /
E[\text{time}]` (steps repeated from the same batch state), with both expectations over the
drafts, enumerated exactly (``Fraction`` laws give ``Fraction`` results).
:func:`simulate_schedule` estimates the same rate by drawing drafts and acceptances, with a
delta-method standard error.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.cost.staircase import StaircaseCost
>>> from spectheory.schedules.slots import BlockRow
>>> from spectheory.schedules.schedulers import FixedLength
>>> cost = StaircaseCost.from_steps_per_second([1, F(1, 2), F(9, 20)])
>>> row = BlockRow.iid([F(7, 10), F(3, 10)], [F(1, 2), F(1, 2)])
>>> evaluate_schedule([row], 2, FixedLength(2), cost).throughput
Fraction(549, 500)
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._progress import progress_bar
from ..cost.staircase import StaircaseCost
from .schedulers import Schedule
from .slots import BlockRow, draft_blocks, slot_features

__all__ = ["ScheduleValue", "evaluate_schedule", "simulate_schedule", "joint_blocks", "check_lengths"]


@dataclass(frozen=True)
class ScheduleValue:
    """Expected tokens and time of one step, and the throughput ``tokens / time``.

    Attributes
    ----------
    tokens, time, throughput : number
        Exact (``Fraction`` or float) from :func:`evaluate_schedule`, estimates from
        :func:`simulate_schedule`.
    verified : number
        Expected drafts verified per step (:math:`E \\sum_b L_b`).
    se : float or None
        Standard error of ``throughput`` (Monte Carlo only).
    """

    tokens: Any
    time: Any
    throughput: Any
    verified: Any
    se: float | None = None


def joint_blocks(rows: Sequence[BlockRow], gamma: int) -> Iterator[tuple[list[tuple[int, ...]], Any]]:
    """Every joint draft of the batch with its probability (rows draft independently)."""
    per_row = [list(draft_blocks(r, gamma)) for r in rows]
    for combo in itertools.product(*per_row):
        w: Any = 1
        for _, p in combo:
            w = w * p
        yield [x for x, _ in combo], w


def check_lengths(L: Sequence[int], B: int, gamma: int, cost: StaircaseCost) -> tuple[int, ...]:
    """Validate a schedule's output: ``B`` ints in ``[0, gamma]`` whose step fits the cost."""
    out = tuple(int(v) for v in L)
    if len(out) != B or any(v < 0 or v > gamma for v in out):
        raise ValueError(f"schedule: expected {B} lengths in [0, {gamma}], got {L}")
    if sum(out) + B > cost.max_tokens:
        raise ValueError(f"schedule: a step of {sum(out) + B} positions exceeds the cost's largest bucket")
    return out


def _row_tokens(accept: Sequence[Any], L: int) -> Any:
    tok: Any = 1
    run: Any = 1
    for a in accept[:L]:
        run = run * a
        tok = tok + run
    return tok


def evaluate_schedule(
    rows: Sequence[BlockRow], gamma: int, schedule: Schedule, cost: StaircaseCost
) -> ScheduleValue:
    """The exact :class:`ScheduleValue` of ``schedule`` on a batch (enumerates ``V^(B gamma)``
    joint drafts: tiny batches)."""
    if gamma < 1:
        raise ValueError(f"gamma: expected >= 1, got {gamma}")
    B = len(rows)
    tokens: Any = 0
    time: Any = 0
    verified: Any = 0
    for blocks, w in joint_blocks(rows, gamma):
        f = slot_features(rows, blocks)
        L = check_lengths(schedule.lengths(f, cost), B, gamma, cost)
        tokens = tokens + w * sum((_row_tokens(f.accept_prob[b], L[b]) for b in range(B)), 0)
        time = time + w * cost.time(sum(L) + B)
        verified = verified + w * sum(L)
    return ScheduleValue(tokens, time, tokens / time, verified)


def _draw(row: BlockRow, gamma: int, u: np.ndarray) -> tuple[int, ...]:
    x: list[int] = []
    for i in range(gamma):
        q = np.asarray(row.laws(tuple(x))[1], dtype=np.float64)
        x.append(int(min(np.searchsorted(np.cumsum(q), u[i] * q.sum(), side="right"), len(q) - 1)))
    return tuple(x)


def simulate_schedule(
    rows: Sequence[BlockRow],
    gamma: int,
    schedule: Schedule,
    cost: StaircaseCost,
    n_steps: int,
    *,
    rng: Any = None,
    progress: bool | None = None,
) -> ScheduleValue:
    """Monte Carlo estimate of :func:`evaluate_schedule`: ``n_steps`` independent steps, each
    drawing the drafts, the schedule's lengths and the acceptances (uniforms from ``rng``);
    ``se`` is the delta-method standard error of the ratio of means."""
    if n_steps < 2:
        raise ValueError(f"n_steps: expected >= 2, got {n_steps}")
    gen = np.random.default_rng(rng)
    B = len(rows)
    rows = [r.as_float() for r in rows]
    tok = np.empty(n_steps)
    tim = np.empty(n_steps)
    ver = np.empty(n_steps)
    with progress_bar(n_steps, f"simulate {schedule.name}", show=progress) as bar:
        for t in range(n_steps):
            u = gen.random((B, 2 * gamma))
            blocks = [_draw(r, gamma, u[b, :gamma]) for b, r in enumerate(rows)]
            f = slot_features(rows, blocks)
            L = check_lengths(schedule.lengths(f, cost), B, gamma, cost)
            n = 0
            for b in range(B):
                j = 0
                while j < L[b] and u[b, gamma + j] < float(f.accept_prob[b][j]):
                    j += 1
                n += j + 1
            tok[t], tim[t], ver[t] = n, float(cost.time(sum(L) + B)), sum(L)
            bar.update(1)
    mt, ms = tok.mean(), tim.mean()
    r = mt / ms
    resid = tok - r * tim
    se = float(resid.std(ddof=1) / (ms * np.sqrt(n_steps)))
    return ScheduleValue(float(mt), float(ms), float(r), float(ver.mean()), se)

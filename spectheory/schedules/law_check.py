r"""The exact output law of a scheduled step, and the non-anticipation check it gives.

Row ``b`` of a step (:mod:`.throughput`) emits its accepted drafts and one more token: the
correction :math:`(p - q)_+ / (1 - \alpha)` after the first rejection, or a bonus token from
:math:`p` after ``L_b`` accepted drafts. Completing the row with target samples to
``H = gamma + 1`` tokens gives a law on :math:`V^H` sequences; a schedule is lossless on the
batch iff, for every row, it equals the target's :math:`\prod_k p(y_k \mid y_{<k})`.

*Non-anticipation* (``docs/verification_schedules.md``): if :math:`\{L_b \ge i\}` is a function
of the row's drafts before slot ``i`` (:math:`x_{b,<i}`) and of randomness independent of row
``b`` (the other rows' drafts), the row's output law is the target's. A schedule whose law
differs is therefore anticipating; :func:`output_law` enumerates the drafts of every row
(forced draws, exact with ``Fraction`` laws), so the check is exact on a tiny batch. An equal
law on the instances tried does not prove non-anticipation.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.cost.staircase import StaircaseCost
>>> from spectheory.schedules.slots import BlockRow
>>> from spectheory.schedules.schedulers import retrospective_argmax
>>> cost = StaircaseCost.from_steps_per_second([1, F(1, 2), F(9, 20)])
>>> row = BlockRow.iid([F(7, 10), F(3, 10)], [F(1, 2), F(1, 2)])
>>> law = first_token_law([row], 2, retrospective_argmax(), cost)[0]
>>> law
(Fraction(17, 20), Fraction(3, 20))
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..cost.staircase import StaircaseCost
from .schedulers import Schedule
from .slots import BlockRow, slot_features
from .throughput import check_lengths, joint_blocks

__all__ = ["output_law", "target_law", "first_token_law", "LawCheck", "check_output_law"]


def _complete(
    row: BlockRow, prefix: tuple[int, ...], H: int, mass: Any, out: dict[tuple[int, ...], Any]
) -> None:
    """Add ``mass`` times the target's law of the continuation of ``prefix`` to ``H`` tokens."""
    if len(prefix) >= H:
        out[prefix[:H]] = out.get(prefix[:H], 0) + mass
        return
    p = row.laws(prefix)[0]
    for v, pv in enumerate(p):
        if pv > 0:
            _complete(row, prefix + (v,), H, mass * pv, out)


def _row_law(row: BlockRow, x: tuple[int, ...], L: int, H: int, mass: Any, out: dict) -> None:
    """The row's emitted tokens given drafts ``x`` and ``L`` verified, completed to ``H``."""
    run = mass
    for i in range(L):
        pre = x[:i]
        p, q = row.laws(pre)
        a = min(1, p[x[i]] / q[x[i]])
        rej = 1 - sum((min(u, w) for u, w in zip(p, q, strict=True)), 0 * p[0])
        if a < 1 and rej > 0:
            for v in range(row.vocab_size):
                r = p[v] - q[v]
                if r > 0:  # the correction: P(reject | x_i) * (p - q)_+(v) / (1 - alpha)
                    _complete(row, pre + (v,), H, run * (1 - a) * r / rej, out)
        run = run * a
        if run == 0:
            return
    _complete(row, x[:L], H, run, out)  # the bonus token and the rest from the target


def output_law(
    rows: Sequence[BlockRow], gamma: int, schedule: Schedule, cost: StaircaseCost, horizon: int | None = None
) -> list[dict[tuple[int, ...], Any]]:
    """Each row's exact law of its first ``horizon`` tokens (default ``gamma + 1``) after one
    scheduled step, completed by the target: ``B`` dicts ``{tokens: probability}``."""
    H = gamma + 1 if horizon is None else int(horizon)
    if H < gamma + 1:
        raise ValueError(f"horizon: expected >= gamma + 1 = {gamma + 1}, got {H}")
    B = len(rows)
    laws: list[dict[tuple[int, ...], Any]] = [{} for _ in rows]
    for blocks, w in joint_blocks(rows, gamma):
        L = check_lengths(schedule.lengths(slot_features(rows, blocks), cost), B, gamma, cost)
        for b in range(B):
            _row_law(rows[b], blocks[b], L[b], H, w, laws[b])
    return laws


def target_law(row: BlockRow, horizon: int) -> dict[tuple[int, ...], Any]:
    """The target's law of the row's first ``horizon`` tokens."""
    out: dict[tuple[int, ...], Any] = {}
    _complete(row, (), int(horizon), 1, out)
    return out


def first_token_law(
    rows: Sequence[BlockRow], gamma: int, schedule: Schedule, cost: StaircaseCost
) -> list[tuple[Any, ...]]:
    """Each row's law of its first emitted token (the marginal of :func:`output_law`)."""
    out = []
    for row, law in zip(rows, output_law(rows, gamma, schedule, cost), strict=True):
        m = [0 * next(iter(law.values()))] * row.vocab_size
        for y, pr in law.items():
            m[y[0]] = m[y[0]] + pr
        out.append(tuple(m))
    return out


@dataclass(frozen=True)
class LawCheck:
    """The output-law check of a schedule on one batch.

    Attributes
    ----------
    lossless : bool
        Every row's law equals the target's (exactly with ``Fraction`` laws, else within ``atol``).
    tv : number
        The largest total variation between a row's law and the target's.
    worst_row : int
        The row attaining ``tv``.
    """

    lossless: bool
    tv: Any
    worst_row: int


def check_output_law(
    rows: Sequence[BlockRow], gamma: int, schedule: Schedule, cost: StaircaseCost, *, atol: float = 1e-12
) -> LawCheck:
    """Compare each row's output law with the target's (:class:`LawCheck`)."""
    laws = output_law(rows, gamma, schedule, cost)
    worst: Any = -1
    worst_b = 0
    for b, (row, law) in enumerate(zip(rows, laws, strict=True)):
        ref = target_law(row, gamma + 1)
        tv = sum(abs(law.get(y, 0) - ref.get(y, 0)) for y in set(law) | set(ref)) / 2
        if tv > worst:
            worst, worst_b = tv, b
    exact = all(isinstance(v, (int, Fraction)) for law in laws for v in law.values())
    ok = worst == 0 if exact else float(worst) <= atol
    return LawCheck(bool(ok), worst, worst_b)

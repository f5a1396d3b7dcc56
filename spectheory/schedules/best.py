r"""The best non-anticipating schedule: a stopping problem along the admission order.

A *sequential admission* schedule admits slots one at a time: at each step it either stops or
admits the next slot of some row ``b`` (slot ``d_b + 1`` after the ``d_b`` it admitted), and the
slot's drafted token :math:`x_{b, d_b + 1}` is then revealed to its later decisions. Whether a
slot is admitted is thus a function of the tokens of the slots admitted before it -- the
schedule is non-anticipating -- and every schedule of :mod:`.schedulers` that ranks by a
prefix feature (the greedy, top-K, the stale argmax, fixed lengths) is one of them.

The best one maximises the rate :math:`\Theta = E[\text{tokens}] / E[\text{time}]`. For a fixed
:math:`\lambda` the best :math:`E[\text{tokens}] - \lambda E[\text{time}]` is found by backward
induction over the states (each row's admitted prefix :math:`\pi_b`):

.. math:: W(\pi) = \max\Big( \sum_b \tau(\pi_b) - \lambda\, \text{time}\big(\textstyle\sum_b (|\pi_b| + 1)\big),\;
          \max_b \sum_v q(v \mid \pi_b)\, W(\pi_b \cdot v) \Big),
   \qquad \tau(\pi) = 1 + \sum_{i \le |\pi|} \prod_{k \le i} \min(1, p/q)(\pi_k),

and Dinkelbach's iteration :math:`\lambda \leftarrow \Theta(\text{argmax policy})` reaches the
best rate in finitely many steps (finitely many policies; exact with ``Fraction`` laws).
:func:`brute_force_best` enumerates every sequential admission schedule of a tiny batch
instead. The class is not every non-anticipating schedule when ``B > 1``
(``docs/verification_schedules.md``); with one row it is.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.cost.staircase import StaircaseCost
>>> from spectheory.schedules.slots import BlockRow
>>> cost = StaircaseCost.from_steps_per_second([1, F(1, 2), F(9, 20)])
>>> row = BlockRow.iid([F(7, 10), F(3, 10)], [F(1, 2), F(1, 2)])
>>> best_schedule([row], 2, cost).value.throughput
Fraction(549, 500)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..cost.staircase import StaircaseCost
from .schedulers import Schedule
from .slots import BlockRow, SlotFeatures
from .throughput import ScheduleValue

__all__ = ["BestSchedule", "best_schedule", "brute_force_best"]

State = tuple[tuple[int, ...], ...]


def _tau(row: BlockRow, prefix: tuple[int, ...]) -> Any:
    tok: Any = 1
    run: Any = 1
    for i, x in enumerate(prefix):
        p, q = row.laws(prefix[:i])
        run = run * min(1, p[x] / q[x])
        tok = tok + run
    return tok


@dataclass(frozen=True)
class BestSchedule(Schedule):
    """A sequential admission policy: ``policy[state]`` is the row to admit next, or -1 to stop
    (``state``: each row's admitted prefix); it replays on the drafted tokens."""

    policy: dict[State, int]
    label: str = "best non-anticipating"

    @property
    def name(self) -> str:
        return self.label

    def lengths(self, features: SlotFeatures, cost: StaircaseCost) -> tuple[int, ...]:
        x = features.tokens
        state: State = tuple(() for _ in x)
        while (b := self.policy.get(state, -1)) >= 0:
            d = len(state[b])
            state = state[:b] + (tuple(x[b][: d + 1]),) + state[b + 1 :]
        return tuple(len(s) for s in state)


@dataclass(frozen=True)
class BestResult:
    """The best sequential admission schedule and its value.

    Attributes
    ----------
    schedule : BestSchedule
    value : ScheduleValue
        Its exact tokens, time and throughput per step.
    iterations : int
        Dinkelbach iterations used.
    """

    schedule: BestSchedule
    value: ScheduleValue
    iterations: int


def _row_tables(row: BlockRow, gamma: int) -> tuple[dict[tuple[int, ...], Any], ...]:
    r"""``(tau, q, prob)`` of every drafted prefix of length ``<= gamma`` with positive
    probability: :math:`\tau(\pi)`, the draft's law after ``pi`` (below ``gamma``) and the
    probability :math:`\prod_i q(\pi_i \mid \pi_{<i})` that the row drafts ``pi``."""
    tau: dict[tuple[int, ...], Any] = {(): 1}
    run: dict[tuple[int, ...], Any] = {(): 1}
    prob: dict[tuple[int, ...], Any] = {(): 1}
    qs: dict[tuple[int, ...], Any] = {}
    layer: list[tuple[int, ...]] = [()]
    for _ in range(gamma):
        nxt = []
        for pre in layer:
            p, q = row.laws(pre)
            qs[pre] = q
            for v, qv in enumerate(q):
                if qv > 0:
                    child = pre + (v,)
                    run[child] = run[pre] * min(1, p[v] / qv)
                    prob[child] = prob[pre] * qv
                    tau[child] = tau[pre] + run[child]
                    nxt.append(child)
        layer = nxt
    return tau, qs, prob


def _fixed_rate(tables: list, gamma: int, cost: StaircaseCost) -> Any:
    """The best rate of verifying the same ``L`` drafts of every row (``L = 0..gamma``): a
    sequential admission schedule, so a lower bound on the best rate (Dinkelbach's start)."""
    B = len(tables)
    best: Any = None
    for L in range(gamma + 1):
        if B * (L + 1) > cost.max_tokens:
            break
        tok = sum((tau[pre] * prob[pre] for tau, _, prob in tables for pre in tau if len(pre) == L), 0)
        rate = tok / cost.time(B * (L + 1))
        best = rate if best is None or rate > best else best
    return best


def _solve(
    rows: Sequence[BlockRow], gamma: int, cost: StaircaseCost, lam: Any, tables: list | None = None
) -> tuple[dict, Any, Any, Any]:
    """Backward induction for one ``lam``: the policy and, from the empty state, the best
    ``E[tokens] - lam E[time]`` with the policy's ``E[tokens]``, ``E[time]``, ``E[verified]``
    (``tables``: :func:`_row_tables` of each row, computed here when not given)."""
    memo: dict[State, tuple[Any, Any, Any, Any]] = {}
    policy: dict[State, int] = {}
    B = len(rows)
    tabs = tables if tables is not None else [_row_tables(r, gamma) for r in rows]
    times = [None] + [cost.time(n) for n in range(1, cost.max_tokens + 1)]

    def W(state: State) -> tuple[Any, Any, Any, Any]:
        if state in memo:
            return memo[state]
        n = sum(len(s) for s in state)
        tok = sum((tabs[b][0][s] for b, s in enumerate(state)), 0)
        t = times[n + B]
        best = (tok - lam * t, tok, t, n)
        choice = -1
        if n + B + 1 <= cost.max_tokens:
            for b, s in enumerate(state):
                if len(s) >= gamma:
                    continue
                a0: Any = 0
                a1: Any = 0
                a2: Any = 0
                a3: Any = 0
                head, tail = state[:b], state[b + 1 :]
                for v, qv in enumerate(tabs[b][1][s]):
                    if qv > 0:
                        c = W((*head, s + (v,), *tail))
                        a0, a1, a2, a3 = a0 + qv * c[0], a1 + qv * c[1], a2 + qv * c[2], a3 + qv * c[3]
                if a0 > best[0]:
                    best, choice = (a0, a1, a2, a3), b
        memo[state] = best
        if choice >= 0:
            policy[state] = choice
        return best

    value, tok, t, ver = W(tuple(() for _ in rows))
    return policy, value, (tok, t), ver


def best_schedule(
    rows: Sequence[BlockRow], gamma: int, cost: StaircaseCost, *, max_iter: int = 100, tol: float = 1e-12
) -> BestResult:
    """The best sequential admission (non-anticipating) schedule of a batch and its exact value
    (backward induction inside Dinkelbach's iteration; see the module docstring)."""
    if gamma < 1 or not rows:
        raise ValueError("rows, gamma: expected at least one row and gamma >= 1")
    tables = [_row_tables(r, gamma) for r in rows]
    lam: Any = _fixed_rate(tables, gamma, cost)
    for it in range(1, max_iter + 1):
        policy, value, (tok, t), ver = _solve(rows, gamma, cost, lam, tables)
        new = tok / t
        if value <= 0 or (not isinstance(value, int) and type(value).__name__ != "Fraction" and value <= tol):
            sched = BestSchedule(policy)
            return BestResult(sched, ScheduleValue(tok, t, new, ver), it)
        lam = new
    raise RuntimeError(f"best_schedule: Dinkelbach did not settle in {max_iter} iterations")


def _policies(
    rows: Sequence[BlockRow], gamma: int, cost: StaircaseCost, state: State
) -> list[tuple[Any, Any]]:
    """``(E[tokens], E[time])`` of every sequential admission schedule from ``state``."""
    B = len(rows)
    n = sum(len(s) for s in state)
    out = [(sum((_tau(r, s) for r, s in zip(rows, state, strict=True)), 0), cost.time(n + B))]
    if n + B + 1 > cost.max_tokens:
        return out
    for b, s in enumerate(state):
        if len(s) >= gamma:
            continue
        q = rows[b].laws(s)[1]
        branches = [
            (qv, _policies(rows, gamma, cost, state[:b] + (s + (v,),) + state[b + 1 :]))
            for v, qv in enumerate(q)
            if qv > 0
        ]
        combos: list[tuple[Any, Any]] = [(0, 0)]
        for qv, opts in branches:
            combos = [(a + qv * c, t + qv * d) for a, t in combos for c, d in opts]
        out.extend(combos)
    return out


def brute_force_best(rows: Sequence[BlockRow], gamma: int, cost: StaircaseCost) -> tuple[Any, int]:
    """The best rate over *every* sequential admission schedule, enumerated (tiny batches
    only), and how many schedules were enumerated."""
    opts = _policies(rows, gamma, cost, tuple(() for _ in rows))
    return max(a / t for a, t in opts), len(opts)

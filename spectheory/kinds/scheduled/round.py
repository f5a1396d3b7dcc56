r"""A round whose verified lengths a batch verification schedule decides.

The driver's active runs are stepped in consecutive groups of ``batch`` runs (the requests a
server steps together). Each run drafts ``gamma`` tokens along the draft's own path
(``x_i ~ q(. | s_i)``); the schedule (:class:`~spectheory.schedules.Schedule`) reads the group's
slot features (:func:`~spectheory.schedules.slots.slot_features`) and the round's staircase cost
and returns ``L [batch]``; each run's first ``min(L_b, T - n)`` drafts are checked by token
verification (accept :math:`x_i` when :math:`u_i < \min(1, p/q)(x_i)`), then the correction
:math:`(p - q)_+` after a rejection or the bonus candidate from :math:`p`. Uniforms:
``rng.random((R, gamma))`` for the drafts, ``rng.random((R, gamma))`` for the acceptances,
``rng.random(R)`` for the final tokens.

Its exact engine is the one-step evaluation of :func:`spectheory.schedules.evaluate_schedule`
(rows at given states), its kit check :func:`spectheory.testing.schedules.check_schedule` (the
output law, exactly), and the real decoder runs it through
:class:`~spectheory.schedules.decoder_hook.DecoderSchedule` (the same groups of ``batch`` rows; the
target scores every drafted block and each row verifies its first ``L_b`` drafts; ``stale`` is
there the row's survival curve of its previous round).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._guards import check_int
from ...cost.staircase import StaircaseCost
from ...rounds.base import Round, RoundOutcome, RoundRuns
from ...schedules.schedulers import Schedule
from ...schedules.slots import BlockRow, rows_from_chain, slot_features
from ...schedules.throughput import ScheduleValue, check_lengths, evaluate_schedule

__all__ = ["ScheduledRound"]


class ScheduledRound(Round):
    """Draft ``gamma`` tokens per run; verify as many as ``schedule`` decides for each group of
    ``batch`` runs under ``cost``.

    Parameters
    ----------
    gamma : int >= 1
    schedule : Schedule
    cost : StaircaseCost
        The step time curve the schedule reads (``cost.max_tokens >= batch``).
    batch : int >= 1
        Runs stepped together.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.schedules import EarlyStopGreedy
    >>> from spectheory.cost.staircase import StaircaseCost
    >>> chain = st.DecodingChain.iid([0.7, 0.3], [0.5, 0.5])
    >>> rnd = ScheduledRound(2, EarlyStopGreedy(), StaircaseCost.bucketed(1.0, 0.05, (2, 4, 6)), batch=2)
    >>> res = st.simulate(chain, 8, rnd, 50, rng=0)
    >>> bool(res.target_calls.mean() < 8)           # fewer calls than tokens
    True
    """

    def __init__(self, gamma: int, schedule: Schedule, cost: StaircaseCost, batch: int = 1) -> None:
        self.gamma = check_int(gamma, "gamma", 1)
        self.batch = check_int(batch, "batch", 1)
        if not isinstance(schedule, Schedule):
            raise ValueError(f"schedule: expected a Schedule, got {type(schedule).__name__}")
        if not isinstance(cost, StaircaseCost) or cost.max_tokens < self.batch:
            raise ValueError("cost: expected a StaircaseCost whose largest bucket holds the batch")
        self.schedule, self.cost = schedule, cost
        self._rows: dict[tuple[int, int, int], BlockRow] = {}

    @property
    def name(self) -> str:
        return f"scheduled(gamma={self.gamma}, batch={self.batch}, {self.schedule.name})"

    @property
    def max_depth(self) -> int:
        return self.gamma

    @property
    def verifier_name(self) -> str:
        return "token"

    def _row(self, chain: Any, s: int, n: int) -> BlockRow:
        key = (id(chain), int(s), int(n) if chain.max_horizon is not None else 0)
        if key not in self._rows:
            self._rows[key] = rows_from_chain(chain, [s], key[2])[0].as_float()
        return self._rows[key]

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        T, g, V, n, R = runs.horizon, self.gamma, sampler.V, runs.n, runs.size
        k = np.minimum(g, T - n)
        u = rng.random((R, g))
        states = np.empty((R, g + 1), dtype=np.int64)
        states[:, 0] = runs.state
        x = np.empty((R, g), dtype=np.int64)
        P = np.empty((R, g + 1, V))
        Q = np.empty((R, g, V))
        for i in range(g + 1):
            m = np.minimum(n + i, T - 1)
            s = states[:, i]
            P[:, i] = sampler.rows(sampler.target, m, s)
            if i == g:
                break
            Q[:, i] = sampler.rows(sampler.draft, m, s)
            x[:, i] = sampler.sample_draft(m, s, u[:, i])
            states[:, i + 1] = sampler.next_states(s, x[:, i], rng)
        L = np.empty(R, dtype=np.int64)
        for start in range(0, R, self.batch):
            grp = range(start, min(R, start + self.batch))
            rows = [self._row(sampler.chain, runs.state[r], n[r]) for r in grp]
            f = slot_features(rows, [tuple(x[r]) for r in grp])
            L[start : grp.stop] = check_lengths(self.schedule.lengths(f, self.cost), len(rows), g, self.cost)
        L = np.minimum(L, k)
        ua = rng.random((R, g))
        rr = np.arange(R)
        px = np.take_along_axis(P[:, :g], x[:, :, None], 2)[..., 0]
        qx = np.take_along_axis(Q, x[:, :, None], 2)[..., 0]
        ok = (ua < np.minimum(1.0, px / qx)) | (np.arange(g)[None, :] >= L[:, None])
        j = np.where(ok.all(1), L, np.argmin(ok, 1))
        rejected = j < L
        last = P[rr, j].copy()
        resid = np.clip(P[rr, np.minimum(j, g - 1)] - Q[rr, np.minimum(j, g - 1)], 0.0, None)
        last[rejected] = resid[rejected]
        cdf = np.cumsum(last, 1)
        y = np.minimum((cdf < rng.random(R)[:, None] * cdf[:, -1:]).sum(1), V - 1)
        return RoundOutcome(
            accepted=j,
            final=y.astype(np.int64),
            rejected=rejected,
            drafted=k,
            end_state=states[rr, j],
            path=x if runs.keep_path else None,
        )

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """The exact one-step :class:`~spectheory.schedules.ScheduleValue` of a batch in chain
        states ``states`` (option; default ``batch`` rows in the initial state, which must be a
        point mass) at position ``n`` (option, default 0): expected tokens, time, throughput."""
        if cost is not None:
            raise ValueError("cost: a scheduled round reads its own StaircaseCost")
        states = options.pop("states", None)
        n = int(options.pop("n", 0))
        exact = bool(options.pop("exact", False))
        if options:
            raise ValueError(f"options: expected states, n, exact; got {sorted(options)}")
        if horizon - n < self.gamma + 1:
            raise ValueError(f"horizon: one full step needs horizon >= n + gamma + 1 = {n + self.gamma + 1}")
        if states is None:
            init = np.flatnonzero(np.asarray(chain.initial) > 0)
            if init.size != 1:
                raise ValueError("states: the initial law is not a point mass; pass the rows' states")
            states = [int(init[0])] * self.batch
        rows = rows_from_chain(chain, states, n, exact=exact)
        value: ScheduleValue = evaluate_schedule(rows, self.gamma, self.schedule, self.cost)
        return value

    def decode(
        self, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict[str, Any]
    ) -> Any:
        """The real decoder: ``loops.path`` (:func:`~spectheory.decoder.speculative_generate`)
        with ``gamma``, token verification and a fresh
        :class:`~spectheory.schedules.decoder_hook.DecoderSchedule` of the schedule, cost and batch."""
        from ...schedules.decoder_hook import DecoderSchedule

        hook = DecoderSchedule(self.schedule, self.cost, self.batch)
        return loops.path(
            target, draft, prompts, max_new_tokens, self.gamma, verifier="token", schedule=hook, **options
        )

    def check_plan(self, kit: Any, options: dict[str, Any]) -> Any:
        """The conformance kit: ``kit.schedule`` (the exact output-law check) on the schedule."""
        return kit.schedule(self.schedule, gamma=self.gamma, batch=self.batch, **options)

    def __repr__(self) -> str:
        return f"ScheduledRound(gamma={self.gamma}, schedule={self.schedule.name!r}, batch={self.batch})"

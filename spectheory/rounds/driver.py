r"""The one Monte Carlo driver: runs any :class:`~spectheory.rounds.Round` to the horizon.

The protocol (``docs/protocol.md``): a generation of ``T`` tokens starts in a state drawn from
``chain.initial``; while ``n < T`` tokens are generated, a round is played (the round kind
decides what is drafted and how it is verified, :meth:`~spectheory.rounds.Round.play`): it
keeps ``j`` drafted tokens, and then emits its final token after a rejection, or -- when no
draft was rejected, ``bonus=True`` and ``n + j < T`` -- the bonus token from the target.
Counted per generation: ``target_calls`` (+1 per round), ``draft_tokens`` (+ the drafted
tokens), ``rejections`` (+1 per round that ended with a rejection), ``accepted`` (+j), the
accepted count ``j`` of every round and the position of every rejection, and under a cost the
target time ``t(drafted)`` of every call.

Runs are simulated together: the loop is over rounds, never over runs or the vocabulary. Runs
are processed in chunks (:meth:`~spectheory.rounds.Round.chunk_size`) so that a round's
arrays stay small; each chunk draws its initial states first. With stochastic transitions the
state after the final token is drawn here, after the round's own draws.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._guards import as_rng, check_bool, check_int
from .._sizes import PROGRESS_SECONDS, check_size
from .base import Round, RoundRuns
from .result import STATISTICS, SimulationResult
from .sampler import ChainSampler, sample_initial

__all__ = ["run_rounds"]


def progress_bar(progress: Any, total: int, desc: str, seconds: float = 0.0) -> Any:
    """The bar over ``total`` tokens (:func:`spectheory._progress.progress_bar`): ``None`` shows
    it at once when the run is estimated above :data:`~spectheory._sizes.PROGRESS_SECONDS`, else
    after 3 s; a bar passed as ``progress`` (one total for a caller's whole job) is updated."""
    from .._progress import progress_bar as bar

    if progress is None and seconds > PROGRESS_SECONDS:
        progress = True
    return bar(total, desc, show=progress, unit="tok", unit_scale=True)


def run_rounds(
    chain: Any,
    horizon: int,
    round: Round,
    n_runs: int = 1000,
    rng: Any = None,
    *,
    bonus: bool = True,
    return_tokens: bool = False,
    progress: bool | None = None,
    cost: Any = None,
) -> SimulationResult:
    """Simulate ``n_runs`` generations of ``horizon`` tokens playing ``round`` (see the module).

    ``cost`` is a :class:`~spectheory.rounds.Cost` or None; :func:`spectheory.simulate` is
    the public entry point (it also takes the round's shorthands).
    """
    if not isinstance(round, Round):
        raise ValueError(f"round: expected a Round, got {type(round).__name__}")
    T = chain.check_horizon(horizon)
    round.check(chain, T)
    N = check_int(n_runs, "n_runs", 1)
    bonus = bool(check_bool(bonus, "bonus"))
    D = round.depth(T)
    # the per-run results are kept whole (the work itself is chunked): refuse before allocating
    est = check_size(
        "simulate",
        "n_runs",
        runs=N,
        horizon=T,
        gamma=D,
        stored=len(STATISTICS) + 1 + (T if return_tokens else 0) + (cost is not None),
    )
    rng = as_rng(rng)
    out = {k: np.zeros(N, dtype=np.int64) for k in STATISTICS}
    counts = np.zeros((N, D + 1), dtype=np.int64)
    tokens = np.zeros((N, T), dtype=np.int64) if return_tokens else None
    ttime = np.zeros(N) if cost is not None else None
    by_position = np.zeros(T, dtype=np.int64)
    sampler = ChainSampler(chain)
    limit = round.chunk_size(chain, T)
    chunk = N if limit is None else max(1, min(N, int(limit)))
    call_times = np.zeros(0)
    with progress_bar(progress, N * T, f"simulate {round.name}", est.seconds) as bar:
        for start in range(0, N, chunk):
            sl = slice(start, min(N, start + chunk))
            call_times = _run_chunk(
                sampler,
                T,
                round,
                bonus,
                rng,
                {k: v[sl] for k, v in out.items()},
                counts[sl],
                None if tokens is None else tokens[sl],
                None if ttime is None else ttime[sl],
                by_position,
                bar,
                cost,
                call_times,
            )
    return SimulationResult(
        horizon=T,
        bonus=bonus,
        round=round.name,
        verifier=round.verifier_name,
        max_depth=D,
        target_calls=out["target_calls"],
        rejections=out["rejections"],
        draft_tokens=out["draft_tokens"],
        accepted=out["accepted"],
        accepted_counts=counts,
        rejection_by_position=by_position,
        tokens=tokens,
        target_time=ttime,
        cost=cost,
    )


def _run_chunk(sampler, T, round, bonus, rng, out, counts, tokens, ttime, by_position, bar, cost, call_times):
    """Play ``len(counts)`` runs to the horizon, writing into the given views; returns the
    cost's call-time table (``t(1..K)``, grown as rounds draft more)."""
    R0 = counts.shape[0]
    pos = np.zeros(R0, dtype=np.int64)
    state = sample_initial(sampler.chain, R0, rng)
    init = np.asarray(round.initial_memory)  # an int, or a vector of statistics (online learners)
    memory = np.repeat(init[None], R0, axis=0) if init.ndim else np.full(R0, int(init), dtype=np.int64)
    active = np.arange(R0)
    while active.size:
        R = active.size
        rows = np.arange(R)
        n = pos[active]
        runs = RoundRuns(T, n, state[active], memory[active], keep_path=tokens is not None, bonus=bonus)
        o = round.play(sampler, runs, rng)
        j = np.asarray(o.accepted, dtype=np.int64)
        y = np.asarray(o.final, dtype=np.int64)
        rejected = np.asarray(o.rejected, dtype=bool)
        drafted = np.asarray(o.drafted, dtype=np.int64)
        emit = rejected | (bonus & (n + j < T))
        e = j + emit
        s_j = o.end_state
        if sampler.stochastic:
            new_state = np.array(s_j, dtype=np.int64)
            f = np.flatnonzero(emit)
            new_state[f] = sampler.chain.sample_next_state(s_j[f], y[f], rng.random(f.size))
        else:
            new_state = np.where(emit, sampler.next_state[s_j, y], s_j)
        out["target_calls"][active] += 1
        out["draft_tokens"][active] += drafted
        if o.extra_calls is not None:  # forward passes: one more call and one more draft token each
            if cost is not None and cost.target_call is not None:
                raise ValueError("cost: a target-call time t(k) is not modelled for extra target calls")
            extra = np.asarray(o.extra_calls, dtype=np.int64)
            out["target_calls"][active] += extra
            out["draft_tokens"][active] += extra
            if ttime is not None:
                ttime[active] += extra
        out["rejections"][active] += rejected
        np.add.at(by_position, (n + j)[rejected], 1)
        out["accepted"][active] += j
        counts[active, j] += 1  # (active, j) pairs are distinct
        if ttime is not None:
            need = max(int(drafted.max()), 1)
            if need > call_times.size:
                call_times = cost.call_times(need)
            # a round that drafts nothing (the hindsight oracle's) is a call scoring no draft: t(0)
            call = call_times[np.maximum(drafted, 1) - 1]
            if not drafted.all():
                call = np.where(drafted > 0, call, cost.empty_call_time())
            ttime[active] += call
        if tokens is not None:
            path = np.asarray(o.path, dtype=np.int64)
            emitted = np.zeros((R, max(path.shape[1], int(j.max())) + 1), dtype=np.int64)
            emitted[:, : path.shape[1]] = path
            emitted[rows, j] = y
            rr, cc = np.nonzero(np.arange(emitted.shape[1])[None, :] < e[:, None])
            tokens[active[rr], n[rr] + cc] = emitted[rr, cc]
        if o.memory is not None:
            memory[active] = o.memory
        pos[active] = n + e
        state[active] = new_state
        bar.update(int(e.sum()))
        active = active[pos[active] < T]
    return call_times

"""Measured walltime speedup of the real decoder against Leviathan et al.'s prediction."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..laws.closed_form import iid_speedup
from .cost_insitu import LoggedRun

if TYPE_CHECKING:
    import torch

    from ..decoder.batching import CausalLM

__all__ = ["measure_speed"]


def measure_speed(
    target: CausalLM,
    draft: CausalLM,
    prompts: ArrayLike,
    horizon: int,
    gammas: Iterable[int],
    repeats: int = 3,
    seed: int = 0,
    device: str | torch.device | None = None,
    check_every: int | None = None,
) -> dict:
    r"""Measured walltime speedup of the decoder against the prediction, per gamma.

    Per repeat (runs interleaved so that machine load hits all alike): plain
    autoregressive decoding of ``horizon`` tokens with the target and with the draft (their
    per-forward times ``t_target``, ``t_draft`` after the prefill, ``T - 1`` forwards, give
    ``c = t_draft / t_target``),
    then speculative decoding for each gamma. Every time is the minimum over repeats (the
    least-disturbed run on a shared machine; counts are medians).

    Reported per gamma: ``measured = time(autoregressive target) / time(speculative)``
    (whole calls, prefill included); ``alpha`` = accepted / checked drafts;
    ``predicted = iid_speedup(alpha, gamma, c)`` (Leviathan et al.);
    ``predicted_counts = T / (calls + c * draft_tokens)`` (the same cost model with the
    measured calls and draft steps, no i.i.d. assumption); their ratios; and where the time
    goes: ``target_call_cost`` = seconds per target call in the decoder / ``t_target``
    (above 1: scoring ``gamma + 1`` tokens costs more than one), ``draft_step_cost``
    = seconds per draft step / ``t_draft``, ``bookkeeping_fraction`` = share of the decoder's
    time spent outside its draft and target phases (verification, bookkeeping).

    **The floor** (docs/decoder_floor.md): every timed run logs the forwards of both models
    (:class:`~spectheory.cost.timed.ForwardLog`), and a run's floor is the seconds of its
    forwards alone -- the same shapes, caches and moment. Per gamma, as medians over repeats
    of per-repeat values: ``floor_seconds``; ``overhead_fraction = 1 - floor / seconds``
    (everything the round does besides the two models: laws, sampling, the rule, the
    bookkeeping); ``ceiling = floor(autoregressive) / floor(speculative)`` of the same repeat,
    the speedup of a round with no overhead; ``ceiling_free_draft`` = the same with the draft's
    forwards free too (the target's ``t(gamma + 1) / t(1)`` and the accepted lengths alone bound
    it); and ``target_cost_curve``: the median seconds of a target forward scoring ``m`` tokens
    over that of one token, from the logged calls, ``m = 1 .. gamma + 1``.

    **The measured cost model** (:mod:`~spectheory.tuning.cost_insitu`): each speculative run
    is priced *held out* -- its forwards by the calls of the other configurations of its repeat,
    its work outside the forwards by every other run -- on its own counts of calls, draft steps
    and tokens scored. ``ratio_cost_model`` = the median over repeats of priced / measured seconds
    of the same run (paired: load that slows one repeat slows both), which is measured /
    predicted speedup, and ``predicted_cost_model = measured / ratio_cost_model``. Leviathan's constant-c
    ``predicted`` ignores that scoring ``gamma + 1`` tokens costs more than one and that a round
    has overhead; the cost model prices both.

    Parameters
    ----------
    prompts : int array [B, L] (B = 1 measures latency; larger B, throughput)
    check_every : int, optional
        Time the speculative runs on the fixed-horizon loop
        (:func:`~spectheory.decoder.speculative.speculative_generate`'s ``check_every``: no host
        read inside a round); default the loop with one read per round.
    horizon : int, tokens to generate; gammas : iterable of int >= 1; repeats : int >= 1
        (``repeats >= 2`` for ``predicted_cost_model``, which needs another run of the same gamma
        for the token counts only it scores; with one repeat it is ``nan``)

    Returns
    -------
    dict with ``c``, ``t_target``, ``t_draft``, ``rows`` (one dict per gamma).
    """
    from ..decoder.rng import derive_seed
    from ..decoder.speculative import autoregressive_generate, speculative_generate

    T = check_int(horizon, "horizon", 1)
    repeats = check_int(repeats, "repeats", 1)
    prompts = [list(p) for p in np.asarray(prompts, dtype=np.int64)]
    B = len(prompts)
    gammas = [check_int(g, "gammas", 1) for g in gammas]
    runs: dict[str, list[float]] = {"ar_target": [], "ar_draft": [], "t_target": [], "t_draft": []}
    sd: dict[int, list[Any]] = {g: [] for g in gammas}
    logged: dict[int, list[LoggedRun]] = {g: [] for g in (0, *gammas)}  # 0: autoregressive
    # warm-up (allocations, first-call overheads)
    autoregressive_generate(target, prompts, min(T, 4), seed=seed, device=device)
    speculative_generate(target, draft, prompts, min(T, 4), 2, seed=seed, device=device)
    for rep in range(repeats):
        s = derive_seed(seed, rep)
        run, a = _logged(
            target,
            draft,
            rep,
            B,
            0,
            partial(autoregressive_generate, target, prompts, T, seed=s, device=device),
        )
        logged[0].append(run)
        d = autoregressive_generate(draft, prompts, T, seed=s, device=device).stats
        runs["ar_target"].append(a.time_total)
        # T tokens, T - 1 forwards after the prefill (whose forward gives the first token's law)
        runs["t_target"].append((a.time_total - a.time_prefill) / max(T - 1, 1))
        runs["ar_draft"].append(d.time_total)
        runs["t_draft"].append((d.time_total - d.time_prefill) / max(T - 1, 1))
        for g in gammas:
            run, st = _logged(
                target,
                draft,
                rep,
                B,
                g,
                partial(
                    speculative_generate,
                    target,
                    draft,
                    prompts,
                    T,
                    g,
                    seed=s,
                    device=device,
                    check_every=check_every,
                ),
            )
            logged[g].append(run)
            sd[g].append(st)
    every = [r for rs in logged.values() for r in rs]
    med = {key: float(np.min(v)) for key, v in runs.items()}
    c = med["t_draft"] / med["t_target"]
    ar_floor = [_forwards(r) for r in logged[0]]
    rows = []
    for g in gammas:
        st = sd[g]
        calls = np.median([s.target_calls.mean() for s in st])
        steps = np.median([s.draft_tokens.mean() for s in st])
        acc = sum(int(s.position_accepted.sum()) for s in st)
        chk = sum(int(s.position_checked.sum()) for s in st)
        alpha = acc / chk if chk else float("nan")
        t_sd = float(np.min([s.time_total for s in st]))
        measured = med["ar_target"] / t_sd
        predicted = float(iid_speedup(alpha, g, c))
        predicted_counts = T / (calls + c * steps)
        per_call = np.min([s.time_target / max(s.batch_target_calls, 1) for s in st])
        per_step = np.min([s.time_draft / max(s.batch_draft_calls, 1) for s in st])
        bookkeeping = np.median(
            [(s.time_total - s.time_prefill - s.time_draft - s.time_target) / s.time_total for s in st]
        )
        floors = [_forwards(r) for r in logged[g]]
        priced = _priced(logged[g], every)
        # paired per repeat: measured / predicted = priced seconds / measured seconds of the same run
        paired = (
            float(np.median([p / r.seconds for p, r in zip(priced, logged[g])])) if priced else float("nan")
        )
        rows.append(
            {
                "gamma": g,
                "alpha": alpha,
                "target_calls": float(calls),
                "draft_tokens": float(steps),
                "time_speculative": t_sd,
                "measured": measured,
                "predicted": predicted,
                "predicted_counts": predicted_counts,
                "predicted_cost_model": measured / paired,
                "ratio": measured / predicted,
                "ratio_counts": measured / predicted_counts,
                "ratio_cost_model": paired,
                "target_call_cost": float(per_call / med["t_target"]),
                "draft_step_cost": float(per_step / med["t_draft"]),
                "bookkeeping_fraction": float(bookkeeping),
                "floor_seconds": float(np.median([f for f, _ in floors])),
                "overhead_fraction": _overhead(logged[g]),
                "ceiling": float(np.median([a / f for (a, _), (f, _) in zip(ar_floor, floors)])),
                "ceiling_free_draft": float(np.median([a / t for (a, _), (_, t) in zip(ar_floor, floors)])),
                # per repeat r: time(autoregressive target, r) / time(speculative, r), for the spread
                "measured_repeats": [float(a / s.time_total) for a, s in zip(runs["ar_target"], st)],
            }
        )
    return {
        "c": c,
        "t_target": med["t_target"],
        "t_draft": med["t_draft"],
        "time_autoregressive": med["ar_target"],
        "batch_size": B,
        "horizon": T,
        "repeats": repeats,
        "check_every": check_every,
        "rows": rows,
        "autoregressive_overhead_fraction": _overhead(logged[0]),
        "target_cost_curve": _cost_curve(np.concatenate([r.target for r in every])),
    }


def _logged(
    target: Any, draft: Any, rep: int, batch: int, gamma: int, generate: Callable[[], Any]
) -> tuple[LoggedRun, Any]:
    """Run ``generate()`` with both models' forwards logged: its
    :class:`~.cost_insitu.LoggedRun` (configuration ``gamma=g``, or autoregressive for 0) and stats."""
    from ..cost.timed import ForwardLog

    with ForwardLog(target) as lt, ForwardLog(draft) as ld:
        st = generate().stats
    kind, label = ("autoregressive", "autoregressive") if gamma == 0 else ("path", f"gamma={gamma}")
    return LoggedRun(label, kind, batch, rep, st.time_total, lt.take(), ld.take()), st


def _forwards(run: LoggedRun) -> tuple[float, float]:
    """Seconds of a run's forwards: (both models, the target's alone)."""
    t = float(run.target[:, 3].sum())
    return t + float(run.draft[:, 3].sum()), t


def _overhead(runs: list[LoggedRun]) -> float:
    """Median over repeats of the share of a run's time outside its forwards."""
    return float(np.median([r.outside / r.seconds for r in runs]))


def _priced(runs: list[LoggedRun], every: list[LoggedRun]) -> list[float]:
    """Held-out priced seconds of each run (:func:`~.cost_insitu.held_out_parts`): forwards and
    outside work, on the run's own calls and counts; ``[]`` where there is one repeat only."""
    from .cost_insitu import held_out_parts

    if len({r.repeat for r in every}) < 2:
        return []
    out = []
    for run in runs:
        parts = held_out_parts(run, every)
        out.append(parts["forward"][0] + parts["outside"][0])
    return out


def _cost_curve(calls: np.ndarray) -> dict[int, float]:
    """Median seconds of a cached target forward scoring ``m`` tokens, over that of ``m = 1``."""
    cached = calls[calls[:, 2] > 0]
    ms = sorted({int(m) for m in cached[:, 1]})
    med = {m: float(np.median(cached[cached[:, 1] == m, 3])) for m in ms}
    one = med.get(1)
    return {m: (v / one if one else float("nan")) for m, v in med.items()}

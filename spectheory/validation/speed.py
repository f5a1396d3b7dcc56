"""Measured walltime speedup of the real decoder against Leviathan et al.'s prediction."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..laws.closed_form import iid_speedup

if TYPE_CHECKING:
    import torch

    from ..decoder.batching import CausalLM

__all__ = ["measure_speed", "resolve_models"]


def measure_speed(
    target: CausalLM,
    draft: CausalLM,
    prompts: ArrayLike,
    horizon: int,
    gammas: Iterable[int],
    repeats: int = 3,
    seed: int = 0,
    device: str | torch.device | None = None,
) -> dict:
    r"""Measured walltime speedup of the decoder against the prediction, per gamma.

    Per repeat (runs interleaved so that machine load hits all alike): plain
    autoregressive decoding of ``horizon`` tokens with the target and with the draft (their
    per-token times ``t_target``, ``t_draft`` after prefill give ``c = t_draft / t_target``),
    then speculative decoding for each gamma. Every time is the minimum over repeats (the
    least-disturbed run on a shared machine; counts are medians).

    Reported per gamma: ``measured = time(autoregressive target) / time(speculative)``
    (whole calls, prefill included); ``alpha`` = accepted / checked drafts;
    ``predicted = iid_speedup(alpha, gamma, c)`` (Leviathan et al.);
    ``predicted_counts = T / (calls + c * draft_tokens)`` (the same cost model with the
    measured calls and draft steps, no i.i.d. assumption); their ratios; and where the time
    goes: ``target_call_cost`` = seconds per target call in the decoder / ``t_target``
    (above 1: scoring ``gamma + 1`` tokens costs more than one), ``draft_step_cost``
    = seconds per draft step / ``t_draft``, ``overhead_fraction`` = share of the decoder's
    time spent outside draft and target calls (verification, bookkeeping).

    Parameters
    ----------
    prompts : int array [B, L] (B = 1 measures latency; larger B, throughput)
    horizon : int, tokens to generate; gammas : iterable of int >= 1; repeats : int >= 1

    Returns
    -------
    dict with ``c``, ``t_target``, ``t_draft``, ``rows`` (one dict per gamma).
    """
    from ..decoder.rng import derive_seed
    from ..decoder.speculative import autoregressive_generate, speculative_generate

    T = check_int(horizon, "horizon", 1)
    repeats = check_int(repeats, "repeats", 1)
    prompts = [list(p) for p in np.asarray(prompts, dtype=np.int64)]
    gammas = [check_int(g, "gammas", 1) for g in gammas]
    runs: dict[str, list[float]] = {"ar_target": [], "ar_draft": [], "t_target": [], "t_draft": []}
    sd: dict[int, list[Any]] = {g: [] for g in gammas}
    # warm-up (allocations, first-call overheads)
    autoregressive_generate(target, prompts, min(T, 4), seed=seed, device=device)
    speculative_generate(target, draft, prompts, min(T, 4), 2, seed=seed, device=device)
    for rep in range(repeats):
        a = autoregressive_generate(target, prompts, T, seed=derive_seed(seed, rep), device=device).stats
        d = autoregressive_generate(draft, prompts, T, seed=derive_seed(seed, rep), device=device).stats
        runs["ar_target"].append(a.time_total)
        runs["t_target"].append((a.time_total - a.time_prefill) / T)
        runs["ar_draft"].append(d.time_total)
        runs["t_draft"].append((d.time_total - d.time_prefill) / T)
        for g in gammas:
            sd[g].append(
                speculative_generate(
                    target, draft, prompts, T, g, seed=derive_seed(seed, rep), device=device
                ).stats
            )
    med = {key: float(np.min(v)) for key, v in runs.items()}
    c = med["t_draft"] / med["t_target"]
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
        overhead = np.median(
            [(s.time_total - s.time_prefill - s.time_draft - s.time_target) / s.time_total for s in st]
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
                "ratio": measured / predicted,
                "ratio_counts": measured / predicted_counts,
                "target_call_cost": float(per_call / med["t_target"]),
                "draft_step_cost": float(per_step / med["t_draft"]),
                "overhead_fraction": float(overhead),
                # per repeat r: time(autoregressive target, r) / time(speculative, r), for the spread
                "measured_repeats": [float(a / s.time_total) for a, s in zip(runs["ar_target"], st)],
            }
        )
    return {
        "c": c,
        "t_target": med["t_target"],
        "t_draft": med["t_draft"],
        "time_autoregressive": med["ar_target"],
        "batch_size": len(prompts),
        "horizon": T,
        "repeats": repeats,
        "rows": rows,
    }


def resolve_models(
    target: str | None = None, drafts: str | Sequence[str] | None = None
) -> tuple[str, list[str]]:
    """Names of the target and drafts to validate: ``target`` defaults to ``"target"``;
    ``drafts`` (comma-separated string or list) to every other shipped model."""
    from ..decoder.registry import list_models

    names = list_models()
    target = target or "target"
    if target not in names:
        raise ValueError(f"target: model {target!r} is not shipped (available: {', '.join(names)})")
    if drafts is None or drafts == "":
        drafts = [n for n in names if n != target and n != "target"]
    elif isinstance(drafts, str):
        drafts = [d for d in drafts.split(",") if d]
    for d in drafts:
        if d not in names:
            raise ValueError(f"drafts: model {d!r} is not shipped (available: {', '.join(names)})")
    return target, list(drafts)

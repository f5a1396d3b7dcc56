"""The theory checked against the real decoder: one import for the validation toolkit.

- losslessness measured (:mod:`.theory_lossless`): :func:`exact_two_token_law`,
  :func:`lossless_check`, :data:`BROKEN_RULES`;
- Rao-Blackwellised predictions of rejections, calls, draft steps and accepted-count laws
  (:mod:`.theory_predict`): :func:`sample_paths`, :func:`path_statistics`,
  :func:`rb_predictions`, :func:`first_round_law`, :func:`measure_decoder`;
- the Markov abstraction (:mod:`.theory_markov`): :func:`fit_order_k_chain`,
  :func:`chain_predictions`;
- speed (here): :func:`measure_speed`, measured walltime speedup against Leviathan's
  prediction from the measured cost ratio ``c`` and acceptance ``alpha``.
"""
from __future__ import annotations

import numpy as np

from ..closed_form import walltime_speedup
from .._validation import check_int
from .theory_lossless import (BROKEN_RULES, decoder_two_token_samples, exact_two_token_law,  # noqa: F401
                              lossless_check, model_device, pooled_chisquare, substituted_rule)
from .theory_markov import chain_predictions, context_keys, fit_order_k_chain  # noqa: F401
from .theory_predict import (PathStatistics, compare_theory, first_round_law, mean_se, measure_decoder,  # noqa: F401
                             path_statistics, rb_predictions, repeat_prompts, round_dp,
                             sample_paths, zscore)

__all__ = ["BROKEN_RULES", "exact_two_token_law", "lossless_check", "pooled_chisquare",
           "substituted_rule", "decoder_two_token_samples", "model_device",
           "fit_order_k_chain", "chain_predictions", "context_keys",
           "PathStatistics", "path_statistics", "rb_predictions", "first_round_law",
           "measure_decoder", "compare_theory", "mean_se", "zscore", "repeat_prompts", "round_dp", "sample_paths",
           "measure_speed", "resolve_models", "write_result"]


def measure_speed(target, draft, prompts, horizon, gammas, repeats=3, seed=0, device=None):
    r"""Measured walltime speedup of the decoder against the prediction, per gamma.

    Per repeat (runs interleaved so that machine load hits all alike): plain
    autoregressive decoding of ``horizon`` tokens with the target and with the draft (their
    per-token times ``t_target``, ``t_draft`` after prefill give ``c = t_draft / t_target``),
    then speculative decoding for each gamma. Every time is the minimum over repeats (the
    least-disturbed run on a shared machine; counts are medians).

    Reported per gamma: ``measured = time(autoregressive target) / time(speculative)``
    (whole calls, prefill included); ``alpha`` = accepted / checked drafts;
    ``predicted = walltime_speedup(alpha, gamma, c)`` (Leviathan et al.);
    ``predicted_counts = T / (calls + c * draft_steps)`` (the same cost model with the
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
    from .speculative import autoregressive_generate, speculative_generate
    T = check_int(horizon, "horizon", 1)
    repeats = check_int(repeats, "repeats", 1)
    prompts = [list(p) for p in np.asarray(prompts, dtype=np.int64)]
    gammas = [check_int(g, "gammas", 1) for g in gammas]
    runs = {"ar_target": [], "ar_draft": [], "t_target": [], "t_draft": []}
    sd = {g: [] for g in gammas}
    # warm-up (allocations, first-call overheads)
    autoregressive_generate(target, prompts, min(T, 4), seed=seed, device=device)
    speculative_generate(target, draft, prompts, min(T, 4), 2, seed=seed, device=device)
    for rep in range(repeats):
        a = autoregressive_generate(target, prompts, T, seed=seed + rep, device=device).stats
        d = autoregressive_generate(draft, prompts, T, seed=seed + rep, device=device).stats
        runs["ar_target"].append(a.time_total)
        runs["t_target"].append((a.time_total - a.time_prefill) / T)
        runs["ar_draft"].append(d.time_total)
        runs["t_draft"].append((d.time_total - d.time_prefill) / T)
        for g in gammas:
            sd[g].append(speculative_generate(target, draft, prompts, T, g, seed=seed + rep, device=device).stats)
    med = {key: float(np.min(v)) for key, v in runs.items()}
    c = med["t_draft"] / med["t_target"]
    rows = []
    for g in gammas:
        st = sd[g]
        calls = np.median([s.target_calls.mean() for s in st])
        steps = np.median([s.draft_steps.mean() for s in st])
        acc = sum(int(s.position_accepted.sum()) for s in st)
        chk = sum(int(s.position_checked.sum()) for s in st)
        alpha = acc / chk if chk else float("nan")
        t_sd = float(np.min([s.time_total for s in st]))
        measured = med["ar_target"] / t_sd
        predicted = float(walltime_speedup(alpha, g, c))
        predicted_counts = T / (calls + c * steps)
        per_call = np.min([s.time_target / max(s.batch_target_calls, 1) for s in st])
        per_step = np.min([s.time_draft / max(s.batch_draft_calls, 1) for s in st])
        overhead = np.median([(s.time_total - s.time_prefill - s.time_draft - s.time_target) / s.time_total
                              for s in st])
        rows.append({"gamma": g, "alpha": alpha, "target_calls": float(calls), "draft_steps": float(steps),
                     "time_speculative": t_sd, "measured": measured, "predicted": predicted,
                     "predicted_counts": predicted_counts, "ratio": measured / predicted,
                     "ratio_counts": measured / predicted_counts,
                     "target_call_cost": float(per_call / med["t_target"]),
                     "draft_step_cost": float(per_step / med["t_draft"]),
                     "overhead_fraction": float(overhead)})
    return {"c": c, "t_target": med["t_target"], "t_draft": med["t_draft"],
            "time_autoregressive": med["ar_target"], "batch_size": len(prompts), "horizon": T,
            "repeats": repeats, "rows": rows}


def resolve_models(target=None, drafts=None):
    """Names of the target and drafts to validate: ``target`` defaults to ``"target"``;
    ``drafts`` (comma-separated string or list) to every other shipped model."""
    from .registry import list_models
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


def decoder_script_parser(doc: str, device="cpu", threads: int | None = 2):
    """:func:`spectheory.results.script_parser` plus the decoder scripts' model options:
    ``--target NAME``, ``--drafts a,b`` (default: every shipped draft), ``--device`` and
    ``--threads`` (torch CPU threads; omitted when ``threads`` is None)."""
    from ..results import script_parser
    ap = script_parser(doc)
    ap.add_argument("--target", default=None, help="target model (default: target)")
    ap.add_argument("--drafts", default=None, help="comma-separated draft models (default: all shipped)")
    ap.add_argument("--device", default=device, help=f"torch device (default: {device or 'cuda if available'})")
    if threads is not None:
        ap.add_argument("--threads", type=int, default=threads, help=f"torch CPU threads (default {threads})")
    return ap


def describe_device(device) -> str:
    """``"cuda:0 (NVIDIA ...)"`` or ``"cpu (x86_64, 2 threads)"``: where a result was measured."""
    import platform

    import torch
    dev = str(device)
    if dev.startswith("cuda") and torch.cuda.is_available():
        return f"{dev} ({torch.cuda.get_device_name(0)})"
    return f"{dev} ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def write_result(out_dir, name, data, headline, argv=None, device="cpu"):
    """Write ``out_dir/name.json`` with ``data``, the device, and the provenance and ``headline``
    rows of :func:`spectheory.results.write_results`; return the path.

    ``argv`` is the full command line (default ``sys.argv``; its first entry is the script).
    """
    import sys

    import torch

    from ..results import write_results
    argv = sys.argv if argv is None else argv
    return write_results(argv[0], {"device": describe_device(device), "torch": torch.__version__, **data},
                         out_dir, list(argv[1:]), headline, name=name)

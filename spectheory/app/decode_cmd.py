r"""``spectheory decode``: the real decoder on any model pair, next to the theory's prediction.

Models: ``--target`` and ``--draft`` take any name :func:`spectheory.decoder.load_model` takes
(the shipped byte-level models, ``smollm2-135m`` with the ``real`` extra, ``hf:PATH``);
prompts are text (``--prompt``, repeatable; ``--prompts FILE``; ``--chat``), see
:mod:`spectheory.app.model_args`. Each prompt is decoded on its own (batch 1) and the table
pools the runs.

The prediction is the along-path (Rao-Blackwellised) one of :mod:`spectheory.validation.predict`
(:mod:`spectheory.app.decode_predict`): target paths sampled from each prompt, both models'
exact laws along them, and the exact round recursion given the per-position rejection
probabilities :math:`r_n = \max(0, 1 - q(x_n)/p(x_n))`, giving the expected target calls,
rejections and draft tokens of the run (mean and standard error over the paths); a draft that
drafts fewer tokens where it has nothing to propose (``prompt-lookup``) is run with its draft
lengths along each path. The measured
column is one run, so it scatters around the prediction by the run's own spread.
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..decoder.generation_result import DecodeStats


def _settings(args: argparse.Namespace, draft: str, texts: list[str]) -> dict:
    return {
        "target": args.target,
        "draft": draft,
        "prompts": texts,
        "chat": bool(getattr(args, "chat", False)),
        "gamma": args.gamma,
        "horizon": args.tokens,
        "temperature": args.temperature,
        "seed": args.seed,
        "device": args.device,
        "dtype": getattr(args, "dtype", "float32"),
        "bonus": not args.no_bonus,
        "forward": getattr(args, "forward", "eager"),
        "paths": getattr(args, "paths", 16),
    }


def check_decode_request(args: argparse.Namespace) -> bool:
    """Refuse, before any model loads, what decode cannot run; whether it is tree decoding."""
    from .cli_args import check_device_available

    check_device_available(args.device)  # before the models load
    tree_mode = bool(getattr(args, "tree", None) or getattr(args, "medusa", False))
    if getattr(args, "verifier", None) and not tree_mode:
        raise ValueError(
            f"--verifier {args.verifier}: chooses a tree verifier, and needs --tree SHAPE (e.g. "
            "--tree 2x2x1 or path4) or --medusa; without them decode runs token verification"
        )
    forward = getattr(args, "forward", "eager")
    if forward != "eager" and getattr(args, "medusa", False):
        raise ValueError(
            f"--forward {forward}: the Medusa heads read the target's hidden states eagerly; use --forward eager"
        )
    return tree_mode


def _pooled(stats: list[DecodeStats]) -> dict:
    """Totals over the runs (one per prompt): counts and seconds add."""
    tot = [s.totals() for s in stats]
    keys = ("tokens", "target_calls", "draft_tokens", "rejections", "accepted", "checked")
    out: dict[str, Any] = {k: int(sum(t[k] for t in tot)) for k in keys}
    for k in ("time_prefill", "time_draft", "time_target", "time_total"):
        out[k] = float(sum(t[k] for t in tot))
    out["acceptance"] = out["accepted"] / out["checked"] if out["checked"] else float("nan")
    out["tokens_per_call"] = out["tokens"] / out["target_calls"] if out["target_calls"] else float("nan")
    return out


def run_decode(args: argparse.Namespace) -> int:
    """Run the decoder on each prompt; print the text, the measured statistics next to the
    along-path prediction, and the plain-target baseline (``--json``: the same as one object)."""
    if check_decode_request(args):  # tree decoding (issue 12)
        from .decode_tree import run_tree_decode

        return run_tree_decode(args)
    from ..decoder.compiled import with_forward
    from ..decoder.rng import row_seeds
    from ..decoder.speculative import autoregressive_generate, speculative_generate
    from .decode_predict import predict_run, predicted_time
    from .model_args import default_draft, encoded_prompts, load_models

    forward = getattr(args, "forward", "eager")
    draft_name = args.draft or default_draft(args.target)
    target, draft = load_models(args, draft_name)
    texts, prompts = encoded_prompts(args, target)
    fast_target = with_forward(target, forward)
    fast_draft = fast_target if draft is target else with_forward(draft, forward)
    bonus = not args.no_bonus
    sampling = dict(temperature=args.temperature, device=args.device)
    seeds = row_seeds(args.seed, len(prompts))  # prompt i's own seed, as row i of one batch
    autoregressive_generate(
        fast_target, [prompts[0]], min(args.tokens, 4), seed=seeds[:1], **sampling
    )  # warm-up
    runs, plain, plain_draft, predicted, seconds = [], [], [], [], []
    for prompt, seed in zip(prompts, seeds):
        res = speculative_generate(
            fast_target, fast_draft, [prompt], args.tokens, args.gamma, bonus=bonus, seed=[seed], **sampling
        )
        runs.append(res)
        plain.append(
            autoregressive_generate(fast_target, [prompt], args.tokens, seed=[seed], **sampling).stats
        )
        if draft is not target:
            plain_draft.append(
                autoregressive_generate(fast_draft, [prompt], args.tokens, seed=[seed], **sampling).stats
            )
        pred = predict_run(
            target,
            draft,
            prompt,
            args.tokens,
            args.gamma,
            bonus,
            args.temperature,
            args.paths,
            seed,
            args.device,
        )
        predicted.append(pred)
        seconds.append(predicted_time(pred, res.stats))
    report = _report(args, draft_name, texts, prompts, target, runs, plain, plain_draft, predicted, seconds)
    if args.json:
        print(json.dumps(report, indent=1))
        return 0
    _print_report(args, report)
    return 0


def _report(
    args: argparse.Namespace,
    draft_name: str,
    texts: list[str],
    prompts: list[list[int]],
    target: Any,
    runs: list,
    plain: list,
    plain_draft: list,
    predicted: list[dict],
    seconds: list[tuple[float, float]],
) -> dict:
    """Everything ``decode`` prints, as one JSON-serialisable dict."""
    from .decode_predict import pool
    from .model_args import decode_ids

    measured = _pooled([r.stats for r in runs])
    pred: dict[str, Any] = pool(predicted)
    calls, calls_se = pred["target_calls"]
    tokens = args.tokens * len(prompts)
    pred["tokens_per_call"] = (tokens / calls, tokens * calls_se / calls**2)
    for key in ("acceptance", "acceptance_checked"):  # the prompts' mean
        pred[key] = tuple(float(np.mean(v)) for v in zip(*(p[key] for p in predicted)))
    pred["time_total"] = (sum(m for m, _ in seconds), float(np.hypot.reduce([s for _, s in seconds])))
    base = float(sum(s.time_total for s in plain))
    spec = measured["time_total"]
    baseline = {
        "time_total": base,
        "tokens_per_second": tokens / base,
        "speedup_measured": base / spec,
        "speedup_predicted": base / pred["time_total"][0],
        "draft_time_total": float(sum(s.time_total for s in plain_draft)) if plain_draft else None,
    }
    eos = getattr(getattr(target, "tokenizer", None), "eos_token_id", None)
    per_prompt = []
    for text, prompt, res in zip(texts, prompts, runs):
        new = res.tokens[0].tolist()
        shown = new[: new.index(eos) + 1] if eos is not None and eos in new else new
        per_prompt.append(
            {
                "prompt": text,
                "prompt_tokens": len(prompt),
                "context": decode_ids(target, prompt),  # the prompt as the model saw it (--chat)
                "text": decode_ids(target, shown),  # up to an end-of-text token
                "tokens_after_eos": len(new) - len(shown),
                "new_tokens": new,
                "round_accepted": res.stats.round_accepted[0].tolist(),
            }
        )
    hist = np.sum([r.stats.accepted_counts[0] for r in runs], axis=0)
    return {
        "settings": _settings(args, draft_name, texts),
        "texts": [r["text"] for r in per_prompt],
        "runs": per_prompt,
        "measured": measured,
        "accepted_counts": hist.tolist(),
        "predicted": {k: {"mean": v[0], "se": v[1]} for k, v in pred.items()},
        "baseline": baseline,
    }


def _print_report(args: argparse.Namespace, report: dict) -> None:
    """The terminal report: the texts, then measured against predicted."""
    s, m, p, b = report["settings"], report["measured"], report["predicted"], report["baseline"]
    print(
        f"{s['target']} + {s['draft']}, gamma = {s['gamma']}, {s['horizon']} tokens per prompt, "
        f"bonus = {s['bonus']}, temperature = {s['temperature']}, seed = {s['seed']}, "
        f"device = {s['device']}, dtype = {s['dtype']}" + (", chat template" if s["chat"] else "")
    )
    for run in report["runs"]:
        print("-" * 72)
        after = run["tokens_after_eos"]
        shown = f"[chat template] user: {run['prompt']}\n" if s["chat"] else run["context"]
        print(shown + run["text"] + (f"  [+{after} tokens after end-of-text, not shown]" if after else ""))
    print("-" * 72)
    n = len(report["runs"])
    print(
        f"{'':30s} {'measured':>10s} {'predicted':>16s}  (along {s['paths']} target paths per prompt; "
        f"{n} run{'s' if n > 1 else ''} of {s['horizon']} tokens)"
    )

    def row(name: str, measured: str, key: str, fmt: str, note: str = "") -> None:
        mean, se = p[key]["mean"], p[key]["se"]
        print(f"{name:30s} {measured:>10s} {mean:{fmt}} +- {se:<{fmt}}{note}")

    row("acceptance per checked token", f"{m['acceptance']:.3f}", "acceptance_checked", "7.3f")
    row("sum min(p, q) = 1 - TV", "", "acceptance", "7.3f", "  (mean over every position of the paths)")
    row("tokens per target call", f"{m['tokens_per_call']:.3f}", "tokens_per_call", "7.3f")
    row("target calls", f"{m['target_calls']:d}", "target_calls", "7.2f")
    row("rejections", f"{m['rejections']:d}", "rejections", "7.2f")
    row("draft tokens", f"{m['draft_tokens']:d}", "draft_tokens", "7.2f")
    row(
        "wall time, speculative (s)",
        f"{m['time_total']:.3f}",
        "time_total",
        "7.3f",
        "  (predicted counts at this run's seconds per call)",
    )
    print(f"{'wall time, target alone (s)':30s} {b['time_total']:10.3f}  (plain autoregressive baseline)")
    print(
        f"{'speedup':30s} {b['speedup_measured']:10.2f} {b['speedup_predicted']:7.2f}  "
        "(one short run: timings are noisy)"
    )
    hist = report["accepted_counts"]
    print(
        f"rounds by accepted drafts (j = 0..{s['gamma']}): "
        + ", ".join(f"j={j}: {c}" for j, c in enumerate(hist))
    )

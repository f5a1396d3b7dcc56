"""Predicted vs measured throughput of the real decoder at every batch size (issue 21, item 3).

In ONE process: (1) sample target paths once (spectheory.tuning.cost_predict); (2) run the
decoder, per repeat, at every batch size and configuration (autoregressive baseline, gamma in
{1, 2, 4, 8}, two trees, one adaptive policy; row b of a batch has prompt b mod 16 and the
predictions are for those rows), with every forward of both models logged (its shape and
seconds: spectheory.cost.timed.ForwardLog); measured tokens/s = B T / wall time of the call
(prefill included); (3) predict each run from the OTHER runs (spectheory.tuning.cost_insitu):
the forwards fitted on the calls of the other configurations of the same repeat at that batch
size, the work outside the forwards on every other run at that batch size, times the
Rao-Blackwellised rounds law of the configuration. A timing made minutes earlier would not do:
on a shared machine the same forward's speed drifts by tens of percent within seconds.
Reported per configuration: measured median and spread (min, max) over repeats, the median
prediction, predicted/measured, the median of the paired per-run ratios, and the constant-c
prediction beside (Leviathan's speedup T/E[calls] / (1 + c draft calls per round) with
c = t_draft / t_target at batch 1, times the measured autoregressive throughput at that batch).
Per batch size: whether the configuration predicted fastest is, measured, within noise (two
standard errors of the difference of medians) of the fastest measured. Goal: every prediction
within 10% of the measured median.

Usage: python benchmarks/cost_validation.py [--quick] [--out DIR] [--target NAME] [--drafts NAME]
       [--device cpu] [--threads N] [--repeats R]
Full CPU run (B in 1, 4, 16, 64, 256; 20 repeats at B <= 4, R = 5 from B = 16): about 15 minutes
on one core.
"""

from __future__ import annotations

import math
import os
import time

import numpy as np
import torch

from spectheory._progress import progress_bar
from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.tuning.cost_insitu import (
    OUTSIDE_TERMS,
    fit_logged_forward,
    fit_outside,
    held_out_parts,
    held_out_timing,
    measure_logged,
)
from spectheory.tuning.cost_predict import predict_time, sample_target_paths
from spectheory.tuning.tune_runs import config_label, default_configs, median_se, top_within_noise

TOLERANCE = 0.10
PROMPT_LEN = 32
N_PROMPTS = 16  # the batch's rows cycle through them; the predictions use the batch's own prompts


def grid(args):
    """(batches, gammas, trees, horizon, n_paths, repeats) of the run."""
    if args.quick:
        return args.batches or [1, 4], [1, 4], [(2, 1)], 16, 32, 2
    batches = args.batches or [1, 4, 16, 64, 256]
    return batches, [1, 2, 4, 8], [(2, 1, 1), (2, 2, 1)], 64, 512, args.repeats


def repeats_at(batch, repeats):
    """Repeats at a batch size: small batches run fast and noisy, so up to 4x more of them."""
    return max(repeats, min(4 * repeats, math.ceil(16 * repeats / batch)))


def measure(target, draft, prompts, T, rounds, batches, repeats, device):
    """Every (repeat, batch, configuration) run, interleaved; returns [(rnd, LoggedRun, stats)]."""
    out = []
    plan = [(rep, B) for B in batches for rep in range(repeats_at(B, repeats))]
    plan.sort()  # repeat-major, so that a burst of load hits every batch size alike
    weight = {B: B + 8 for B in batches}  # a run's time grows with its batch: the bar counts that
    bar = progress_bar(sum(weight[B] for _, B in plan) * len(rounds), "cost validation runs (rows)")
    for rep, B in plan:
        for r in rounds:
            bar.update(weight[B])
            if rep == 0:
                measure_logged(target, draft, prompts, min(T, 4), r, B, device=device)  # warm-up
            run, stats = measure_logged(
                target, draft, prompts, T, r, B, rep, seed=1000 * rep + 1, device=device
            )
            out.append((r, run, stats))
    bar.close()
    return out


def constant_c(runs, context):
    """Leviathan's c = t_draft / t_target of one-token calls at the smallest batch (all its runs)."""
    B = min(run.batch for _, run, _ in runs)
    logs = [run for _, run, _ in runs if run.batch == B]
    target = fit_logged_forward(np.concatenate([r.target for r in logs]), B)
    draft = fit_logged_forward(np.concatenate([r.draft for r in logs if len(r.draft)]), B)
    return draft(B, 1, context) / target(B, 1, context)


def top_vs_best(rows, batch):
    """Is the configuration predicted fastest at ``batch`` within noise of the fastest measured?"""
    at = [r for r in rows if r["batch"] == batch]
    top = max(at, key=lambda r: r["predicted"])["config"]
    return {"batch": batch, "top_predicted": top, **top_within_noise(at, top)}


def validate(target, draft, args, device):
    """Sample, measure (logged), predict held out; return the JSON-ready data and the headline rows."""
    from spectheory.stopping import ConfidenceThreshold

    batches, gammas, trees, T, n_paths, repeats = grid(args)
    configs = default_configs(gammas, trees, [ConfidenceThreshold(0.4, max_depth=8 if not args.quick else 4)])
    prompts = heldout_windows(N_PROMPTS if not args.quick else 4, PROMPT_LEN)  # rows cycle through them
    rng = np.random.default_rng(args.seed)
    load = {"before_sample": os.getloadavg()[0]}  # a shared machine's load moves timings: recorded
    t0 = time.perf_counter()
    sample = sample_target_paths(
        target, draft, prompts, T, n_paths, rng=rng, device=device, policy_depth=8 if not args.quick else 4
    )
    t_sample = time.perf_counter() - t0
    load["after_sample"] = os.getloadavg()[0]
    rounds = [None, *configs]
    runs = measure(target, draft, prompts, T, rounds, batches, repeats, device)
    load["after_measure"] = os.getloadavg()[0]
    logged = [run for _, run, _ in runs]
    seed = int(rng.integers(2**31 - 1))  # the rounds law's bootstrap: the same for every repeat
    timings = {id(run): held_out_timing(run, logged) for _, run, _ in runs}  # one fit per run, used twice
    preds = {id(run): predict_time(sample, r, timings[id(run)], run.batch, rng=seed) for r, run, _ in runs}
    parts = {id(run): held_out_parts(run, logged, timings[id(run)]) for _, run, _ in runs}
    c = constant_c(runs, PROMPT_LEN + T / 2)
    rows = []
    for B in batches:
        for r in rounds:
            label = config_label(r)
            mine = [(run, st) for rr, run, st in runs if run.batch == B and run.config == label]
            m = np.array([st["throughput"] for _, st in mine])
            p = np.array([preds[id(run)]["throughput"] for run, _ in mine])
            med, pmed = float(np.median(m)), float(np.median(p))
            ps = [preds[id(run)] for run, _ in mine]
            pick = ps[int(np.argsort(p)[len(p) // 2])]  # the median run's prediction
            ar = float(
                np.median([st["throughput"] for _, run, st in runs if run.batch == B and run.autoregressive])
            )
            const_c = ar * pick["tokens_per_call"] / (1 + c * pick["draft_calls"]) if r is not None else ar
            rows.append(
                {
                    "batch": B,
                    "config": label,
                    "predicted": pmed,
                    "predicted_se": pick["throughput_se"],
                    "predicted_min": float(p.min()),
                    "predicted_max": float(p.max()),
                    "measured": med,
                    "measured_se": median_se(m),
                    "measured_min": float(m.min()),
                    "measured_max": float(m.max()),
                    "measured_repeats": m.tolist(),
                    "predicted_repeats": p.tolist(),
                    "measured_rounds": float(np.mean([st["rounds"] for _, st in mine])),
                    "measured_draft_calls": float(np.mean([st["draft_calls"] for _, st in mine])),
                    "outside_fraction": float(np.median([run.outside / run.seconds for run, _ in mine])),
                    # the held-out fits priced on the runs' own calls (no rounds law): where errors come from
                    "forward_ratio": float(
                        np.median([np.divide(*parts[id(run)]["forward"]) for run, _ in mine])
                    ),
                    "outside_ratio": float(
                        np.median([np.divide(*parts[id(run)]["outside"]) for run, _ in mine])
                    ),
                    "ratio": pmed / med,
                    "paired_ratio": float(np.median(p / m)),
                    "constant_c": const_c,
                    "ratio_constant_c": const_c / med,
                    "prediction": pick,
                }
            )
    fits = {}
    for B in batches:
        at = [run for run in logged if run.batch == B]
        fits[str(B)] = {
            "target": fit_logged_forward(np.concatenate([x.target for x in at]), B).describe(),
            "outside": dict(zip(OUTSIDE_TERMS, map(float, fit_outside(at)))),
        }
    drift = {}  # the same calls' speed over the run: AR's one-token target calls, per repeat
    for B in batches:
        means = [
            run.target[run.target[:, 2] > 0, 3].mean()
            for run in logged
            if run.batch == B and run.autoregressive
        ]
        drift[str(B)] = float(max(means) / min(means))
    data = {
        "quick": bool(args.quick),
        "target": args.target or "target",
        "draft": args.drafts or "draft-small",
        "horizon": T,
        "prompt_len": PROMPT_LEN,
        "batches": batches,
        "gammas": gammas,
        "trees": [list(t) for t in trees],
        "n_paths": n_paths,
        "n_prompts": len(prompts),
        "repeats": {str(B): repeats_at(B, repeats) for B in batches},
        "c": c,
        "seconds_sample": t_sample,
        "load_average": load,
        "cost": {
            "method": "in-situ forward logs, held out by configuration (cost_insitu)",
            "fits_all_runs": fits,
        },
        "drift": drift,
        "rows": rows,
        "top_vs_best": [top_vs_best(rows, B) for B in batches],
    }
    ratios = np.array([r["ratio"] for r in rows])
    within = np.abs(ratios - 1) <= TOLERANCE
    cratios = np.array([r["ratio_constant_c"] for r in rows if r["config"] != "autoregressive"])
    tops = data["top_vs_best"]
    headline = [
        {
            "name": f"cost validation: predictions within {TOLERANCE:.0%} of the measured median",
            "value": int(within.sum()),
            "note": f"of {len(rows)} (batch, configuration) pairs on {device}",
        },
        {
            "name": "cost validation: predicted/measured throughput, worst",
            "value": float(ratios[np.argmax(np.abs(ratios - 1))]),
            "note": f"range {ratios.min():.3f}..{ratios.max():.3f}",
        },
        {
            "name": "cost validation: constant-c predicted/measured, worst",
            "value": float(cratios[np.argmax(np.abs(cratios - 1))]),
            "note": f"range {cratios.min():.3f}..{cratios.max():.3f} (Leviathan, c at batch 1)",
        },
        {
            "name": "cost validation: batch sizes where the top-predicted configuration is within noise of the best",
            "value": int(sum(t["within_noise"] for t in tops)),
            "note": f"of {len(tops)}",
        },
    ]
    return data, headline


def print_rows(data):
    print(
        f"\nT = {data['horizon']} new tokens after {data['prompt_len']}-byte prompts, c(batch 1) = {data['c']:.3f}"
    )
    print(
        f"{'batch':>5s}  {'configuration':38s} {'predicted':>10s} {'measured':>10s} {'spread':>15s} "
        f"{'ratio':>6s} {'paired':>6s} {'const-c':>8s} {'rounds pred/meas':>17s} {'fwd':>6s} {'outside':>7s}"
    )
    for r in data["rows"]:
        flag = "" if abs(r["ratio"] - 1) <= TOLERANCE else "  *"
        spread = f"{r['measured_min']:.0f}..{r['measured_max']:.0f}"
        rounds = f"{r['prediction']['rounds']:.1f}/{r['measured_rounds']:.1f}"
        print(
            f"{r['batch']:5d}  {r['config']:38s} {r['predicted']:10.1f} {r['measured']:10.1f} {spread:>15s} "
            f"{r['ratio']:6.3f} {r['paired_ratio']:6.3f} {r['ratio_constant_c']:8.3f} {rounds:>17s} "
            f"{r['forward_ratio']:6.3f} {r['outside_ratio']:7.3f}{flag}"
        )
    drift = ", ".join(f"B={b}: {x:.2f}" for b, x in data["drift"].items())
    print(f"drift (slowest/fastest repeat of the same one-token target calls): {drift}")
    for t in data["top_vs_best"]:
        verdict = "within noise" if t["within_noise"] else "NOT within noise"
        print(
            f"batch {t['batch']}: top predicted {t['top_predicted']}, best measured {t['best_measured']}: "
            f"gap {t['gap']:.1f} tok/s, noise {t['noise']:.1f} ({verdict})"
        )


def parser(doc):
    ap = decoder_script_parser(doc, threads=1)
    ap.add_argument("--repeats", type=int, default=5, help="decoder runs per configuration (default 5)")
    ap.add_argument("--seed", type=int, default=0, help="seed of the path sample and fits (default 0)")
    ap.add_argument(
        "--batches",
        type=lambda s: [int(x) for x in s.split(",")],
        default=None,
        help="comma-separated batch sizes (default: 1,4,16,64,256)",
    )
    return ap


def run(args, name="cost_validation"):
    torch.set_num_threads(args.threads)
    target = load_model(args.target or "target", device=args.device)
    draft = load_model(args.drafts or "draft-small", device=args.device)
    data, headline = validate(target, draft, args, args.device)
    print_rows(data)
    for h in headline:
        print(f"{h['name']}: {h['value']} ({h.get('note', '')})")
    path = write_result(args.out, name, data, headline, device=args.device)
    print("wrote", path)
    return data


if __name__ == "__main__":
    run(parser(__doc__).parse_args())

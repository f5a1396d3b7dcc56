"""Predicted vs measured throughput of the real decoder at every batch size (issue 21, item 3).

In ONE process, on the same machine load, in this order: (1) fit the forward cost of the target
and the draft on the device over the batch sizes and token counts used below and measure the
decoder's per-round overheads at the smallest and largest batch (spectheory.validation.tuning.fit_timing);
(2) sample target paths once and predict, for every configuration and batch size, the batch
throughput (Rao-Blackwellised rounds law x the cost model, spectheory.validation.cost_predict);
(3) run the decoder: per repeat, every batch size and configuration (autoregressive baseline,
gamma in {1, 2, 4, 8}, two trees, one adaptive policy; row b of a batch has prompt b mod 16
and the predictions are for those rows), measured tokens/s = B T / wall time of the call
(prefill included). Reported per configuration: the median and spread (min, max)
over repeats, predicted/measured, and the constant-c prediction beside (Leviathan's speedup
T/E[calls] / (1 + c draft calls per round) from c = t_draft / t_target at batch 1, times the
measured autoregressive throughput at that batch). Goal: every prediction within 10% of the
measured median.

Usage: python benchmarks/cost_validation.py [--quick] [--out DIR] [--target NAME] [--drafts NAME]
       [--device cpu] [--threads N] [--repeats R]
Full CPU run (B in 1, 4, 16, 64, 256, 5 repeats): about 20 minutes on one idle core.
"""

from __future__ import annotations

import os
import time

import numpy as np
import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.validation.cost_predict import predict_time, sample_target_paths
from spectheory.validation.tuning import config_label, default_configs, fit_timing, measure_run

TOLERANCE = 0.10
PROMPT_LEN = 32
N_PROMPTS = 16  # the batch's rows cycle through them; the predictions use the batch's own prompts


def grid(args):
    """(batches, gammas, trees, horizon, n_paths, repeats) of the run."""
    if args.quick:
        return args.batches or [1, 4], [1, 4], [(2, 1)], 16, 32, 2
    batches = args.batches or [1, 4, 16, 64, 256]
    return batches, [1, 2, 4, 8], [(2, 1, 1), (2, 2, 1)], 64, 512, args.repeats


def validate(target, draft, args, device):
    """Fit, predict, measure; return the JSON-ready data and the headline rows."""
    from spectheory.stopping import ConfidenceThreshold

    batches, gammas, trees, T, n_paths, repeats = grid(args)
    configs = default_configs(gammas, trees, [ConfidenceThreshold(0.4, max_depth=8 if not args.quick else 4)])
    prompts = heldout_windows(N_PROMPTS if not args.quick else 4, PROMPT_LEN)  # rows cycle through them
    rng = np.random.default_rng(args.seed)
    load = {"before_fit": os.getloadavg()[0]}  # a shared machine's load moves timings: recorded
    t0 = time.perf_counter()
    timing, record = fit_timing(target, draft, prompts, T, configs, batches, device, repeats=5, rng=rng)
    sample = sample_target_paths(
        target, draft, prompts, T, n_paths, rng=rng, device=device, policy_depth=8 if not args.quick else 4
    )
    t_fit = time.perf_counter() - t0
    load["after_fit"] = os.getloadavg()[0]
    c = timing.draft(1, 1, PROMPT_LEN + T / 2) / timing.target(1, 1, PROMPT_LEN + T / 2)
    rounds = [None, *configs]
    pred = {
        (B, config_label(r)): predict_time(sample, r, timing, B, rng=rng) for B in batches for r in rounds
    }
    meas: dict = {key: [] for key in pred}
    for rep in range(repeats):  # interleaved, so that machine load hits every configuration alike
        for B in batches:
            for r in rounds:
                if rep == 0:
                    measure_run(target, draft, prompts, min(T, 4), r, B, device=device)  # warm-up
                meas[(B, config_label(r))].append(
                    measure_run(target, draft, prompts, T, r, B, seed=1000 * rep + 1, device=device)
                )
    load["after_measure"] = os.getloadavg()[0]
    rows = []
    for (B, label), p in pred.items():
        runs = meas[(B, label)]
        m = np.array([x["throughput"] for x in runs])
        med = float(np.median(m))
        ar = float(np.median([x["throughput"] for x in meas[(B, "autoregressive")]]))
        const_c = ar * p["tokens_per_call"] / (1 + c * p["draft_calls"]) if label != "autoregressive" else ar
        rows.append(
            {
                "batch": B,
                "config": label,
                "predicted": p["throughput"],
                "predicted_se": p["throughput_se"],
                "measured": med,
                "measured_min": float(m.min()),
                "measured_max": float(m.max()),
                "measured_repeats": m.tolist(),
                "measured_rounds": float(np.mean([x["rounds"] for x in runs])),
                "measured_draft_calls": float(np.mean([x["draft_calls"] for x in runs])),
                "ratio": p["throughput"] / med,
                "constant_c": const_c,
                "ratio_constant_c": const_c / med,
                "prediction": p,
            }
        )
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
        "repeats": repeats,
        "c": c,
        "seconds_fit_and_predict": t_fit,
        "load_average": load,
        "cost": record,
        "rows": rows,
    }
    ratios = np.array([r["ratio"] for r in rows])
    within = np.abs(ratios - 1) <= TOLERANCE
    cratios = np.array([r["ratio_constant_c"] for r in rows if r["config"] != "autoregressive"])
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
    ]
    return data, headline


def print_rows(data):
    print(
        f"\nT = {data['horizon']} new tokens after {data['prompt_len']}-byte prompts, c(batch 1) = {data['c']:.3f}"
    )
    print(
        f"{'batch':>5s}  {'configuration':34s} {'predicted':>10s} {'measured':>10s} {'spread':>15s} {'ratio':>6s} {'const-c':>8s}"
    )
    for r in data["rows"]:
        flag = "" if abs(r["ratio"] - 1) <= TOLERANCE else "  *"
        spread = f"{r['measured_min']:.0f}..{r['measured_max']:.0f}"
        rounds = f"{r['prediction']['rounds']:.1f}/{r['measured_rounds']:.1f}"
        print(
            f"{r['batch']:5d}  {r['config']:38s} {r['predicted']:10.1f} {r['measured']:10.1f} {spread:>15s} "
            f"{r['ratio']:6.3f} {r['ratio_constant_c']:8.3f} {rounds:>17s}{flag}"
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

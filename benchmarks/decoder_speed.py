"""Measured walltime speedup of the real decoder against the prediction and the floor (issues 4, 22).

For each draft model and gamma = 1..8, batch size 1 on CPU: the measured speedup
time(autoregressive target) / time(speculative) against Leviathan's prediction
iid_speedup(alpha, gamma, c) from the measured cost ratio c = t_draft / t_target (per-token
times of plain decoding) and the measured acceptance alpha; the ratio measured/predicted
should be >= 0.8. Times are minima over 5 interleaved repeats (shared machine).

The floor (issue 22; docs/decoder_floor.md): one more run per configuration logs every forward
of both models, and the floor is the time of those forwards alone. Shown per gamma: the round's
overhead (share of the decoder's time outside the two models; goal <= 15% at batch 1), the
ceiling (the speedup of a round without overhead: forwards of autoregressive decoding over
forwards of speculative decoding) and the ceiling with a free draft (target forwards only).
The target's cost curve t(m) / t(1) (a cached forward scoring m tokens against one) is
measured for the shipped target and for a GPT of GPT-2 small's shape with RANDOM weights
(``timing_model``: timing only, its text is noise), which is what bounds the speedup here.

The benchmark required by issue 4 ("prints these as ratios"); writes decoder_speed.json.

Usage: python benchmarks/decoder_speed.py [--quick] [--out DIR] [--target NAME] [--drafts a,b] [--threads N]
       [--repeats R]
"""

from __future__ import annotations

import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.cost.measure import cost_curve
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.decoder.registry import timing_model
from spectheory.validation import measure_speed, resolve_models

RATIO_MIN = 0.8
OVERHEAD_MAX = 0.15  # issue 22: the round's overhead at batch 1
SPEEDUP_GOAL = 2.0  # issue 22: measured speedup at batch 1 with a shipped draft
CONTEXT = 64  # cached positions of the cost-curve forwards


def curve_at(model, tokens, device, repeats):
    """t(m) / t(1) at batch 1 (median over ``repeats`` cached forwards after CONTEXT positions)."""
    c = cost_curve(model, tokens, CONTEXT, device, repeats)
    return {"seconds_one": c["seconds"][1], "ratio": c["ratio"]}


def print_rows(r):
    print(
        f"{'gamma':>5s} {'alpha':>6s} {'measured':>9s} {'predicted':>9s} {'ratio':>6s} {'call cost':>9s} "
        f"{'overhead':>8s} {'ceiling':>7s} {'free draft':>10s}"
    )
    for row in r["rows"]:
        flag = "" if row["ratio"] >= RATIO_MIN else "  < 0.8"
        print(
            f"{row['gamma']:5d} {row['alpha']:6.3f} {row['measured']:9.3f} {row['predicted']:9.3f} "
            f"{row['ratio']:6.2f} {row['target_call_cost']:9.2f} {100 * row['overhead_fraction']:7.1f}% "
            f"{row['ceiling']:7.2f} {row['ceiling_free_draft']:10.2f}{flag}"
        )


def headline_rows(dname, r, batch):
    best = max(r["rows"], key=lambda x: x["measured"])
    return [
        {
            "name": f"speed {dname}: best measured speedup (CPU, batch {batch})",
            "value": best["measured"],
            "note": f"gamma={best['gamma']}, predicted {best['predicted']:.2f}, c={r['c']:.3f}; "
            f"goal {SPEEDUP_GOAL:g}: {'met' if best['measured'] >= SPEEDUP_GOAL else 'not met'}, "
            f"ceiling without overhead {best['ceiling']:.2f}, with a free draft {best['ceiling_free_draft']:.2f}",
        },
        {
            "name": f"speed {dname}: min measured/predicted over gamma",
            "value": min(x["ratio"] for x in r["rows"]),
            "note": f"must be >= {RATIO_MIN}; median call cost "
            f"{sorted(x['target_call_cost'] for x in r['rows'])[len(r['rows']) // 2]:.2f} x one-token step",
        },
        {
            "name": f"speed {dname}: round overhead beyond the forwards (batch {batch})",
            "value": best["overhead_fraction"],
            "note": f"at the best gamma={best['gamma']}; max over gamma "
            f"{max(x['overhead_fraction'] for x in r['rows']):.3f}; goal <= {OVERHEAD_MAX:g}",
        },
    ]


def run(args, name="decoder_speed"):
    torch.set_num_threads(args.threads)
    target_name, drafts = resolve_models(args.target, args.drafts)
    T = 32 if args.quick else 200
    gammas = [1, 4] if args.quick else list(range(1, 9))
    repeats = args.repeats or (1 if args.quick else 5)
    prompts = heldout_windows(args.batch, 32)
    target = load_model(target_name, device=args.device)
    results, headline = {}, []
    for dname in drafts:
        r = measure_speed(
            target,
            load_model(dname, device=args.device),
            prompts,
            T,
            gammas,
            repeats=repeats,
            device=args.device,
        )
        results[dname] = r
        print(
            f"\n== target={target_name} draft={dname}: batch {args.batch}, T={T}, c = {r['c']:.3f} "
            f"(t_target {1e3 * r['t_target']:.2f} ms, t_draft {1e3 * r['t_draft']:.2f} ms per token); "
            f"autoregressive overhead {100 * r['autoregressive_overhead_fraction']:.1f}%"
        )
        print_rows(r)
        headline += headline_rows(dname, r, args.batch)
    ratios = [row["ratio"] for r in results.values() for row in r["rows"]]
    print(
        f"\nmeasured/predicted: min {min(ratios):.2f}, max {max(ratios):.2f}; "
        f"{sum(x < RATIO_MIN for x in ratios)} of {len(ratios)} below {RATIO_MIN}"
    )
    tokens = [1, 2, 3, 5, 9] if not args.quick else [1, 3]
    curve_reps = 3 if args.quick else 7
    curves = {target_name: curve_at(target, tokens, args.device, curve_reps)}
    big = "gpt-12x768 (timing only, random weights)"
    curves[big] = curve_at(timing_model("gpt-12x768", device=args.device), tokens, args.device, curve_reps)
    print(f"\ntarget cost curve t(m)/t(1) at batch 1 (context {CONTEXT}):")
    for label, c in curves.items():
        ratio = "  ".join(f"m={m}: {v:.2f}" for m, v in c["ratio"].items())
        print(f"  {label:42s} t(1) = {1e3 * c['seconds_one']:7.2f} ms   {ratio}")
    m_top = tokens[-1]
    headline.append(
        {
            "name": f"speed: target forward scoring {m_top} tokens / one token (CPU, batch 1)",
            "value": curves[target_name]["ratio"][m_top],
            "note": f"{target_name}; a GPT of shape 12x768 (timing only, random weights): "
            f"{curves[big]['ratio'][m_top]:.2f}. Above 1: verification is not free, which bounds the speedup",
        }
    )
    path = write_result(
        args.out,
        name,
        {
            "target": target_name,
            "drafts": drafts,
            "horizon": T,
            "batch": args.batch,
            "results": results,
            "cost_curves": curves,
            "goals": {"overhead_max": OVERHEAD_MAX, "speedup": SPEEDUP_GOAL},
        },
        headline,
        device=args.device,
    )
    print("wrote", path)
    return results


def parser(doc):
    ap = decoder_script_parser(doc, threads=1)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument(
        "--repeats", type=int, default=None, help="interleaved repeats, times are minima (default 5; 1 quick)"
    )
    return ap


if __name__ == "__main__":
    run(parser(__doc__).parse_args())

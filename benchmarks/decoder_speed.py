"""Measured walltime speedup of the real decoder against the prediction and the floor (issues 4, 22).

For each draft model and gamma = 1..8, batch size 1 on CPU: the measured speedup
time(autoregressive target) / time(speculative) against two predictions. The measured cost
model (issue 22's goal: within 10%): each speculative run priced held out, its forwards by the
logged calls of the other configurations of its repeat and its work outside the forwards by
every other run, on its own counts (spectheory.tuning.cost_insitu; the same prediction with
the exact rounds law instead of the counts is benchmarks/cost_validation.py). Leviathan's
constant-c prediction iid_speedup(alpha, gamma, c) from c = t_draft / t_target (per-token times
of plain decoding) and the measured acceptance alpha, for reference (issue 4 asked for >= 0.8 of
it): it prices a target call scoring gamma + 1 tokens like one token and a round as free, so it
overpredicts where either is not. Times are minima over 5 interleaved repeats (shared machine).

The floor (issue 22; docs/decoder_floor.md): every timed run logs every forward of both
models, and the floor is the time of those forwards alone. Shown per gamma (medians over
repeats): the round's overhead (share of the decoder's time outside the two models; goal
<= 15% at batch 1), the ceiling (the speedup of a round without overhead: forwards of
autoregressive decoding over forwards of speculative decoding) and the ceiling with a free
draft (target forwards only). The target's cost curve t(m) / t(1) (a cached forward scoring m
tokens against one) is measured for the shipped target and for a GPT of GPT-2 small's shape
with RANDOM weights (``timing_model``: timing only, its text is noise), which is what bounds
the speedup here.

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
from spectheory.tuning import measure_speed
from spectheory.validation import resolve_models

RATIO_MIN = 0.8  # issue 4: measured / Leviathan's constant-c prediction (reference only)
TOLERANCE = 0.10  # issue 22: measured within 10% of the measured cost model's prediction
OVERHEAD_MAX = 0.15  # issue 22: the round's overhead at batch 1
SPEEDUP_GOAL = 2.0  # issue 22: measured speedup at batch 1 with a shipped draft
CONTEXT = 64  # cached positions of the cost-curve forwards


def curve_at(model, tokens, device, repeats):
    """t(m) / t(1) at batch 1 (median over ``repeats`` cached forwards after CONTEXT positions)."""
    c = cost_curve(model, tokens, CONTEXT, device, repeats)
    return {"seconds_one": c["seconds"][1], "ratio": c["ratio"]}


def print_rows(r):
    print(
        f"{'gamma':>5s} {'alpha':>6s} {'measured':>9s} {'cost model':>10s} {'ratio':>6s} {'Leviathan':>9s} "
        f"{'ratio':>6s} {'call cost':>9s} {'overhead':>8s} {'ceiling':>7s} {'free draft':>10s}"
    )
    for row in r["rows"]:
        flag = "" if abs(row["ratio_cost_model"] - 1) <= TOLERANCE else f"  off by > {TOLERANCE:.0%}"
        print(
            f"{row['gamma']:5d} {row['alpha']:6.3f} {row['measured']:9.3f} {row['predicted_cost_model']:10.3f} "
            f"{row['ratio_cost_model']:6.2f} {row['predicted']:9.3f} {row['ratio']:6.2f} "
            f"{row['target_call_cost']:9.2f} {100 * row['overhead_fraction']:7.1f}% "
            f"{row['ceiling']:7.2f} {row['ceiling_free_draft']:10.2f}{flag}"
        )


def headline_rows(dname, r, batch):
    best = max(r["rows"], key=lambda x: x["measured"])
    return [
        {
            "name": f"speed {dname}: best measured speedup (CPU, batch {batch})",
            "value": best["measured"],
            "note": f"gamma={best['gamma']}, cost model {best['predicted_cost_model']:.2f}, "
            f"Leviathan {best['predicted']:.2f} (c={r['c']:.3f}); "
            f"goal {SPEEDUP_GOAL:g}: {'met' if best['measured'] >= SPEEDUP_GOAL else 'not met'}, "
            f"ceiling without overhead {best['ceiling']:.2f}, with a free draft {best['ceiling_free_draft']:.2f}",
        },
        {
            "name": f"speed {dname}: worst |measured / cost-model prediction - 1| over gamma",
            "value": max(abs(x["ratio_cost_model"] - 1) for x in r["rows"]),
            "note": f"goal <= {TOLERANCE:g}; measured / Leviathan's constant c: "
            f"{min(x['ratio'] for x in r['rows']):.2f}..{max(x['ratio'] for x in r['rows']):.2f} "
            f"(median call cost {sorted(x['target_call_cost'] for x in r['rows'])[len(r['rows']) // 2]:.2f} "
            "x one-token step)",
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
    repeats = args.repeats or (2 if args.quick else 5)  # >= 2: the held-out cost model
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
    rows = [row for r in results.values() for row in r["rows"]]
    ratios = [row["ratio_cost_model"] for row in rows]
    lev = [row["ratio"] for row in rows]
    print(
        f"\nmeasured/cost model: min {min(ratios):.2f}, max {max(ratios):.2f}; "
        f"{sum(abs(x - 1) <= TOLERANCE for x in ratios)} of {len(ratios)} within {TOLERANCE:.0%}. "
        f"measured/Leviathan: min {min(lev):.2f}, max {max(lev):.2f}; "
        f"{sum(x < RATIO_MIN for x in lev)} of {len(lev)} below {RATIO_MIN}"
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
    disagree = [row for row in rows if (row["measured"] > 1) != (row["predicted_cost_model"] > 1)]
    print(
        f"faster than autoregressive: cost model and measurement disagree on {len(disagree)} of {len(rows)}"
    )
    headline.append(
        {
            "name": f"speed: configurations where the cost model mis-calls faster/slower (CPU, batch {args.batch})",
            "value": len(disagree),
            "note": f"of {len(rows)}; issue 22: speculative faster than autoregressive wherever the "
            "cost model says so"
            + (
                "; mis-called: "
                + ", ".join(
                    f"g={x['gamma']} ({x['measured']:.2f} vs {x['predicted_cost_model']:.2f})"
                    for x in disagree
                )
                if disagree
                else ""
            ),
        }
    )
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
            "goals": {
                "overhead_max": OVERHEAD_MAX,
                "speedup": SPEEDUP_GOAL,
                "cost_model_tolerance": TOLERANCE,
            },
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

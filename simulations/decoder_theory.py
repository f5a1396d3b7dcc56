"""Theory against the real decoder: rejections, calls, draft steps, accepted lengths (issue 4, validation 2).

Predictions (spectheory.validation.predict): E[rejections] with bonus off as the
Theorem-1 sum of exact TVs along target-sampled prefixes; calls, rejections, draft steps and
the expected number of rounds with each accepted count by the exact round bookkeeping given
target paths (both bonus settings); the first round's accepted-count law from per-position
acceptances along draft paths. Each is compared with what speculative_generate measures, per
draft model and gamma in {1, 2, 4, 8}; agreement means |z| < 5 with z over the combined
standard error (fixed seeds).

Usage: python simulations/decoder_theory.py [--quick] [--out DIR] [--target NAME] [--drafts a,b]
"""

from __future__ import annotations

import time

import numpy as np
import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.validation import compare_theory, resolve_models

Z_MAX = 5.0


def main(argv=None):
    ap = decoder_script_parser(__doc__)
    ap.add_argument("--sequences", type=int, default=None)
    ap.add_argument("--horizon", type=int, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    target_name, drafts = resolve_models(args.target, args.drafts)
    N = args.sequences or (96 if args.quick else 256)
    T = args.horizon or (12 if args.quick else 48)
    gammas = [1, 4] if args.quick else [1, 2, 4, 8]
    prompts = heldout_windows(8 if args.quick else 64, 16 if args.quick else 32)
    target = load_model(target_name, device=args.device)
    results, headline = {}, []
    for name in drafts:
        t0 = time.perf_counter()
        r = compare_theory(
            target,
            load_model(name, device=args.device),
            prompts,
            T,
            gammas,
            N,
            seed=0,
            device=args.device,
            z_max=Z_MAX,
        )
        r["seconds"] = time.perf_counter() - t0
        results[name] = r
        print(
            f"\n== target={target_name} draft={name}: T={T}, {N} sequences, {r['n_paths']} target paths, "
            f"acceptance 1-E[TV] = {r['acceptance_predicted']:.3f}"
        )
        print(f"{'gamma':>5s} {'bonus':>5s} {'statistic':14s} {'predicted':>16s} {'measured':>16s} {'z':>6s}")
        for row in r["rows"]:
            if row["stat"].startswith(("count", "first")) and args.quick:
                continue
            print(
                f"{row['gamma']:5d} {str(row['bonus']):>5s} {row['stat']:14s} "
                f"{row['predicted']:8.3f} ±{row['predicted_se']:6.3f} {row['measured']:8.3f} ±{row['measured_se']:6.3f} "
                f"{row['z']:6.2f}{'' if row['agree'] else '  DISAGREE'}"
            )
        zs = np.array([row["z"] for row in r["rows"] if row["predicted_se"] + row["measured_se"] > 0])
        rej = [row for row in r["rows"] if row["stat"] == "rejections_tv"]
        headline += [
            {
                "name": f"decoder {name}: E[rejections] bonus off, Theorem-1 TV sum (T={T})",
                "value": rej[0]["predicted"],
                "se": rej[0]["predicted_se"],
                "note": "measured "
                + ", ".join(f"g={x['gamma']}: {x['measured']:.3f}±{x['measured_se']:.3f}" for x in rej),
            },
            {
                "name": f"decoder {name}: max |z| theory vs decoder",
                "value": float(np.abs(zs).max()),
                "note": f"{len(zs)} comparisons (calls, rejections, draft steps, accepted-count histograms), agree if < {Z_MAX}",
            },
        ]
    allz = [row for r in results.values() for row in r["rows"]]
    n_bad = sum(not row["agree"] for row in allz)
    headline.append(
        {"name": "decoder theory: comparisons outside 5 SE", "value": n_bad, "note": f"of {len(allz)}"}
    )
    print(f"\n{n_bad} of {len(allz)} comparisons outside {Z_MAX} combined SE")
    path = write_result(
        args.out,
        "decoder_theory",
        {
            "target": target_name,
            "drafts": drafts,
            "gammas": gammas,
            "horizon": T,
            "sequences": N,
            "results": results,
        },
        headline,
        device=args.device,
    )
    print("wrote", path)
    return 0 if n_bad == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Block rounds in the real decoder: the shipped Medusa heads' target calls, predicted along target paths and measured.

The decoder plays BlockRound(gamma) with the shipped Medusa heads (spectheory.decoder.generate:
one path of drafts, token k sampled from head k's law at the round start, token verification
against that law). The prediction (spectheory.validation.block_heads) samples target paths,
reads for every round start and depth the probability that the coupled verification rejected
the path's token there, and runs the exact round bookkeeping over round starts
(outcome_dp); its mean over paths is the decoder's expected number of target calls. Each
(gamma, temperature) compares predicted and measured means; agreement means |z| < 5 over the
combined standard error (fixed seeds, independent streams for paths and decoder runs).

Usage: python simulations/decoder_block_heads.py [--quick] [--out DIR] [--sequences N] [--horizon T]
"""

from __future__ import annotations

import time

import numpy as np
import torch
from tqdm.auto import tqdm

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.decoder import generate, load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.decoder.medusa import load_heads
from spectheory.kinds.block import BlockRound
from spectheory.validation.block_heads import block_round_dp, head_reject_table
from spectheory.validation.path_stats import mean_se, repeat_prompts, sample_paths, zscore

Z_MAX = 5.0


def main(argv=None):
    ap = decoder_script_parser(__doc__)
    ap.add_argument("--sequences", type=int, default=None)
    ap.add_argument("--horizon", type=int, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    N = args.sequences or (96 if args.quick else 256)
    T = args.horizon or (12 if args.quick else 32)
    gammas = [2, 4] if args.quick else [1, 2, 3, 4]
    temperatures = [1.0] if args.quick else [1.0, 0.7]
    target = load_model("target", device=args.device)
    heads, _ = load_heads(device=args.device)
    prompts = repeat_prompts(heldout_windows(8 if args.quick else 32, 16), N)
    rows = []
    for temp in temperatures:
        sampling = (temp, None, None)
        paths = sample_paths(target, prompts, T, seed=1, sampling=sampling, device=args.device)
        for g in tqdm(gammas, desc=f"T={temp}"):
            t0 = time.perf_counter()
            dp = block_round_dp(head_reject_table(target, heads, paths, prompts.shape[1], g, sampling))
            pm, ps = mean_se(dp["target_calls"])
            res = generate(
                target,
                heads,
                list(prompts),
                T,
                BlockRound(gamma=g),
                temperature=temp,
                seed=[10_000 + i for i in range(N)],
                device=args.device,
            )
            mm, ms = mean_se(np.asarray(res.stats.target_calls, dtype=np.float64))
            z = float(zscore(pm, ps, mm, ms))
            rows.append(
                {
                    "gamma": g,
                    "temperature": temp,
                    "predicted": float(pm),
                    "predicted_se": float(ps),
                    "measured": float(mm),
                    "measured_se": float(ms),
                    "z": z,
                    "agree": abs(z) < Z_MAX,
                    "tokens_per_call_predicted": T / float(pm),
                    "tokens_per_call_measured": T / float(mm),
                    "seconds": time.perf_counter() - t0,
                }
            )
            print(
                f"gamma {g} temperature {temp}: target calls predicted {pm:.3f} ± {ps:.3f}, "
                f"measured {mm:.3f} ± {ms:.3f}, z = {z:.2f}"
            )
    worst = max(abs(r["z"]) for r in rows)
    headline = [
        {
            "name": f"Medusa heads as block rounds: max |z| predicted vs measured target calls (T={T})",
            "value": worst,
            "note": f"{len(rows)} (gamma, temperature) pairs, {N} sequences each; agree if < {Z_MAX}",
        }
    ]
    path = write_result(
        args.out,
        "decoder_block_heads",
        {"horizon": T, "sequences": N, "gammas": gammas, "temperatures": temperatures, "rows": rows},
        headline,
        argv=None,
        device=args.device,
    )
    print("wrote", path)
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

"""Decoder validations 1, 2 and 4 with large batches on a GPU (issue 4, validation 5).

Device auto: CUDA if available, else CPU. On CUDA (sized to finish in under 8 minutes):
the lossless chi-square with 200,000 two-token samples per draft (and the broken rule),
theory vs decoder with 4096 sequences of 64 tokens per draft and gamma in {1, 2, 4, 8}, and
the speed comparison at batch 1 and batch 256. On CPU use --quick (small sizes; part of
the test suite). Writes DIR/decoder_gpu.json.

Usage: python simulations/decoder_gpu.py [--quick] [--out DIR] [--device cuda|cpu] [--target NAME]
"""
from __future__ import annotations

import time

import numpy as np
import torch

from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.validation import compare_theory, exact_two_token_law, lossless_check, measure_speed, resolve_models


def main(argv=None):
    ap = decoder_script_parser(__doc__, device=None, threads=None)
    args = ap.parse_args(argv)
    device = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        torch.set_num_threads(2)
    target_name, drafts = resolve_models(args.target, args.drafts)
    if args.quick:
        drafts = drafts[-1:]
    q = args.quick
    sizes = {"lossless_samples": 1000 if q else 200_000, "theory_sequences": 48 if q else 4096,
             "horizon": 8 if q else 64, "gammas": [2] if q else [1, 2, 4, 8],
             "speed_batches": [1] if q else [1, 256], "speed_horizon": 16 if q else 128,
             "speed_gammas": [2] if q else [1, 2, 4, 8]}
    target = load_model(target_name, device=device)
    prompt = heldout_windows(1, 12 if q else 32)[0].tolist()
    law = exact_two_token_law(target, prompt, device=device)
    out = {"target": target_name, "drafts": drafts, "sizes": sizes, "lossless": [], "theory": {}, "speed": {}}
    headline = []
    t_all = time.perf_counter()
    for name in drafts:
        draft = load_model(name, device=device)
        for rule in (None, "target_correction"):
            r = lossless_check(target, draft, prompt, sizes["lossless_samples"], 2, seed=7, rule=rule, law=law,
                               batch_size=16384, device=device)
            r["draft"] = name
            out["lossless"].append(r)
            print(f"lossless {name:12s} {r['rule']:18s} chi2={r['statistic']:.1f} dof={r['dof']} p={r['pvalue']:.2e}")
        th = compare_theory(target, draft, heldout_windows(64 if not q else 4, 32 if not q else 12),
                            sizes["horizon"], sizes["gammas"], sizes["theory_sequences"], seed=0,
                            batch_size=4096, device=device)
        out["theory"][name] = th
        zmax = max(abs(x["z"]) for x in th["rows"])
        print(f"theory   {name:12s} max |z| = {zmax:.2f} over {len(th['rows'])} comparisons")
        out["speed"][name] = {}
        for B in sizes["speed_batches"]:
            sp = measure_speed(target, draft, heldout_windows(B, 32), sizes["speed_horizon"], sizes["speed_gammas"],
                               repeats=1 if q else 2, device=device)
            out["speed"][name][str(B)] = sp
            print(f"speed    {name:12s} batch {B:4d} c={sp['c']:.3f} " +
                  " ".join(f"g={x['gamma']}: {x['measured']:.2f}/{x['predicted']:.2f}" for x in sp["rows"]))
        real = [x for x in out["lossless"] if x["draft"] == name and x["rule"] == "decoder"][0]
        broken = [x for x in out["lossless"] if x["draft"] == name and x["rule"] != "decoder"][0]
        headline += [
            {"name": f"gpu run {name}: lossless p-value (real / broken rule)", "value": real["pvalue"],
             "note": f"broken rule p = {broken['pvalue']:.1e}, {sizes['lossless_samples']} samples, device {device}"},
            {"name": f"gpu run {name}: max |z| theory vs decoder", "value": zmax,
             "note": f"{sizes['theory_sequences']} sequences x {sizes['horizon']} tokens"},
            {"name": f"gpu run {name}: min measured/predicted speedup", "value":
             min(x["ratio"] for sp in out["speed"][name].values() for x in sp["rows"]), "note": f"device {device}"},
        ]
    out["seconds"] = time.perf_counter() - t_all
    print(f"total {out['seconds']:.1f} s on {device}")
    print("wrote", write_result(args.out, "decoder_gpu", out, headline, device=device))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

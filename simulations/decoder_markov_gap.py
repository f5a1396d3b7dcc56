"""How good is the Markov abstraction of the real models? (issue 4, validation 3)

Order-k chains (k = 0..3) are fitted to samples of both models (target kernels from target
samples, draft kernels from draft samples; soft counts = the models' exact next-token laws,
and hard counts = sampled bytes; sparse contexts with back-off, see
spectheory.validation.markov). The chains' exact predictions (spectheory.exact.expectations) of
E[rejections] (bonus off) and of target calls (bonus on) are compared with what the real
decoder measures, per draft model and gamma; the gap is reported as k grows, next to the
Rao-Blackwellised prediction (the k = infinity limit).

Usage: python simulations/decoder_markov_gap.py [--quick] [--out DIR] [--target NAME] [--drafts a,b]
"""
from __future__ import annotations

import time

import numpy as np
import torch

from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.validation import chain_predictions, fit_order_k_chain, mean_se, measure_decoder, path_statistics, rb_predictions, repeat_prompts, resolve_models, sample_paths


def main(argv=None):
    ap = decoder_script_parser(__doc__)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    target_name, drafts = resolve_models(args.target, args.drafts)
    N = 64 if args.quick else 384          # samples per model, and decoder sequences
    T = 16 if args.quick else 48
    orders = [0, 1, 2] if args.quick else [0, 1, 2, 3]
    gammas = [2] if args.quick else [1, 4, 8]
    L = 16
    prompts = heldout_windows(8 if args.quick else 48, L)
    pr = repeat_prompts(prompts, N)
    target = load_model(target_name, device=args.device)
    tpaths = sample_paths(target, pr, T, seed=10_000_019, device=args.device)
    results, headline = {}, []
    for name in drafts:
        t0 = time.perf_counter()
        draft = load_model(name, device=args.device)
        st = path_statistics(target, draft, tpaths, L, keep_laws=True, device=args.device)
        dpaths = sample_paths(draft, pr, T, seed=30_000_001, device=args.device)
        sd = path_statistics(target, draft, dpaths, L, keep_laws=True, device=args.device)
        rb = rb_predictions(st, gammas, (False, True))
        measured = {}
        for g in gammas:
            for b in (False, True):
                m = measure_decoder(target, draft, pr, T, g, b, seed=0, device=args.device)
                measured[(g, b)] = {k: mean_se(m[k]) for k in ("rejections", "target_calls")}
        rows = []
        for fit in ("soft", "hard"):
            for k in orders:
                chain = fit_order_k_chain(k, tpaths, st.target_laws, dpaths, sd.draft_laws, L, prompts,
                                          soft=(fit == "soft"))
                cp = chain_predictions(chain, T, gammas)
                for g in gammas:
                    for b, stat in ((False, "rejections"), (True, "target_calls")):
                        mm, ms = measured[(g, b)][stat]
                        rows.append({"fit": fit, "order": k, "states": chain.n_states, "gamma": g, "bonus": b,
                                     "stat": stat, "chain": float(cp[(g, b)][stat]), "measured": float(mm),
                                     "measured_se": float(ms), "rb": float(rb[(g, b)][stat][0]),
                                     "rb_se": float(rb[(g, b)][stat][1]),
                                     "relative_gap": float(cp[(g, b)][stat] / mm - 1.0)})
        results[name] = {"rows": rows, "seconds": time.perf_counter() - t0}
        print(f"\n== target={target_name} draft={name}: T={T}, {N} samples per model")
        print(f"{'fit':5s} {'k':>2s} {'states':>7s} {'gamma':>5s} {'statistic':13s} {'chain':>8s} {'measured':>15s} "
              f"{'RB (k=inf)':>10s} {'gap':>7s}")
        for r in rows:
            print(f"{r['fit']:5s} {r['order']:2d} {r['states']:7d} {r['gamma']:5d} {r['stat']:13s} {r['chain']:8.3f} "
                  f"{r['measured']:8.3f}±{r['measured_se']:5.3f} {r['rb']:10.3f} {100 * r['relative_gap']:6.1f}%")
        for k in orders:
            r = next(x for x in rows if x["fit"] == "soft" and x["order"] == k and x["stat"] == "rejections")
            headline.append({"name": f"markov gap {name}: order-{k} chain E[rejections] / measured - 1",
                             "value": r["relative_gap"], "note": f"soft-count fit, T={T}, gamma={r['gamma']}, bonus off"})
    path = write_result(args.out, "decoder_markov_gap", {"target": target_name, "drafts": drafts, "orders": orders,
                                                          "gammas": gammas, "horizon": T, "samples": N,
                                                          "results": results}, headline, device=args.device)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Draft-length policies in the real decoder: measured tokens per call against the exact predictions.

Two checks. (1) The decoder with each runnable policy (fixed gamma, HuggingFace's confidence
threshold, an entropy rule, HuggingFace's +2/-1 schedule) on torch models that are exactly a
first-order chain (spectheory.stopping.runtime.chain_models): the measured target calls must
equal spectheory.stopping.evaluate_policy within 5 SE -- the hook, the decoder and the exact
evaluation agree. (2) The shipped byte-level target with each shipped draft: measured tokens per
target call and wall-clock speedup over autoregressive decoding (one batch of N sequences, CPU
by default), against the exact prediction of order-1 and order-2 chains fitted to samples of the
models (spectheory.validation.fit_order_k_chain, soft counts). The fitted chains average the draft's
laws over each context, so rules that read the draft's confidence see flatter laws there than in
the real model: the gap measures the Markov abstraction, not the evaluation. Writes
``stopping_decoder.json``.

Usage: python simulations/stopping_decoder.py [--quick] [--out DIR] [--target NAME] [--drafts a,b]
"""
from __future__ import annotations

import numpy as np
import torch

import spectheory as st
from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.app.results import headline
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.decoder.speculative import autoregressive_generate, speculative_generate
from spectheory.stopping import ConfidenceThreshold, EntropyRule, FixedGamma, HFSchedule, evaluate_policy
from spectheory.stopping.runtime import chain_models
from spectheory.validation import (fit_order_k_chain, path_statistics, repeat_prompts, resolve_models,
                                   sample_paths)


def policies(D):
    return [FixedGamma(4), ConfidenceThreshold(0.4, max_depth=D), EntropyRule(1.5, max_depth=D),
            HFSchedule(5, max_depth=D)]


def calls_stats(res, T):
    calls = np.asarray(res.stats.target_calls, dtype=np.float64)
    m, se = calls.mean(), calls.std(ddof=1) / np.sqrt(calls.size)
    return m, se, T / m, T * se / m ** 2


def chain_check(quick, rng_seed=48):
    """(1): the decoder on chain models against the exact evaluation."""
    chain = st.DecodingChain.random(4, concentration=0.4, similarity=0.5, rng=rng_seed)
    start = st.DecodingChain(chain.target, chain.draft, initial=np.eye(4)[0])
    target, draft = chain_models(chain)
    T, B = 12, 300 if quick else 8000
    rows = []
    for p in [FixedGamma(3), ConfidenceThreshold(0.45, max_depth=5), EntropyRule(1.1, max_depth=5),
              HFSchedule(2, max_depth=5)]:
        res = speculative_generate(target, draft, [[0]] * B, T, gamma=8, policy=p, seed=2024)
        m, se, _, _ = calls_stats(res, T)
        exact = evaluate_policy(start, p, T).target_calls
        rows.append({"policy": p.name, "exact_calls": exact, "measured_calls": m, "se": se, "z": (m - exact) / se})
        print(f"chain model  {p.name:34s} exact calls {exact:.4f}  measured {m:.4f} +- {se:.4f}  z={rows[-1]['z']:+.2f}")
    return rows


def main(argv=None):
    args = decoder_script_parser(__doc__).parse_args(argv)
    torch.set_num_threads(args.threads)
    rows_chain = chain_check(args.quick)
    target_name, drafts = resolve_models(args.target, args.drafts)
    if args.quick:
        drafts = drafts[:1]
    L, T = 16, (8 if args.quick else 32)
    N = 8 if args.quick else 96
    D = 8
    orders = [1] if args.quick else [1, 2]
    prompts = heldout_windows(8 if args.quick else 24, L)
    pr = repeat_prompts(prompts, N)
    target = load_model(target_name, device=args.device)
    ar = autoregressive_generate(target, list(pr), T, seed=1, device=args.device)
    t_ar = ar.stats.time_total
    tpaths = sample_paths(target, pr, T, seed=10_000_019, device=args.device)
    rows = []
    for name in drafts:
        draft = load_model(name, device=args.device)
        stt = path_statistics(target, draft, tpaths, L, keep_laws=True, device=args.device)
        dpaths = sample_paths(draft, pr, T, seed=30_000_001, device=args.device)
        sd = path_statistics(target, draft, dpaths, L, keep_laws=True, device=args.device)
        chains = {k: fit_order_k_chain(k, tpaths, stt.target_laws, dpaths, sd.draft_laws, L, prompts) for k in orders}
        print(f"\n== target={target_name} draft={name}: T={T}, N={N}; fitted chains: "
              + ", ".join(f"order {k}: S={c.n_states}" for k, c in chains.items()))
        for p in (policies(D)[:2] if args.quick else policies(D)):
            res = speculative_generate(target, draft, list(pr), T, gamma=D, policy=p, seed=7, device=args.device)
            m, se, tpc, tpc_se = calls_stats(res, T)
            row = {"draft": name, "policy": p.name, "measured_calls": m, "measured_se": se,
                   "tokens_per_call": tpc, "tokens_per_call_se": tpc_se,
                   "draft_tokens": float(np.mean(res.stats.draft_tokens)),
                   "wall_speedup": t_ar / res.stats.time_total}
            for k, chain in chains.items():
                pred = evaluate_policy(chain, p, T)
                row[f"order{k}_tokens_per_call"] = pred.tokens_per_call
                row[f"order{k}_z"] = (m - pred.target_calls) / se
            rows.append(row)
            preds = "  ".join(f"order-{k} {row[f'order{k}_tokens_per_call']:.3f} (z={row[f'order{k}_z']:+.1f})"
                              for k in orders)
            print(f"  {p.name:32s} measured {tpc:.3f} +- {tpc_se:.3f} tokens/call, wall speedup "
                  f"{row['wall_speedup']:.2f}x; predicted {preds}")
    max_z_chain = max(abs(r["z"]) for r in rows_chain)
    best = max(rows, key=lambda r: r["wall_speedup"])
    k_hi = orders[-1]
    heads = [headline("draft-length policies in the decoder on chain models: exact vs measured target calls, "
                      "max |z|", max_z_chain),
             headline(f"best wall-clock speedup over autoregressive ({best['draft']}, {best['policy']}, T={T}, "
                      f"N={N})", best["wall_speedup"])]
    for r in rows:
        if r["draft"] == drafts[0]:
            heads.append(headline(f"{r['policy']} on {target_name}/{r['draft']}: tokens per call measured vs "
                                  f"order-{k_hi} chain prediction",
                                  f"{r['tokens_per_call']:.3f} vs {r[f'order{k_hi}_tokens_per_call']:.3f}"))
    data = {"target": target_name, "drafts": drafts, "horizon": T, "sequences": N, "max_depth": D,
            "orders": orders, "autoregressive_seconds": t_ar, "chain_check": rows_chain, "rows": rows}
    path = write_result(args.out, "stopping_decoder", data, heads, device=args.device)
    print("wrote", path)
    assert max_z_chain < 5, "decoder on chain models disagrees with the exact evaluation beyond 5 SE"


if __name__ == "__main__":
    main()

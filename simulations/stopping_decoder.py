"""Draft-length policies in the real decoder: measured tokens per call against the exact predictions.

Two checks. (1) The decoder with each runnable policy (fixed gamma, HuggingFace's confidence
threshold, an entropy rule, HuggingFace's +2/-1 schedule) on torch models that are exactly a
first-order chain (spectheory.stopping.runtime.chain_models): the measured target calls must
equal spectheory.stopping.evaluate_policy within 5 SE -- the hook, the decoder and the exact
evaluation agree. (2) The shipped byte-level target with each shipped draft: measured tokens per
target call and wall-clock speedup over autoregressive decoding (one batch of N sequences, CPU
by default), against (a) the Rao-Blackwellised prediction along target paths
(spectheory.validation.policy_predict: one forward pass of each model along target-sampled paths
gives the per-position rejection probabilities and the draft's laws; the rounds given each path
are an exact recursion; unbiased for the expected target calls, docs/stopping.md section 9) and
(b) the exact prediction of order-1 and order-2 chains fitted to samples of the models
(spectheory.abstraction.fit_order_k_chain, soft counts). The fitted chains average the draft's
laws over each context, so rules that read the draft's confidence see flatter laws there than in
the real model: their gap measures the Markov abstraction, not the evaluation. On the chain
models of (1) the Rao-Blackwellised prediction is checked against the exact evaluation too.
Writes ``stopping_decoder.json``.

Usage: python simulations/stopping_decoder.py [--quick] [--out DIR] [--target NAME] [--drafts a,b]
"""

from __future__ import annotations

import numpy as np
import torch

import spectheory as st
from spectheory.abstraction import fit_order_k_chain
from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.app.results import headline
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.decoder.speculative import autoregressive_generate, speculative_generate
from spectheory.stopping import ConfidenceThreshold, EntropyRule, FixedGamma, HFSchedule, evaluate_policy
from spectheory.stopping.runtime import chain_models
from spectheory.validation import path_statistics, repeat_prompts, resolve_models, sample_paths
from spectheory.validation.policy_predict import policy_path_inputs, predict_policy

Z_MAX = 5.0


def policies(D):
    return [
        FixedGamma(4),
        ConfidenceThreshold(0.4, max_depth=D),
        EntropyRule(1.5, max_depth=D),
        HFSchedule(5, max_depth=D),
    ]


def calls_stats(res, T):
    calls = np.asarray(res.stats.target_calls, dtype=np.float64)
    m, se = calls.mean(), calls.std(ddof=1) / np.sqrt(calls.size)
    return m, se, T / m, T * se / m**2


def z_of(a, sa, b, sb):
    return float((a - b) / np.hypot(sa, sb))


def chain_check(quick, rng_seed=48):
    """(1): the decoder on chain models against the exact evaluation."""
    chain = st.DecodingChain.random(4, concentration=0.4, similarity=0.5, rng=rng_seed)
    start = st.DecodingChain(chain.target, chain.draft, initial=np.eye(4)[0])
    target, draft = chain_models(chain)
    T, B = 12, 300 if quick else 8000
    paths = sample_paths(target, [[0]] * (B // 4), T, seed=50_000_017)
    inputs = policy_path_inputs(target, draft, paths, 1)
    rows = []
    for p in [
        FixedGamma(3),
        ConfidenceThreshold(0.45, max_depth=5),
        EntropyRule(1.1, max_depth=5),
        HFSchedule(2, max_depth=5),
    ]:
        res = speculative_generate(target, draft, [[0]] * B, T, gamma=8, policy=p, seed=2024)
        m, se, _, _ = calls_stats(res, T)
        exact = evaluate_policy(start, p, T).target_calls
        rb, rb_se = predict_policy(inputs, p, gamma=8)["target_calls"]
        rows.append(
            {
                "policy": p.name,
                "exact_calls": exact,
                "measured_calls": m,
                "se": se,
                "z": (m - exact) / se,
                "rb_calls": rb,
                "rb_se": rb_se,
                "rb_z": (rb - exact) / rb_se,
            }
        )
        print(
            f"chain model  {p.name:34s} exact calls {exact:.4f}  measured {m:.4f} +- {se:.4f}  "
            f"z={rows[-1]['z']:+.2f}; Rao-Blackwellised {rb:.4f} +- {rb_se:.4f} z={rows[-1]['rb_z']:+.2f}"
        )
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
    n_rb = N if args.quick else 4 * N
    rbpaths = sample_paths(target, repeat_prompts(prompts, n_rb), T, seed=50_000_017, device=args.device)
    rows = []
    for name in drafts:
        draft = load_model(name, device=args.device)
        stt = path_statistics(target, draft, tpaths, L, keep_laws=True, device=args.device)
        dpaths = sample_paths(draft, pr, T, seed=30_000_001, device=args.device)
        sd = path_statistics(target, draft, dpaths, L, keep_laws=True, device=args.device)
        chains = {
            k: fit_order_k_chain(k, tpaths, stt.target_laws, dpaths, sd.draft_laws, L, prompts)
            for k in orders
        }
        inputs = policy_path_inputs(target, draft, rbpaths, L, device=args.device)
        print(
            f"\n== target={target_name} draft={name}: T={T}, N={N}; fitted chains: "
            + ", ".join(f"order {k}: S={c.n_states}" for k, c in chains.items())
        )
        for p in policies(D)[:2] if args.quick else policies(D):
            res = speculative_generate(
                target, draft, list(pr), T, gamma=D, policy=p, seed=7, device=args.device
            )
            m, se, tpc, tpc_se = calls_stats(res, T)
            row = {
                "draft": name,
                "policy": p.name,
                "measured_calls": m,
                "measured_se": se,
                "tokens_per_call": tpc,
                "tokens_per_call_se": tpc_se,
                "draft_tokens": float(np.mean(res.stats.draft_tokens)),
                "wall_speedup": t_ar / res.stats.time_total,
            }
            rb = predict_policy(inputs, p, gamma=D)
            rej = np.asarray(res.stats.rejections, dtype=np.float64)
            rej_m, rej_se = rej.mean(), rej.std(ddof=1) / np.sqrt(rej.size)
            row.update(
                {
                    "rb_tokens_per_call": rb["tokens_per_call"][0],
                    "rb_tokens_per_call_se": rb["tokens_per_call"][1],
                    "rb_calls": rb["target_calls"][0],
                    "rb_calls_se": rb["target_calls"][1],
                    "rb_z": z_of(tpc, tpc_se, *rb["tokens_per_call"]),
                    "rb_calls_z": z_of(m, se, *rb["target_calls"]),
                    "measured_rejections": rej_m,
                    "measured_rejections_se": rej_se,
                    "rb_rejections": rb["rejections"][0],
                    "rb_rejections_se": rb["rejections"][1],
                    "rb_rejections_z": z_of(rej_m, rej_se, *rb["rejections"]),
                    "rb_paths": rb["n_paths"],
                }
            )
            row["rb_agree"] = bool(abs(row["rb_z"]) < Z_MAX)
            for k, chain in chains.items():
                pred = evaluate_policy(chain, p, T)
                row[f"order{k}_tokens_per_call"] = pred.tokens_per_call
                row[f"order{k}_z"] = (m - pred.target_calls) / se
            rows.append(row)
            preds = "  ".join(
                [
                    f"RB {row['rb_tokens_per_call']:.3f} +- {row['rb_tokens_per_call_se']:.3f} "
                    f"(z={row['rb_z']:+.1f}; rejections z={row['rb_rejections_z']:+.1f})"
                ]
                + [
                    f"order-{k} {row[f'order{k}_tokens_per_call']:.3f} (z={row[f'order{k}_z']:+.1f})"
                    for k in orders
                ]
            )
            print(
                f"  {p.name:32s} measured {tpc:.3f} +- {tpc_se:.3f} tokens/call, wall speedup "
                f"{row['wall_speedup']:.2f}x; predicted {preds}"
            )
    max_z_chain = max(abs(r["z"]) for r in rows_chain)
    max_z_rb_chain = max(abs(r["rb_z"]) for r in rows_chain)
    best = max(rows, key=lambda r: r["wall_speedup"])
    k_hi = orders[-1]
    n_rb_agree = sum(r["rb_agree"] for r in rows)
    n_chain_agree = sum(abs(r[f"order{k_hi}_z"]) < Z_MAX for r in rows)
    print(
        f"\nwithin {Z_MAX:g} SE of the measured tokens per call: Rao-Blackwellised {n_rb_agree} of {len(rows)}, "
        f"order-{k_hi} chain {n_chain_agree} of {len(rows)}"
    )
    heads = [
        headline(
            "draft-length policies in the decoder on chain models: exact vs measured target calls, max |z|",
            max_z_chain,
        ),
        headline(
            "Rao-Blackwellised prediction along target paths vs exact, on chain models: max |z|",
            max_z_rb_chain,
        ),
        headline(
            f"shipped models, (policy, draft) pairs whose measured tokens per call is within {Z_MAX:g} SE "
            f"of the Rao-Blackwellised prediction (T={T}, N={N})",
            f"{n_rb_agree} of {len(rows)}",
        ),
        headline(
            f"... within {Z_MAX:g} SE of the order-{k_hi} fitted-chain prediction",
            f"{n_chain_agree} of {len(rows)}",
        ),
        headline(
            f"best wall-clock speedup over autoregressive ({best['draft']}, {best['policy']}, T={T}, N={N})",
            best["wall_speedup"],
        ),
    ]
    for r in rows:
        if r["draft"] == drafts[0]:
            heads.append(
                headline(
                    f"{r['policy']} on {target_name}/{r['draft']}: tokens per call measured vs "
                    f"Rao-Blackwellised prediction (z) vs order-{k_hi} chain prediction",
                    f"{r['tokens_per_call']:.3f} vs {r['rb_tokens_per_call']:.3f} ({r['rb_z']:+.1f}) vs "
                    f"{r[f'order{k_hi}_tokens_per_call']:.3f}",
                )
            )
    data = {
        "target": target_name,
        "drafts": drafts,
        "horizon": T,
        "sequences": N,
        "max_depth": D,
        "orders": orders,
        "rb_paths": n_rb,
        "z_max": Z_MAX,
        "autoregressive_seconds": t_ar,
        "chain_check": rows_chain,
        "rows": rows,
    }
    path = write_result(args.out, "stopping_decoder", data, heads, device=args.device)
    print("wrote", path)
    assert max_z_chain < Z_MAX, "decoder on chain models disagrees with the exact evaluation beyond 5 SE"
    assert max_z_rb_chain < Z_MAX, (
        "Rao-Blackwellised prediction on chain models disagrees with the exact evaluation"
    )


if __name__ == "__main__":
    main()

"""Tree decoding at large batch (issue 12's GPU check; runs on CPU in --quick mode).

On the shipped target with draft-small trees and the Medusa heads' sparse tree:

1. greedy tree decoding equals greedy autoregressive decoding token for token on a large
   ragged batch (prompts of different lengths);
2. tokens per target call measured on a large batch against the Rao-Blackwellised exact
   prediction along target paths (node-local verifiers; 5 SE on the combined error);
3. throughput (generated tokens per second, whole batch, one repeat after a warm-up) of tree
   decoding against autoregressive decoding at several batch sizes, with the rule on the device
   or on the host, and on the fixed-shape forward (``compile_model(mode="static")``: attention
   over the whole cache, no host read inside a call; greedy-checked in item 1). With
   ``--graphs`` (CUDA), also the same under ``torch.compile`` with CUDA graphs
   (``mode="reduce-overhead"``; each call shape compiles once, in the warm-up).

Usage: python benchmarks/decoder_trees_gpu.py [--quick] [--out DIR] [--device cuda] [--graphs]
"""

from __future__ import annotations

import time
from functools import partial

import numpy as np
import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.decoder import load_model
from spectheory.decoder.compiled import compile_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.decoder.logits import logits_to_probs
from spectheory.decoder.medusa import load_heads, medusa_generate, sparse_tree
from spectheory.decoder.speculative import autoregressive_generate
from spectheory.decoder.tree_decode import tree_generate
from spectheory.trees import DraftTree
from spectheory.validation.predict import mean_se, path_statistics, repeat_prompts, sample_paths, zscore
from spectheory.validation.tree_decoding import draft_tables, medusa_tables, tree_round_dp


def _sync(dev):
    if str(dev).startswith("cuda"):
        torch.cuda.synchronize()


@torch.inference_mode()
def head_laws(target, heads, paths, L, T):
    logits, hidden = target(
        torch.as_tensor(paths[:, :-1], device=next(target.parameters()).device), return_hidden=True
    )
    tl = logits_to_probs(logits[:, L - 1 :]).double().cpu().numpy()
    hl = logits_to_probs(heads(hidden[:, L - 2 : L - 2 + T], target.wte.weight)).double().cpu().numpy()
    return tl, hl


def main(argv=None):
    ap = decoder_script_parser(__doc__, device=None)
    ap.add_argument("--sequences", type=int, default=None, help="sequences of the large-batch comparison")
    ap.add_argument("--graphs", action="store_true", help="also time tree rounds under CUDA graphs")
    args = ap.parse_args(argv)
    dev = args.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if not dev.startswith("cuda"):
        torch.set_num_threads(args.threads)
    q = args.quick
    gpu = dev.startswith("cuda")
    if not (gpu or q or args.sequences):
        # the full run is the GPU check; a CPU run must not replace results/decoder_trees_gpu.json
        print(
            "decoder_trees_gpu: no CUDA device, nothing written (the committed result comes from a GPU); "
            "use --quick, or --sequences N, to run it on CPU"
        )
        return 0
    N = args.sequences or (64 if q else 2048)
    T = 8 if q else 16
    L = 16
    t0 = time.perf_counter()
    target, draft = load_model("target", device=dev), load_model("draft-small", device=dev)
    fixed = {"fixed-shape": (compile_model(target, "static"), compile_model(draft, "static"))}
    if args.graphs and gpu:
        fixed["CUDA graphs"] = (
            compile_model(target, "reduce-overhead"),
            compile_model(draft, "reduce-overhead"),
        )
    heads, hinfo = load_heads(device=dev)
    prompts = heldout_windows(16 if q else 64, L)
    out = {"sequences": N, "horizon": T, "prompt_len": L}

    # 1. greedy equality, ragged batch
    nb = 32 if q else (512 if gpu else 64)
    ragged = [list(p[: 4 + i % 12]) for i, p in enumerate(repeat_prompts(prompts, nb))]
    ar = autoregressive_generate(target, ragged, T, temperature=0, device=dev)
    eq = {}
    for name, run in (
        (
            "draft-small 2x2x1 tree_rrs",
            lambda: tree_generate(
                target,
                draft,
                ragged,
                T,
                DraftTree.from_branching([2, 2, 1]),
                "tree_rrs",
                temperature=0,
                device=dev,
            ),
        ),
        (
            "medusa sparse16 tree_topk",
            lambda: medusa_generate(
                target,
                heads,
                ragged,
                T,
                sparse_tree(np.array(hinfo["heldout"]["rank_accuracy"])[:, :4], 16),
                "tree_topk",
                temperature=0,
                device=dev,
            ),
        ),
        (
            "draft-small 2x2x1 tree_rrs, fixed-shape",
            lambda: tree_generate(
                *fixed["fixed-shape"],
                ragged,
                T,
                DraftTree.from_branching([2, 2, 1]),
                "tree_rrs",
                temperature=0,
                device=dev,
            ),
        ),
    ):
        res = run()
        eq[name] = int(sum(not np.array_equal(a, b) for a, b in zip(ar.tokens, res.tokens)))
        print(f"greedy, {nb} ragged prompts, {name}: {eq[name]} sequences differ from autoregressive")
    out["greedy_mismatches"] = eq

    # 2. tokens per call at large N against the RB prediction
    pr = repeat_prompts(prompts, N)
    paths = sample_paths(target, pr, T, seed=10_000_019, device=dev)
    ps = path_statistics(target, draft, paths, L, keep_laws=True, device=dev)
    toks = paths[:, L:]
    acc = np.array(hinfo["heldout"]["rank_accuracy"])
    rows = []
    cases = [
        ("draft-small", "path4", DraftTree.from_branching([1, 1, 1, 1]), "tree_rrs", "iid"),
        ("draft-small", "2x2x1", DraftTree.from_branching([2, 2, 1]), "tree_rrs", "iid"),
        ("draft-small", "2x2x1", DraftTree.from_branching([2, 2, 1]), "tree_topk", "topk"),
        ("medusa", "sparse16", sparse_tree(acc[:, :4], 16), "tree_topk", "topk"),
    ]
    tl_h = hl = None
    for drafter, tname, tree, v, children in cases:
        if drafter == "medusa":
            if hl is None:
                tl_h, hl = head_laws(target, heads, paths, L, T)
            pred = tree_round_dp(tree, medusa_tables(tl_h, hl, toks, tree, children), T)["target_calls"]
            res = medusa_generate(target, heads, list(pr), T, tree, v, seed=0, device=dev)
        else:
            pred = tree_round_dp(tree, draft_tables(ps.target_laws, ps.draft_laws, toks, tree, children), T)[
                "target_calls"
            ]
            res = tree_generate(target, draft, list(pr), T, tree, v, seed=0, device=dev)
        mc, sc = mean_se(res.stats.target_calls.astype(float))
        pc, psc = mean_se(pred)
        z = float(zscore(pc, psc, mc, sc))
        rows.append(
            {
                "drafter": drafter,
                "tree": tname,
                "verifier": v,
                "measured_tokens_per_call": T / mc,
                "measured_se": T * sc / mc**2,
                "predicted_tokens_per_call": T / pc,
                "predicted_se": T * psc / pc**2,
                "z": z,
                "agree": abs(z) < 5,
            }
        )
        print(
            f"{drafter:12s} {tname:8s} {v:10s} N={N}: measured {T / mc:.4f}±{T * sc / mc**2:.4f} "
            f"predicted {T / pc:.4f}±{T * psc / pc**2:.4f} z={z:+.2f}"
        )
    out["large_batch"] = rows

    # 3. throughput
    def small_tree(bp, models=(target, draft), **kw):
        tree = DraftTree.from_branching([2, 2, 1])
        return tree_generate(*models, bp, T, tree, "tree_rrs", seed=1, device=dev, **kw)

    speed = []
    for B in (1, 16) if q else ((1, 64, 1024) if gpu else (1, 64)):
        bp = list(repeat_prompts(prompts, B))
        runs = {
            "autoregressive": lambda bp=bp: autoregressive_generate(target, bp, T, seed=1, device=dev),
            "draft-small 2x2x1 tree_rrs": partial(small_tree, bp),
            # the same with the rule in numpy on the host (the default off CUDA, the old GPU path)
            "draft-small 2x2x1 tree_rrs, host rule": partial(small_tree, bp, rule_on_device=False),
            **{f"draft-small 2x2x1 tree_rrs, {k}": partial(small_tree, bp, m) for k, m in fixed.items()},
            "medusa sparse16 tree_topk": lambda bp=bp: medusa_generate(
                target, heads, bp, T, sparse_tree(acc[:, :4], 16), "tree_topk", seed=1, device=dev
            ),
        }
        for name, f in runs.items():
            f()  # warm-up
            _sync(dev)
            s = time.perf_counter()
            f()
            _sync(dev)
            sec = time.perf_counter() - s
            speed.append({"batch": B, "method": name, "seconds": sec, "tokens_per_second": B * T / sec})
            print(f"batch {B:5d} {name:40s} {sec:7.3f}s  {B * T / sec:9.1f} tokens/s")
    out["throughput"] = speed
    out["seconds"] = time.perf_counter() - t0
    n_bad = sum(not r["agree"] for r in rows)
    headline = [
        {
            "name": "tree decoding at large batch: greedy sequences differing from autoregressive",
            "value": int(sum(eq.values())),
            "note": f"{nb} ragged prompts x {len(eq)} drafters",
        },
        {
            "name": "tree decoding at large batch: tokens per call outside 5 SE of the RB prediction",
            "value": n_bad,
            "note": f"of {len(rows)}, N={N}",
        },
    ]
    path = write_result(
        args.out,
        "decoder_trees_gpu",
        out,
        headline,
        argv=argv and ["benchmarks/decoder_trees_gpu.py", *argv],
        device=dev,
    )
    print(f"{n_bad} of {len(rows)} outside 5 SE; wrote {path} in {out['seconds']:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

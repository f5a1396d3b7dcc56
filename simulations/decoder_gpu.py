"""Decoder validations 1, 2 and 4 with large batches on a GPU (issue 4, validation 5).

Device auto: CUDA if available, else CPU. On CUDA (sized to finish in under 8 minutes):
the lossless chi-square with 200,000 two-token samples per draft (and the broken rule),
theory vs decoder with 4096 sequences of 64 tokens per draft and gamma in {1, 2, 4, 8}, and
the speed comparison at batch 1 and batch 256; tree decoding at batch 4096 (issue 12: a draft
tree and the Medusa heads' sparse tree, tokens per call against the Rao-Blackwellised
prediction, chi-square of a lossless and a broken tree rule). On CPU use --quick (small
sizes; part of the test suite). Writes DIR/decoder_gpu.json.

Usage: python simulations/decoder_gpu.py [--quick] [--out DIR] [--device cuda|cpu] [--target NAME]
"""

from __future__ import annotations

import time

import numpy as np
import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.tuning import measure_speed
from spectheory.validation import compare_theory, exact_two_token_law, lossless_check, resolve_models


def run_label(device: str) -> str:
    """How the headline rows name the run: by the device that actually ran it ("gpu run" on
    CUDA, "cpu run" on CPU), so a CPU row is never labelled as a GPU one."""
    return "gpu run" if str(device).startswith("cuda") else f"{str(device).split(':')[0]} run"


def tree_section(target, draft, name, device, q, law, prompt, n_samples):
    """Tree decoding at large batch (issue 12): tokens per call against the Rao-Blackwellised
    prediction, the two-token chi-square of a lossless tree verifier and a broken one, and
    batch throughput, for draft trees and the Medusa heads' sparse tree."""
    from spectheory.decoder.medusa import load_heads, medusa_generate, sparse_tree
    from spectheory.decoder.tree_decode import tree_generate
    from spectheory.trees import DraftTree
    from spectheory.validation.lossless import pooled_chisquare
    from spectheory.validation.predict import mean_se, path_statistics, repeat_prompts, sample_paths, zscore
    from spectheory.validation.tree_decoding import (
        broken_tree_rule,
        draft_tables,
        tree_round_dp,
        tree_two_token_samples,
    )

    B, T = (16, 8) if q else (4096, 64)
    heads, info = load_heads(device=device)
    sparse = sparse_tree(np.asarray(info["heldout"]["rank_accuracy"])[:, :4], 16)
    prompts = repeat_prompts(heldout_windows(64 if not q else 4, 32 if not q else 12), B)
    L = prompts.shape[1]
    paths = sample_paths(target, prompts, T, seed=31, batch_size=B, device=device)
    ps = path_statistics(target, draft, paths, L, keep_laws=True, device=device)
    res = {"batch": B, "horizon": T, "rows": [], "chisquare": [], "headline": []}
    tree = DraftTree.from_branching([2, 2, 1])
    runs = [
        (
            f"{name} 2x2x1",
            "tree_rrs",
            lambda s_: tree_generate(
                target, draft, list(prompts), T, tree, "tree_rrs", seed=s_, device=device
            ),
        ),
        (
            f"{name} 2x2x1",
            "traversal",
            lambda s_: tree_generate(
                target, draft, list(prompts), T, tree, "traversal", seed=s_, device=device
            ),
        ),
        (
            "medusa sparse16",
            "tree_topk",
            lambda s_: medusa_generate(
                target, heads, list(prompts), T, sparse, "tree_topk", seed=s_, device=device
            ),
        ),
    ]
    if heads.w.shape[-1] != target.wte.weight.shape[-1]:  # the heads are trained on the shipped target only
        runs = runs[:2]
    for label, v, run in runs:
        r = run(0)
        mc, sc = mean_se(r.stats.target_calls)
        row = {
            "tree": label,
            "verifier": v,
            "tokens_per_call": T / mc,
            "seconds": r.stats.time_total,
            "tokens_per_second": B * T / r.stats.time_total,
        }
        if v == "tree_rrs":
            pred = tree_round_dp(
                tree, draft_tables(ps.target_laws, ps.draft_laws, paths[:, L:], tree, "iid"), T
            )
            pc, pse = mean_se(pred["target_calls"])
            row.update(predicted_tokens_per_call=T / pc, z_calls=float(zscore(pc, pse, mc, sc)))
        res["rows"].append(row)
        print(
            f"trees    {label:18s} {v:10s} batch {B}: tokens/call {T / mc:.3f}"
            + (
                f" (predicted {row['predicted_tokens_per_call']:.3f}, z = {row['z_calls']:.2f})"
                if "z_calls" in row
                else ""
            )
            + f", {row['tokens_per_second']:.0f} tokens/s"
        )
    small = DraftTree.from_branching([2, 1])
    for rule, pol in (("tree_rrs", None), (broken_tree_rule("iid"), "iid")):
        s = tree_two_token_samples(
            lambda pr, sd, rule=rule, pol=pol: tree_generate(
                target, draft, pr, 2, small, rule, seed=sd, children=pol, device=device
            ),
            prompt,
            n_samples,
            seed=7,
            batch_size=min(n_samples, 16384),
        )
        c = pooled_chisquare(s, law)
        c["rule"] = rule if isinstance(rule, str) else rule.name
        res["chisquare"].append(c)
        print(
            f"trees    lossless {c['rule']:26s} chi2={c['statistic']:.1f} dof={c['dof']} p={c['pvalue']:.2e}"
        )
    zs = [abs(r["z_calls"]) for r in res["rows"] if "z_calls" in r]
    res["headline"] = [
        {
            "name": f"{run_label(device)} trees: tokens per call at batch {B} (2x2x1 tree_rrs / Medusa sparse16)",
            "value": res["rows"][0]["tokens_per_call"],
            "note": (
                f"Medusa {res['rows'][2]['tokens_per_call']:.3f}; "
                if len(res["rows"]) > 2
                else "no Medusa heads for this target; "
            )
            + f"|z| vs RB prediction {max(zs):.2f}",
        },
        {
            "name": f"{run_label(device)} trees: lossless tree_rrs p-value (broken rule)",
            "value": res["chisquare"][0]["pvalue"],
            "note": f"broken rule p = {res['chisquare'][1]['pvalue']:.1e}, {n_samples} samples",
        },
    ]
    return res


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
    sizes = {
        "lossless_samples": 1000 if q else 200_000,
        "theory_sequences": 48 if q else 4096,
        "horizon": 8 if q else 64,
        "gammas": [2] if q else [1, 2, 4, 8],
        "speed_batches": [1] if q else [1, 256],
        "speed_horizon": 16 if q else 128,
        "speed_gammas": [2] if q else [1, 2, 4, 8],
    }
    target = load_model(target_name, device=device)
    prompt = heldout_windows(1, 12 if q else 32)[0].tolist()
    law = exact_two_token_law(target, prompt, device=device)
    out = {"target": target_name, "drafts": drafts, "sizes": sizes, "lossless": [], "theory": {}, "speed": {}}
    headline = []
    t_all = time.perf_counter()
    for name in drafts:
        draft = load_model(name, device=device)
        for rule in (None, "target_correction"):
            r = lossless_check(
                target,
                draft,
                prompt,
                sizes["lossless_samples"],
                2,
                seed=7,
                rule=rule,
                law=law,
                batch_size=16384,
                device=device,
            )
            r["draft"] = name
            out["lossless"].append(r)
            print(
                f"lossless {name:12s} {r['rule']:18s} chi2={r['statistic']:.1f} dof={r['dof']} p={r['pvalue']:.2e}"
            )
        th = compare_theory(
            target,
            draft,
            heldout_windows(64 if not q else 4, 32 if not q else 12),
            sizes["horizon"],
            sizes["gammas"],
            sizes["theory_sequences"],
            seed=0,
            batch_size=4096,
            device=device,
        )
        out["theory"][name] = th
        zmax = max(abs(x["z"]) for x in th["rows"])
        print(f"theory   {name:12s} max |z| = {zmax:.2f} over {len(th['rows'])} comparisons")
        out["speed"][name] = {}
        for B in sizes["speed_batches"]:
            sp = measure_speed(
                target,
                draft,
                heldout_windows(B, 32),
                sizes["speed_horizon"],
                sizes["speed_gammas"],
                repeats=2,  # >= 2: the held-out cost model
                device=device,
            )
            out["speed"][name][str(B)] = sp
            print(
                f"speed    {name:12s} batch {B:4d} c={sp['c']:.3f} "
                + " ".join(
                    f"g={x['gamma']}: {x['measured']:.2f}/{x['predicted_cost_model']:.2f}" for x in sp["rows"]
                )
            )
        real = [x for x in out["lossless"] if x["draft"] == name and x["rule"] == "decoder"][0]
        broken = [x for x in out["lossless"] if x["draft"] == name and x["rule"] != "decoder"][0]
        headline += [
            {
                "name": f"{run_label(device)} {name}: lossless p-value (real / broken rule)",
                "value": real["pvalue"],
                "note": f"broken rule p = {broken['pvalue']:.1e}, {sizes['lossless_samples']} samples, device {device}",
            },
            {
                "name": f"{run_label(device)} {name}: max |z| theory vs decoder",
                "value": zmax,
                "note": f"{sizes['theory_sequences']} sequences x {sizes['horizon']} tokens",
            },
            {
                "name": f"{run_label(device)} {name}: worst |measured / cost-model speedup - 1|",
                "value": max(
                    abs(x["ratio_cost_model"] - 1) for sp in out["speed"][name].values() for x in sp["rows"]
                ),
                "note": f"device {device}; measured / Leviathan's constant c: min "
                + f"{min(x['ratio'] for sp in out['speed'][name].values() for x in sp['rows']):.2f}",
            },
        ]
    out["trees"] = tree_section(
        target,
        load_model(drafts[0], device=device),
        drafts[0],
        device,
        q,
        law,
        prompt,
        sizes["lossless_samples"],
    )
    headline += out["trees"]["headline"]
    out["seconds"] = time.perf_counter() - t_all
    print(f"total {out['seconds']:.1f} s on {device}")
    print("wrote", write_result(args.out, "decoder_gpu", out, headline, device=device))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

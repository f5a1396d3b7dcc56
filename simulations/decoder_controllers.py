"""Engines' draft-length controllers on the shipped models: predicted time per token against the best fixed gamma and the hindsight oracle, with the decoder's measured value.

The shipped byte-level target with draft-small (CPU). One forward pass of each model along
target-sampled paths (spectheory.validation.policy_predict.policy_path_inputs, with draws of
the rejected drafted token's probability) predicts every runnable controller:
predict_controller plays it on the verification coins drawn along each path (path-conditional,
unbiased for the decoder's means; docs/stopping.md section 9). Time is in target calls: c per
draft step plus 1 per call. The reference is the best fixed gamma in 1..D (its prediction by
the same coins); the hindsight oracle (drafts the accepted length, but never to the end: a
round that would keep every token up to the horizon drafts one fewer and takes the bonus; a plain
call when none) is exact given each path: every oracle round emits its drafts plus one token, so
its drafts are T minus the fixed-D recursion's calls (docs/stopping.md section 10).
Two controllers are also run in the decoder and their measured time per token is compared
with the prediction (z within 5 in the headline).

Dynamic trees beside them (top-k children verified by ``tree_topk``): EAGLE-2's confidence tree
and OPT-Tree's rule (spectheory.kinds.dynamic.rules), predicted exactly given each path
(spectheory.validation.dynamic_trees: under ``tree_topk`` a round is a function of the target's
path; time c per kept drafted node plus 1 per call) and measured in the decoder
(dynamic_tree_generate; its kept nodes per row are recovered by replaying its own output
through the predictor, which also returns its target calls row by row). The per-state optimal
tree does not apply here: it reads the target's laws, which a drafter does not have (the decoder
refuses it); it is scored on chains (simulations/dynamic_trees.py). Writes
``decoder_controllers.json``.

Usage: python simulations/decoder_controllers.py [--quick] [--out DIR] [--target NAME] [--drafts a,b]
"""

from __future__ import annotations

import numpy as np
import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.app.results import headline
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.decoder.dynamic_tree import dynamic_tree_generate
from spectheory.decoder.speculative import speculative_generate
from spectheory.stopping import AcceptanceRateK, EMASteps, FixedGamma, HedgeGamma, HFSchedule, UCBGamma
from spectheory.stopping.along_paths import policy_round_dp
from spectheory.trees import Eagle2Tree, OptTree
from spectheory.validation import repeat_prompts, resolve_models, sample_paths
from spectheory.validation.dynamic_trees import dynamic_tree_along_paths
from spectheory.validation.policy_predict import measured_rates, policy_path_inputs, predict_controller

D = 7
ARMS = (1, 2, 3, 4, 6, 7)
COSTS = (0.05, 0.2)


def controllers(c):
    """The runnable controllers, by label (reward-driven ones read the cost ``c``)."""
    return {
        "HF schedule (+2/-1)": HFSchedule(2, max_depth=D),
        "vLLM adaptive K": AcceptanceRateK(max_depth=D),
        "SGLang adaptive steps": EMASteps((1, 3, 7)),
        "UCB bandit over gamma": UCBGamma(ARMS, cost=c),
        "HedgeSpec (NormalHedge)": HedgeGamma(ARMS, cost=c),
    }


MEASURED = ("vLLM adaptive K", "HedgeSpec (NormalHedge)")

#: (held-out prompts, target-sampled paths per prompt (the predictions), decoded sequences per
#: prompt (the measurements)), by mode
SIZES = {"full": (12, 8, 4), "quick": (2, 2, 1)}

#: Dynamic trees (draft-only rules: they run in the decoder), by label.
TREES = {
    "EAGLE-2 tree": Eagle2Tree(6, top_k=2, depth=4),
    "OPT-Tree": OptTree(4, threshold=0.1, max_depth=3),
}


def tree_rows(preds, c, ref, T):
    """Rows of the dynamic trees at cost ``c`` from their per-path rounds (exact given paths)."""
    rows = []
    for label, p in preds.items():
        t = (p["target_calls"] + c * p["draft_tokens"]) / T
        m, se = float(t.mean()), float(t.std(ddof=1) / np.sqrt(t.size))
        rows.append({"name": label, "ratio": m / ref, "ratio_se": se / ref, "time": m, "se": se, "c": c})
    return rows


def cell_rows(inputs, c, n_coins, rng):
    """Rows (label, ratio to the best fixed gamma, SE) of one draft at cost ``c``."""
    T = inputs["reject"].shape[1]
    fixed = {
        g: predict_controller(inputs, FixedGamma(g), c=c, n_coins=n_coins, rng=rng) for g in range(1, D + 1)
    }
    best = min(fixed, key=lambda g: fixed[g]["time_per_token"][0])
    ref, ref_se = fixed[best]["time_per_token"]
    dp = policy_round_dp(inputs["reject"], FixedGamma(D))
    oracle = (dp["target_calls"] + c * (T - dp["target_calls"])) / T  # drafts = T - calls
    rows = [
        {"name": f"best fixed gamma ({best})", "ratio": 1.0, "ratio_se": 0.0, "time": ref, "se": ref_se},
        {
            "name": "hindsight oracle",
            "ratio": float(oracle.mean() / ref),
            "ratio_se": float(oracle.std(ddof=1) / np.sqrt(oracle.size) / ref),
            "time": float(oracle.mean()),
            "se": float(oracle.std(ddof=1) / np.sqrt(oracle.size)),
        },
    ]
    for label, pol in controllers(c).items():
        p = predict_controller(inputs, pol, c=c, n_coins=n_coins, rng=rng)
        t, se = p["time_per_token"]
        rows.append({"name": label, "ratio": t / ref, "ratio_se": se / ref, "time": t, "se": se})
    for r in rows:
        r["c"] = c
    return rows, ref


def measured_check(rows, draft, c, label, measured):
    """The decoder's measured ``(time per token, SE)`` of ``label`` beside its prediction in ``rows``."""
    m, sm = measured
    pred = next(r for r in rows if r["name"] == label and r["c"] == c and r["chain"] == draft)
    return {
        "draft": draft,
        "c": c,
        "controller": label,
        "measured": m,
        "measured_se": sm,
        "predicted": pred["time"],
        "predicted_se": pred["se"],
        "z": float((m - pred["time"]) / np.hypot(sm, pred["se"])),
    }


def main(argv=None):
    args = decoder_script_parser(__doc__).parse_args(argv)
    # --quick: one torch thread (its forwards are too small for two, which wait on each other)
    torch.set_num_threads(1 if args.quick else args.threads)
    target_name, drafts = resolve_models(args.target, args.drafts or "draft-small")
    drafts = drafts[:1]
    # --quick (< 5 s with the imports): 6 tokens on 4 paths; the decoder runs one controller and
    # the EAGLE-2 tree on 2 sequences
    L, T = 16, (6 if args.quick else 24)
    n_prompts, per_prompt, meas_per_prompt = SIZES["quick" if args.quick else "full"]
    n_coins = 2 if args.quick else 8
    prompts = heldout_windows(n_prompts, L)
    # repeat_prompts(prompts, n) returns n rows in all (cycling through the prompts), so every
    # prompt gets per_prompt paths and meas_per_prompt decoded sequences
    pr = repeat_prompts(prompts, n_prompts * meas_per_prompt)
    target = load_model(target_name, device=args.device)
    paths = sample_paths(
        target, repeat_prompts(prompts, n_prompts * per_prompt), T, seed=60_000_011, device=args.device
    )
    rows, checks = [], []
    for name in drafts:
        draft = load_model(name, device=args.device)
        inputs = policy_path_inputs(target, draft, paths, L, rejected_draws=2, seed=5, device=args.device)
        rng = np.random.default_rng(0)
        trees = dict(list(TREES.items())[:1]) if args.quick else TREES
        preds = {
            label: dynamic_tree_along_paths(draft, paths, L, rule, device=args.device)
            for label, rule in trees.items()
        }
        for c in COSTS:
            cell, ref = cell_rows(inputs, c, n_coins, rng)
            for r in cell:
                r["chain"] = name
                r["scored"] = "exact given paths" if r["name"] == "hindsight oracle" else "Monte Carlo"
            for r in tree_rows(preds, c, ref, T):
                r.update(chain=name, scored="exact given paths", kind="dynamic tree")
                cell.append(r)
            rows += cell
        c = COSTS[0]
        for label in MEASURED[-1:] if args.quick else MEASURED:
            pol = controllers(c)[label]
            res = speculative_generate(
                target, draft, list(pr), T, gamma=D, policy=pol, seed=7, device=args.device
            )
            measured = measured_rates(res.stats.target_calls, res.stats.draft_tokens, T, c=c)
            checks.append(measured_check(rows, name, c, label, measured["time_per_token"]))
        for label, rule in trees.items():  # the dynamic trees in the decoder
            res = dynamic_tree_generate(target, draft, list(pr), T, rule, seed=7, device=args.device)
            own = np.concatenate([np.asarray(pr, dtype=np.int64), np.stack(res.tokens)], axis=1)
            replay = dynamic_tree_along_paths(draft, own, L, rule, device=args.device)
            calls = np.asarray(res.stats.target_calls, dtype=np.float64)
            measured = measured_rates(calls, replay["draft_tokens"], T, c=c)
            check = measured_check(rows, name, c, label, measured["time_per_token"])
            check["replayed_calls_equal"] = float(np.mean(replay["target_calls"] == calls))
            checks.append(check)
    zmax = max(abs(ch["z"]) for ch in checks)
    heads = [
        headline(
            "decoder_controllers: max |z| measured vs predicted time per token",
            zmax,
            note="must stay below 5",
        ),
    ]
    for r in rows:
        if r["name"] == "hindsight oracle":
            heads.append(
                headline(
                    f"decoder_controllers: oracle / best fixed gamma, {r['chain']}, c={r['c']}",
                    r["ratio"],
                    r["ratio_se"],
                )
            )
    data = {
        "T": T,
        "max_depth": D,
        "rows": rows,
        "checks": checks,
        "n_prompts": n_prompts,
        "n_paths": int(paths.shape[0]),
        "n_measured": len(pr),
        "n_coins": n_coins,
    }
    path = write_result(args.out, "decoder_controllers", data, heads, device=args.device)
    print(f"wrote {path}; max |z| = {zmax:.2f}")
    if zmax > 5:
        raise SystemExit(f"measured vs predicted time per token: |z| = {zmax:.2f} > 5")


if __name__ == "__main__":
    main()

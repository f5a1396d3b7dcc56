"""Drafts of a real LLM with its own tokenizer, by two routes (SmolLM2-135M, issue 38 item 2): distillation or compression?

Drafts (load_model names; spectheory.decoder.real_drafts): the distilled draft trained in the
repository on the target's own samples (2 layers, simulations/train_real_draft.py), and the
compression drafts made from the target when loaded: early exit after 2 layers (exit2), dynamic
int8 linears (int8), 4-bit fake-quantised layers in groups of 64 (int4: the law of such a model at
float speed, no int4 kernel here; the target is itself the Q4_1 GGUF, 4 bits in groups of 32), rank-128 SVD of every layer linear (lowrank); and prompt
lookup (the retrieval draft, no weights). For each, on held-out prompts (none used in training):

1. Exact per-position acceptance along N target-sampled paths (spectheory.validation.path_statistics:
   alpha_n = 1 - TV(p_n, q_n) before every token; mean and SE over paths), the rejection
   probabilities of the tokens taken, and from them the predicted tokens per target call and
   draft tokens per call at every gamma (the exact round programme along the paths:
   spectheory.validation.predict.rb_predictions; for prompt lookup, whose rounds draft as far as
   its match goes, spectheory.validation.predict.round_dp with the draft's
   proposal_cap at every round start).
2. Measured costs: one cached forward of one token at context L + T/2, batch 1
   (spectheory.cost.measure.time_forward, the fastest of 15 repeats), for the draft (t_D) and the target
   (t_T(1), and t_T(gamma + 1) for the verification call); cost ratio c = t_D / t_T(1).
3. gamma per draft = the one in 1..6 with the largest predicted speedup
   T (t_T(1) + o) / (E[calls] (t_T(1) + o) + E[draft tokens] (s + t_D)), s = (t_T(gamma + 1) -
   t_T(1)) / gamma the target's cost of one more scored token (a round drafting k tokens costs k
   draft steps and a target call over k + 1 tokens; prompt lookup's rounds without a match are
   plain steps) and o the decoder's work per round outside the bare forwards (sampling laws over
   the 49,152 tokens, cache bookkeeping, the prefill spread over the tokens), measured once on
   the autoregressive runs: o = (their seconds per token) - t_T(1); a draft step's own work
   beyond its forward is not priced. At that gamma the package's decoder runs N sequences
   (measured tokens per call, z against the prediction) and, at batch 1 on P prompts, the
   wall-clock speedup over the autoregressive runs (ratio of summed times, SE by the delta
   method over prompts).

One thread (the number of a single-core budget; on a shared machine the wall-clock speedups
carry the other jobs' noise, the per-token laws do not). Results: results/real_drafts.json;
figure: figures/fig35_real_drafts.py; discussion: docs/real_model.md.

--quick: 3 drafts (distilled, exit2, prompt lookup), 4 paths of 6 tokens (seconds; for the tests).

Usage: python simulations/real_drafts.py [--quick] [--out DIR] [--drafts a,b]
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result

TARGET = "smollm2-135m"
#: Held-out prompts: none of them is among simulations/train_real_draft.py's.
PROMPTS = (
    "The little boat drifted slowly across the lake while",
    "Good morning everyone, today we are going to talk about",
    "The new phone has a bigger screen, a faster chip and",
    "In the winter the birds fly south because the",
    "Here are five tips for staying focused while working from home:",
    "The detective opened the door and saw that the room",
    "Bread, milk, eggs and cheese are on the shopping list, and",
    "The city council voted on Tuesday to build a new",
)
DRAFTS = ("distilled", "exit2", "int8", "int4", "lowrank", "prompt-lookup")
QUICK_DRAFTS = ("distilled", "exit2", "prompt-lookup")
GAMMAS = (1, 2, 3, 4, 5, 6)


def load(target, body: str):
    from spectheory.decoder import load_model
    from spectheory.decoder.real_drafts import make_draft

    if body == "prompt-lookup":
        draft = load_model("prompt-lookup")
        draft.adopt_vocab(target.vocab_size)
        return draft, "prompt-lookup", "retrieval"
    draft = make_draft(target, f"{TARGET}:{body}")
    from spectheory.decoder.real_drafts import parse_draft_name

    return draft, draft.pretrained_name, parse_draft_name(draft.pretrained_name).family


class Memo:
    """``model`` whose plain calls (no cache) are remembered: the target's laws along the paths
    are computed once for every draft."""

    def __init__(self, model):
        self.model, self.memo = model, {}

    def __getattr__(self, name):
        return getattr(self.model, name)

    def __call__(self, ids, *args, **kwargs):
        if args or kwargs:
            return self.model(ids, *args, **kwargs)
        key = (tuple(ids.shape), ids.cpu().numpy().tobytes())
        if key not in self.memo:
            self.memo[key] = self.model(ids)
        return self.memo[key]


def predictions(draft, stats, paths, L: int, T: int, retrieval: bool) -> dict:
    """Predicted calls and draft tokens per gamma: ``{gamma: (calls mean, SE, drafts mean, SE)}``."""
    from spectheory.validation.path_stats import mean_se, proposal_caps
    from spectheory.validation.predict import rb_predictions, round_dp

    out = {}
    if retrieval:
        for g in GAMMAS:
            dp = round_dp(stats.reject, g, True, proposal_caps(draft, paths, L, g))
            (cm, cs), (dm, ds) = mean_se(dp["target_calls"]), mean_se(dp["draft_tokens"])
            out[g] = (float(cm), float(cs), float(dm), float(ds))
        return out
    pred = rb_predictions(stats, GAMMAS, (True,))
    for g in GAMMAS:
        p = pred[(g, True)]
        out[g] = (*map(float, p["target_calls"]), *map(float, p["draft_tokens"]))
    return out


def forward_seconds(model, tokens: int, context: int, repeats: int) -> float:
    from spectheory.cost.measure import time_forward

    # the fastest of the repeats: on a shared machine the other jobs only ever add time
    return float(np.min(time_forward(model, 1, tokens, context, repeats=repeats, warmup=2, rng=0)))


def decode_seconds(target, draft, prompts, T: int, gamma: int) -> list[float]:
    """Seconds per prompt of the speculative decoder at batch 1 (``draft=None``: the plain one)."""
    from spectheory.decoder.speculative import autoregressive_generate, speculative_generate

    out = []
    for i, p in enumerate(prompts):
        t0 = time.perf_counter()
        if draft is None:
            autoregressive_generate(target, [list(p)], T, seed=100 + i)
        else:
            speculative_generate(target, draft, [list(p)], T, gamma, seed=100 + i)
        out.append(time.perf_counter() - t0)
    return out


def speedup(
    T: int, calls: float, drafts: float, t_target: dict, t_draft: float, gamma: int, overhead: float = 0.0
) -> float:
    """Predicted speedup over plain decoding (module docstring, item 3; ``overhead`` = o)."""
    slope = (t_target[gamma + 1] - t_target[1]) / gamma
    step = t_target[1] + overhead
    return T * step / (calls * step + drafts * (slope + t_draft))


def ratio_se(num: np.ndarray, den: np.ndarray) -> tuple[float, float]:
    """``sum(num) / sum(den)`` and its delta-method SE over the paired items."""
    r = num.sum() / den.sum()
    n = len(num)
    resid = num - r * den
    se = np.sqrt(resid.var(ddof=1) * n) / den.sum() if n > 1 else float("nan")
    return float(r), float(se)


def main(argv=None):
    from spectheory._progress import progress_range
    from spectheory.decoder import load_model, pretrained
    from spectheory.validation.path_stats import (
        mean_se,
        path_statistics,
        repeat_prompts,
        sample_paths,
        zscore,
    )
    from spectheory.validation.predict import measure_decoder

    ap = decoder_script_parser(__doc__, threads=1)
    ap.add_argument(
        "--append", action="store_true", help="keep the other drafts' rows of an existing results file"
    )
    args = ap.parse_args(argv)
    if not pretrained.is_available(TARGET):
        print(f"real_drafts: skipped: {pretrained.INSTALL_HINT}")
        return 0
    torch.set_num_threads(args.threads)
    q = args.quick
    names = args.drafts.split(",") if args.drafts else list(QUICK_DRAFTS if q else DRAFTS)
    n_paths, n_seq, T, n_speed, reps = (4, 2, 6, 1, 2) if q else (48, 16, 32, 4, 15)
    target = load_model(TARGET, device=args.device)
    tok = target.tokenizer
    enc = [tok.encode(t) for t in PROMPTS]
    L = min(len(e) for e in enc)
    prompts = np.array([e[:L] for e in enc], dtype=np.int64)[: 2 if q else None]
    t0 = time.perf_counter()
    paths = sample_paths(target, repeat_prompts(prompts, n_paths), T, seed=0, batch_size=16)
    print(
        f"{len(paths)} target paths of {T} tokens after {L}-token prompts in {time.perf_counter() - t0:.0f} s"
    )
    ctx = L + T // 2
    t_target = {m: forward_seconds(target, m, ctx, reps) for m in sorted({1, *(g + 1 for g in GAMMAS)})}
    # the plain decoder first: its seconds are every row's baseline, and they price o
    ar_seconds = decode_seconds(target, None, prompts[:n_speed], T, 1)
    overhead = float(np.median(ar_seconds)) / T - t_target[1]
    print(
        f"autoregressive: {np.median(ar_seconds) / T * 1e3:.1f} ms a token, o = {overhead * 1e3:.1f} ms a round"
    )
    rows, memo = [], Memo(target)
    for i in progress_range(len(names), "drafts"):
        t_start = time.perf_counter()
        try:
            draft, name, family = load(target, names[i])
        except ValueError as err:  # a distilled draft not trained yet
            print(f"{names[i]}: skipped: {err}")
            continue
        retrieval = family == "retrieval"
        stats = path_statistics(memo, draft, paths, L, batch_size=8)
        alpha_m, alpha_s = mean_se((1.0 - stats.tv).mean(1))
        pred = predictions(draft, stats, paths, L, T, retrieval)
        t_draft = forward_seconds(draft, 1, ctx, reps)
        speedups = {g: speedup(T, pred[g][0], pred[g][2], t_target, t_draft, g, overhead) for g in GAMMAS}
        g = max(GAMMAS, key=speedups.__getitem__)
        meas = measure_decoder(
            target, draft, repeat_prompts(prompts, n_seq), T, g, True, seed=1, batch_size=16
        )
        cm, cs = mean_se(meas["target_calls"])
        pc, pcs = pred[g][0], pred[g][1]
        spec = decode_seconds(target, draft, prompts[:n_speed], T, g)
        speed, speed_se = ratio_se(np.array(ar_seconds), np.array(spec))
        row = {
            "draft": name,
            "family": family,
            "alpha": float(alpha_m),
            "alpha_se": float(alpha_s),
            "alpha_profile": (1.0 - stats.tv).mean(0).tolist(),
            "accept_token": float(stats.accept.mean()),
            "draft_seconds": t_draft,
            "target_seconds": {str(k): v for k, v in t_target.items()},
            "cost_ratio": t_draft / t_target[1],
            "gamma": g,
            "verify_ratio": t_target[g + 1] / t_target[1],
            "predicted_tokens_per_call": T / pc,
            "predicted_tokens_per_call_se": T * pcs / pc**2,
            "measured_tokens_per_call": T / cm,
            "measured_tokens_per_call_se": T * cs / cm**2,
            "z": float(zscore(pc, pcs, cm, cs)),
            "predicted_speedup": speedups[g],
            "measured_speedup": speed,
            "measured_speedup_se": speed_se,
            "autoregressive_seconds": ar_seconds,
            "round_overhead_seconds": overhead,
            "speculative_seconds": spec,
            "by_gamma": {
                str(k): {"calls": v[0], "calls_se": v[1], "draft_tokens": v[2], "speedup": speedups[k]}
                for k, v in pred.items()
            },
            "seconds": time.perf_counter() - t_start,
        }
        rows.append(row)
        print(
            f"{name:26s} alpha {row['alpha']:.4f} +- {row['alpha_se']:.4f}  c {row['cost_ratio']:.3f}  gamma {g}  "
            f"tokens/call {row['predicted_tokens_per_call']:.3f} +- {row['predicted_tokens_per_call_se']:.3f} "
            f"(measured {row['measured_tokens_per_call']:.3f} +- {row['measured_tokens_per_call_se']:.3f}, "
            f"z = {row['z']:+.2f})  speedup predicted {speedups[g]:.3f}, measured {speed:.3f} +- {speed_se:.3f}"
        )
        del draft
    if args.append:
        import json

        from spectheory.app.results import default_results_dir

        old = Path(args.out or default_results_dir(__file__)) / "real_drafts.json"
        if old.exists():
            done = {r["draft"] for r in rows}
            prev = json.loads(old.read_text())
            for r in prev["rows"]:
                if r["draft"] in done:
                    continue
                tt = {int(k): v for k, v in r.get("target_seconds", prev["target_seconds"]).items()}
                r["target_seconds"] = {str(k): v for k, v in tt.items()}
                o = r.get("round_overhead_seconds", 0.0)
                for k, b in r["by_gamma"].items():  # the speedup model of this version
                    b["speedup"] = speedup(
                        T, b["calls"], b["draft_tokens"], tt, r["draft_seconds"], int(k), o
                    )
                r["predicted_speedup"] = r["by_gamma"][str(r["gamma"])]["speedup"]
                rows.append(r)
            order = {name: i for i, name in enumerate(DRAFTS)}
            rows.sort(key=lambda r: order.get(r["draft"].split(":")[-1].split("-")[0], len(order)))
    info = None
    try:
        from spectheory.decoder.real_drafts_distilled import distilled_info

        info = distilled_info(TARGET)
    except ValueError:
        pass
    best = max(rows, key=lambda r: r["predicted_speedup"])
    heads = [
        {
            "name": f"real LLM drafts: best predicted speedup ({best['draft']})",
            "value": best["predicted_speedup"],
            "note": f"measured {best['measured_speedup']:.3f} +- {best['measured_speedup_se']:.3f}, 1 thread, batch 1",
        },
        {
            "name": "real LLM drafts: predicted tokens per call within 5 SE of the decoder's",
            "value": f"{sum(abs(r['z']) < 5 for r in rows)}/{len(rows)}",
        },
    ] + [
        {
            "name": f"real LLM draft {r['draft']}: acceptance 1 - E[TV]",
            "value": r["alpha"],
            "se": r["alpha_se"],
        }
        for r in rows
    ]
    data = {
        "target": TARGET,
        "prompts": [tok.decode(p) for p in prompts],
        "prompt_tokens": L,
        "horizon": T,
        "paths": n_paths,
        "sequences": n_seq,
        "speed_prompts": n_speed,
        "context": ctx,
        "target_seconds": {str(k): v for k, v in t_target.items()},
        "autoregressive_seconds": ar_seconds,
        "gammas": list(GAMMAS),
        "rows": rows,
        "distillation": info,
    }
    path = write_result(args.out, "real_drafts", data, heads, device=args.device)
    print("wrote", path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

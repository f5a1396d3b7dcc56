"""Drafts distilled on target samples against the shipped draft-tiny and draft-small: measured on the decoder, predictions beside (issue 26, item 3).

Two groups, each a shipped draft (trained by cross-entropy on the corpus) and its fine-tunes on
target samples, same budget (``simulations/train_distilled.py``; cached weights in
``spectheory/objectives/weights/``, never retrained here): draft-tiny by forward KL and TV;
draft-small by forward KL, TV and the multi-step objective (gamma = 4). For each against the
shipped target: the held-out acceptance recorded at training time, the Rao-Blackwellised
prediction of tokens per call along target paths (gamma = 4, bonus on), paired against the
group's shipped draft, and the decoder's measurement (spectheory.validation.compare_theory),
with |z| over the combined SE; then, for the draft-small group, paired predictions along a
larger set of target paths at gamma 1 and 4 (``paired``). Writes ``distilled_drafts.json``
into ``--out``.

Usage: python simulations/distilled_drafts.py [--quick] [--out DIR]
"""

from __future__ import annotations

import json
import os
import time

import numpy as np
import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.app.results import headline
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.decoder.model import GPT, GPTConfig
from spectheory.decoder.registry import WEIGHTS_DIR
from spectheory.decoder.rng import derive_seed
from spectheory.validation import (
    mean_se,
    measure_decoder,
    path_statistics,
    repeat_prompts,
    round_dp,
    sample_paths,
    zscore,
)

DISTILLED = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spectheory", "objectives", "weights"
)
#: Each group: a shipped draft (the base of its paired differences) and its distillations.
GROUPS = (
    (("draft-tiny", WEIGHTS_DIR), ("draft-tiny-fkl", DISTILLED), ("draft-tiny-tv", DISTILLED)),
    (
        ("draft-small", WEIGHTS_DIR),
        ("draft-small-fkl", DISTILLED),
        ("draft-small-tv", DISTILLED),
        ("draft-small-ms4", DISTILLED),
    ),
)
GAMMA = 4


def load_draft(folder, name, device):
    """A GPT draft from ``folder`` (``<name>.json`` with its ``config`` and fp16 weights file)."""
    meta = json.load(open(os.path.join(folder, f"{name}.json")))
    model = GPT(GPTConfig(**meta["config"]))
    state = torch.load(os.path.join(folder, meta["weights_file"]), map_location="cpu", weights_only=True)
    model.load_state_dict({k: v.float() for k, v in state.items()})
    return model.to(device=device).eval(), meta


def ratio_se(num, den):
    """Pooled ``sum num / sum den`` over paths and its delta-method SE."""
    n = len(num)
    r = num.sum() / den.sum()
    lin = (num - r * den) / den.mean()
    return float(r), float(lin.std(ddof=1) / np.sqrt(n))


def paired_tpc(calls_a, calls_b, T):
    """Tokens per call ``T / mean(calls_a) - T / mean(calls_b)`` over paired paths, delta-method SE."""
    ma, mb = calls_a.mean(), calls_b.mean()
    lin = -T / ma**2 * (calls_a - ma) + T / mb**2 * (calls_b - mb)
    return float(T / ma - T / mb), float(lin.std(ddof=1) / np.sqrt(len(calls_a)))


def paired_predictions(target, group, quick, device):
    """Rao-Blackwellised tokens per call of every draft of ``group`` along one larger set of
    target paths (128 of 32 bytes; quick: 8 of 8), gamma 1 and 4, paired differences against
    the group's base (its first draft) and its forward-KL distillation (its second)."""
    n, T = (8, 8) if quick else (128, 32)
    prompts = repeat_prompts(heldout_windows(n, 16), n)
    tpaths = sample_paths(target, prompts, T, derive_seed(0, 2), device=device)
    calls = {}
    for name, folder in group:
        draft, _ = load_draft(folder, name, device)
        st = path_statistics(target, draft, tpaths, prompts.shape[1], device=device)
        for g in (1, GAMMA):
            calls[name, g] = round_dp(st.reject, g, True)["target_calls"]
    out = []
    for g in (1, GAMMA):
        for versus in (group[0][0], group[1][0]):
            for name, _ in group[1:]:
                if name != versus:
                    d, se = paired_tpc(calls[name, g], calls[versus, g], T)
                    out.append(
                        {
                            "draft": name,
                            "versus": versus,
                            "gamma": g,
                            "paths": n,
                            "horizon": T,
                            "tokens_per_call": float(T / calls[name, g].mean()),
                            "difference": d,
                            "se": se,
                        }
                    )
    return out


def main(argv=None):
    args = decoder_script_parser(__doc__).parse_args(argv)
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    N, T = (8, 8) if args.quick else (24, 24)
    prompts = repeat_prompts(heldout_windows(8 if args.quick else 16, 16), N)
    L = prompts.shape[1]
    target = load_model("target", device=args.device)
    tpaths = sample_paths(target, prompts, T, derive_seed(0, 1), device=args.device)
    rows, heads = [], []
    for group in GROUPS:
        base = None
        for name, folder in group:
            draft, meta = load_draft(folder, name, args.device)
            st = path_statistics(target, draft, tpaths, L, device=args.device)
            dp = round_dp(st.reject, GAMMA, True)
            accepted = dp["counts"] @ np.arange(GAMMA + 1)
            pred_calls = dp["target_calls"]
            meas = measure_decoder(target, draft, prompts, T, GAMMA, True, seed=0, device=args.device)
            tpc_p, tpc_pse = mean_se(pred_calls)
            tpc_m, tpc_mse = mean_se(meas["target_calls"])
            acc_p = ratio_se(accepted, accepted + dp["rejections"])
            acc_m = ratio_se(meas["accepted"], meas["checked"])
            if base is None:
                base = (name, pred_calls)
            d_calls = T / pred_calls.mean() - T / base[1].mean()
            lin = -T / pred_calls.mean() ** 2 * (pred_calls - pred_calls.mean()) + T / base[1].mean() ** 2 * (
                base[1] - base[1].mean()
            )
            d_se = float(lin.std(ddof=1) / np.sqrt(N))
            z = zscore(tpc_p, tpc_pse, tpc_m, tpc_mse)
            row = {
                "draft": name,
                "base": base[0],
                "objective": meta.get("training", {}).get("objective", "cross-entropy on the corpus"),
                "heldout_acceptance": meta["acceptance_vs_target"]["mean"],
                "heldout_acceptance_se": meta["acceptance_vs_target"]["se"],
                "acceptance_target_paths": float(1.0 - st.tv.mean()),
                "accepted_fraction_predicted": acc_p,
                "accepted_fraction_measured": acc_m,
                "tokens_per_call_predicted": [T / tpc_p, T * tpc_pse / tpc_p**2],
                "tokens_per_call_measured": [T / tpc_m, T * tpc_mse / tpc_m**2],
                "tokens_per_call_predicted_minus_base": [float(d_calls), d_se],
                "z_calls": float(z),
            }
            rows.append(row)
            print(
                f"{name:15s} held-out acc {row['heldout_acceptance']:.4f}, on target paths "
                f"{row['acceptance_target_paths']:.4f}; accepted/checked pred {acc_p[0]:.3f} meas {acc_m[0]:.3f}; "
                f"tokens/call pred {T / tpc_p:.3f} ± {T * tpc_pse / tpc_p**2:.3f}, meas {T / tpc_m:.3f} ± "
                f"{T * tpc_mse / tpc_m**2:.3f} (z = {z:+.2f}); vs {base[0]} {d_calls:+.3f} ± {d_se:.3f}"
            )
            heads.append(
                headline(
                    f"distilled drafts: {name} tokens per call (gamma={GAMMA}, T={T}), measured",
                    T / tpc_m,
                    se=T * tpc_mse / tpc_m**2,
                    note=f"predicted {T / tpc_p:.3f} ± {T * tpc_pse / tpc_p**2:.3f}; "
                    f"predicted vs {base[0]} {d_calls:+.3f} ± {d_se:.3f} (paired)",
                )
            )
    paired = paired_predictions(target, GROUPS[1], args.quick, args.device)
    for p in paired:
        print(
            f"paired, {p['paths']} paths of {p['horizon']}: gamma={p['gamma']} {p['draft']} - {p['versus']} "
            f"{p['difference']:+.4f} ± {p['se']:.4f} (tokens/call {p['tokens_per_call']:.3f})"
        )
    best = max(
        (p for p in paired if p["gamma"] == GAMMA and p["versus"] == GROUPS[1][0][0]),
        key=lambda p: p["difference"],
    )
    heads.append(
        headline(
            f"distilled drafts: best draft-small-sized distillation, predicted tokens per call gain (gamma={GAMMA}, "
            f"{best['paths']} paths)",
            best["difference"],
            se=best["se"],
            note=f"{best['draft']} - {best['versus']}, paired",
        )
    )
    seconds = time.perf_counter() - t0
    path = write_result(
        args.out,
        "distilled_drafts",
        {
            "gamma": GAMMA,
            "horizon": T,
            "sequences": N,
            "bonus": True,
            "rows": rows,
            "paired": paired,
            "seconds": seconds,
        },
        heads,
        device=args.device,
    )
    print(f"{seconds:.1f} s; wrote {path}")
    return 0 if all(abs(r["z_calls"]) < 5 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

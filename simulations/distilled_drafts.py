"""Drafts distilled on target samples against the shipped draft-tiny: measured on the decoder, predictions beside (issue 26, item 3).

The shipped draft-tiny (trained by cross-entropy on the corpus) and its two fine-tunes on
target samples, same budget, by forward KL and by TV (``simulations/train_distilled.py``;
cached weights in ``spectheory/objectives/weights/``, never retrained here). For each against
the shipped target: the held-out acceptance recorded at training time, the Rao-Blackwellised
prediction of tokens per call along target paths (gamma = 4, bonus on) and the decoder's
measurement (spectheory.validation.compare_theory), with |z| over the combined SE. Writes
``distilled_drafts.json`` into ``--out``.

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
DRAFTS = (("draft-tiny", WEIGHTS_DIR), ("draft-tiny-fkl", DISTILLED), ("draft-tiny-tv", DISTILLED))
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


def main(argv=None):
    args = decoder_script_parser(__doc__).parse_args(argv)
    torch.set_num_threads(args.threads)
    t0 = time.perf_counter()
    N, T = (8, 8) if args.quick else (24, 24)
    prompts = repeat_prompts(heldout_windows(8 if args.quick else 16, 16), N)
    L = prompts.shape[1]
    target = load_model("target", device=args.device)
    tpaths = sample_paths(target, prompts, T, derive_seed(0, 1), device=args.device)
    rows, heads, base = [], [], None
    for name, folder in DRAFTS:
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
            base = (pred_calls, 1.0 - st.tv.mean(1))
        d_calls = T / pred_calls.mean() - T / base[0].mean()
        lin = -T / pred_calls.mean() ** 2 * (pred_calls - pred_calls.mean()) + T / base[0].mean() ** 2 * (
            base[0] - base[0].mean()
        )
        z = zscore(tpc_p, tpc_pse, tpc_m, tpc_mse)
        row = {
            "draft": name,
            "objective": meta.get("training", {}).get("objective", "cross-entropy on the corpus"),
            "heldout_acceptance": meta["acceptance_vs_target"]["mean"],
            "heldout_acceptance_se": meta["acceptance_vs_target"]["se"],
            "acceptance_target_paths": float(1.0 - st.tv.mean()),
            "accepted_fraction_predicted": acc_p,
            "accepted_fraction_measured": acc_m,
            "tokens_per_call_predicted": [T / tpc_p, T * tpc_pse / tpc_p**2],
            "tokens_per_call_measured": [T / tpc_m, T * tpc_mse / tpc_m**2],
            "tokens_per_call_predicted_minus_draft_tiny": [
                float(d_calls),
                float(lin.std(ddof=1) / np.sqrt(N)),
            ],
            "z_calls": float(z),
        }
        rows.append(row)
        print(
            f"{name:15s} held-out acc {row['heldout_acceptance']:.4f}, on target paths {row['acceptance_target_paths']:.4f}; "
            f"accepted/checked pred {acc_p[0]:.3f} meas {acc_m[0]:.3f}; tokens/call pred "
            f"{T / tpc_p:.3f} ± {T * tpc_pse / tpc_p**2:.3f}, meas {T / tpc_m:.3f} ± {T * tpc_mse / tpc_m**2:.3f} "
            f"(z = {z:+.2f}); vs draft-tiny {d_calls:+.3f} ± {row['tokens_per_call_predicted_minus_draft_tiny'][1]:.3f}"
        )
        heads.append(
            headline(
                f"distilled drafts: {name} tokens per call (gamma={GAMMA}, T={T}), measured",
                T / tpc_m,
                se=T * tpc_mse / tpc_m**2,
                note=f"predicted {T / tpc_p:.3f} ± {T * tpc_pse / tpc_p**2:.3f}; "
                f"predicted vs draft-tiny {d_calls:+.3f} ± {row['tokens_per_call_predicted_minus_draft_tiny'][1]:.3f} (paired)",
            )
        )
    seconds = time.perf_counter() - t0
    path = write_result(
        args.out,
        "distilled_drafts",
        {"gamma": GAMMA, "horizon": T, "sequences": N, "bonus": True, "rows": rows, "seconds": seconds},
        heads,
        device=args.device,
    )
    print(f"{seconds:.1f} s; wrote {path}")
    return 0 if all(abs(r["z_calls"]) < 5 for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

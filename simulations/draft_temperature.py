"""The draft temperature (issue 26): the exact optimal draft temperature for a given target temperature, on chains and on the shipped pair, against HuggingFace's default of 1.5.

Chains: the draft-objective lab's targets (second-order, V = 6, visible 0.6; concentration
0.2, 1, 5) with their forward-KL draft (the draft sees the last token); target temperature
0.5, 1 and 1.5; the draft temperature maximising exact tokens per call (T = 32, gamma 4,
bonus on), against tau_d = tau_t and tau_d = 1.5. Shipped pair: the shipped target and
draft-small; target paths sampled at tau_t = 0.7 and 1 after held-out prompts, both models'
logits computed once along them, tokens per call for every draft temperature of a grid
(Rao-Blackwellised round bookkeeping given the paths, spectheory.objectives.temperature_sweep),
with paired standard errors of the differences. Writes ``draft_temperature.json`` into ``--out``.

Usage: python simulations/draft_temperature.py [--quick] [--out DIR]
"""

from __future__ import annotations

import time

import numpy as np
import torch

from spectheory.app.results import headline, script_parser, write_results
from spectheory.objectives import (
    TiedDraft,
    context_chain,
    fit_draft,
    optimal_draft_temperature,
    temperature_sweep,
    tempered_chain,
)

HF_DEFAULT = 1.5
T_CHAIN = 32


def tpc(chain, tt, td, g):
    """Exact tokens per call with the target at ``tt`` and the draft at ``td``."""
    return tempered_chain(chain, tt, td).protocol(T_CHAIN, g).tokens_per_call


def paired(calls, T, i, j):
    """Tokens-per-call difference tau_i - tau_j and its SE, paired over the paths (delta method
    on the per-path pair of expected calls)."""
    N = calls.shape[1]
    mi, mj = calls[i].mean(), calls[j].mean()
    lin = -T / mi**2 * (calls[i] - mi) + T / mj**2 * (calls[j] - mj)
    return float(T / mi - T / mj), float(np.sqrt((lin**2).sum() / (N * (N - 1))))


def chain_rows(quick):
    rows = []
    concs = (0.2,) if quick else (0.2, 1.0, 5.0)
    for i, conc in enumerate(concs):
        target = context_chain(6, conc, 0.6, rng=200 + i)
        draft = fit_draft(target, TiedDraft.last_token(6), "forward_kl", T_CHAIN).chain
        for tt in (1.0,) if quick else (0.5, 1.0, 1.5):
            for g in (4,):
                best = optimal_draft_temperature(draft, T_CHAIN, g, tt, grid=9 if quick else 13)

                rows.append(
                    {
                        "concentration": conc,
                        "target_temperature": tt,
                        "gamma": g,
                        "best_draft_temperature": best.temperature,
                        "tokens_per_call_best": best.tokens_per_call,
                        "tokens_per_call_same": tpc(draft, tt, tt, g),
                        "tokens_per_call_hf": tpc(draft, tt, HF_DEFAULT, g),
                    }
                )
    return rows


def shipped_rows(quick):
    from spectheory.decoder import load_model
    from spectheory.decoder.corpus import heldout_windows

    torch.set_num_threads(1)
    target = load_model("target")
    draft = load_model("draft-small")
    N, T = (8, 12) if quick else (32, 32)
    prompts = heldout_windows(4 if quick else 16, 16)
    taus = np.round(np.arange(0.5, 2.51, 0.5 if quick else 0.1), 2)
    gammas = [4] if quick else [1, 4]
    out = []
    for tt in (1.0,) if quick else (0.7, 1.0):
        sw = temperature_sweep(target, draft, prompts, T, N, 7, tt, taus, gammas)
        for b, g in enumerate(gammas):
            calls = sw["calls"][:, b]  # [n_tau, N]
            k = int(np.argmax(sw["tokens_per_call"][:, b]))

            same = int(np.argmin(np.abs(taus - tt)))
            hf = int(np.argmin(np.abs(taus - HF_DEFAULT)))
            out.append(
                {
                    "model": "draft-small",
                    "target_temperature": tt,
                    "gamma": g,
                    "paths": N,
                    "horizon": T,
                    "draft_temperatures": taus.tolist(),
                    "tokens_per_call": sw["tokens_per_call"][:, b].tolist(),
                    "tokens_per_call_se": sw["tokens_per_call_se"][:, b].tolist(),
                    "acceptance": sw["acceptance"].tolist(),
                    "best_draft_temperature": float(taus[k]),
                    "best_minus_same": paired(calls, T, k, same),
                    "best_minus_hf": paired(calls, T, k, hf),
                    "same_minus_hf": paired(calls, T, same, hf),
                }
            )
    return out


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    t0 = time.perf_counter()
    rows = chain_rows(args.quick)
    print(f"chains (T = {T_CHAIN}): best draft temperature for each target temperature")
    print(f"{'conc':>5} {'tau_t':>5} {'g':>2} {'tau_d*':>7} {'tpc*':>7} {'tpc same':>8} {'tpc 1.5':>8}")
    for r in rows:
        print(
            f"{r['concentration']:5g} {r['target_temperature']:5g} {r['gamma']:2d} {r['best_draft_temperature']:7.3f} "
            f"{r['tokens_per_call_best']:7.4f} {r['tokens_per_call_same']:8.4f} {r['tokens_per_call_hf']:8.4f}"
        )
    shipped = shipped_rows(args.quick)
    print("shipped target + draft-small (Rao-Blackwellised along target paths)")
    for r in shipped:
        print(
            f"tau_t={r['target_temperature']:g} gamma={r['gamma']}: tau_d* = {r['best_draft_temperature']:g}; "
            f"best - same = {r['best_minus_same'][0]:+.4f} ± {r['best_minus_same'][1]:.4f}, "
            f"best - 1.5 = {r['best_minus_hf'][0]:+.4f} ± {r['best_minus_hf'][1]:.4f}"
        )
    seconds = time.perf_counter() - t0
    hf_loss = max(1 - r["tokens_per_call_hf"] / r["tokens_per_call_best"] for r in rows)
    heads = [
        headline(
            "draft temperature, chains: max tokens-per-call loss of tau_d = 1.5 vs the optimum", hf_loss
        ),
    ]
    for r in shipped:
        heads.append(
            headline(
                f"draft temperature, shipped draft-small: best tau_d at tau_t={r['target_temperature']:g}, gamma={r['gamma']}",
                r["best_draft_temperature"],
                note=f"tokens/call best - tau_d=1.5: {r['best_minus_hf'][0]:+.4f} ± {r['best_minus_hf'][1]:.4f}",
            )
        )
    path = write_results(
        __file__,
        {"hf_default": HF_DEFAULT, "chains": rows, "shipped": shipped, "seconds": seconds},
        args.out,
        argv,
        heads,
    )
    print(f"{seconds:.1f} s; wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

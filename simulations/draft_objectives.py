"""Which draft to train (issue 26): drafts fitted by forward KL, reverse KL, JSD, TV and the multi-step objective, exact.

Targets are second-order chains over V = 6 tokens (spectheory.objectives.context_chain: a
share `visible` of each next-token law depends on the last token only, the rest on both);
the draft family sees the last token only (TiedDraft.last_token), as a small draft sees less
context than its target. Per target (concentration 0.2, 1, 5: low to high entropy; visible 0
and 0.6: how much of the target the family can represent) every divergence is minimised over
the family with the target's own state law as data (on-policy), and the multi-step objective
(exact expected tokens per call at one gamma, by L-BFGS on the adjoint gradient of
docs/draft_objectives.md) is fine-tuned from the forward-KL draft. The reference is the best
draft found for that gamma: the best of the divergence fits and of the multi-step objective
started from the forward-KL and (moved 5 % towards uniform) the TV fits; it dominates every
row by construction. Exact tokens per call (T = 32, bonus on), acceptance 1 - E[TV]
and the Theorem-1 sum for each. Writes ``draft_objectives.json`` into ``--out``.

Usage: python simulations/draft_objectives.py [--quick] [--out DIR]
"""

from __future__ import annotations

import time

import numpy as np

from spectheory.app.results import headline, script_parser, write_results
from spectheory.objectives import DIVERGENCES, TiedDraft, context_chain, fit_draft, state_weights

T = 32
CONCENTRATIONS = (0.2, 1.0, 5.0)
VISIBLE = (0.0, 0.6)
GAMMAS = (1, 4)
MAX_ITER = 60


def entropy(chain, horizon):
    """Target entropy (nats per token) under its own state law over the horizon."""
    p = chain.target
    h = -(p * np.log(np.maximum(p, 1e-300))).sum(-1)
    return float(state_weights(chain, horizon) @ h)


def cell_rows(conc, visible, vocab, gammas, max_iter, seed):
    """Rows of one target: every objective at every gamma, with the reference."""
    chain = context_chain(vocab, conc, visible, rng=seed)
    fam = TiedDraft.last_token(vocab)
    fits = {d: fit_draft(chain, fam, d, T) for d in DIVERGENCES}
    rows = []
    for g in gammas:
        tuned = fit_draft(
            chain, fam, "tokens_per_call", T, gamma=g, init=fits["forward_kl"], max_iter=max_iter
        )
        from_tv = fit_draft(
            chain,
            fam,
            "tokens_per_call",
            T,
            gamma=g,
            init=0.95 * fits["tv"].laws + 0.05 / vocab,
            max_iter=max_iter,
        )
        candidates = [tuned, from_tv, *fits.values()]
        ref = max(candidates, key=lambda f: f.evaluate(g)["tokens_per_call"])
        ref_tpc = ref.evaluate(g)["tokens_per_call"]
        for label, f in [*fits.items(), ("tokens_per_call", tuned), ("reference", ref)]:
            ev = f.evaluate(g)
            rows.append(
                {
                    "concentration": conc,
                    "visible": visible,
                    "gamma": g,
                    "objective": label,
                    **ev,
                    "ratio_to_reference": ev["tokens_per_call"] / ref_tpc,
                    "reference_from": ref.label if label == "reference" else None,
                }
            )
    return chain, rows


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    t0 = time.perf_counter()
    concs = (0.2, 5.0) if args.quick else CONCENTRATIONS
    vis = (0.0,) if args.quick else VISIBLE
    gammas = (4,) if args.quick else GAMMAS
    vocab = 4 if args.quick else 6
    max_iter = 20 if args.quick else MAX_ITER
    rows, cells = [], []
    for i, conc in enumerate(concs):
        for j, v in enumerate(vis):
            chain, r = cell_rows(conc, v, vocab, gammas, max_iter, seed=100 + 10 * i + j)
            cells.append({"concentration": conc, "visible": v, "entropy": entropy(chain, T)})
            for row in r:
                row["entropy"] = cells[-1]["entropy"]
            rows += r
    print(f"T = {T}, V = {vocab}, draft sees the last token; tokens per call (exact), ratio to the reference")
    print(
        f"{'conc':>5} {'vis':>4} {'H':>5} {'g':>2} "
        + " ".join(f"{o:>15}" for o in (*DIVERGENCES, "tokens_per_call"))
    )
    winners = []
    for c in cells:
        for g in gammas:
            sel = [
                r
                for r in rows
                if (r["concentration"], r["visible"], r["gamma"]) == (c["concentration"], c["visible"], g)
            ]
            by = {r["objective"]: r for r in sel}
            win = max(DIVERGENCES, key=lambda d: by[d]["tokens_per_call"])
            winners.append(
                {
                    "concentration": c["concentration"],
                    "visible": c["visible"],
                    "gamma": g,
                    "best_divergence": win,
                }
            )
            print(
                f"{c['concentration']:5g} {c['visible']:4g} {c['entropy']:5.2f} {g:2d} "
                + " ".join(
                    f"{by[o]['tokens_per_call']:7.4f} ({by[o]['ratio_to_reference']:.4f})"
                    for o in (*DIVERGENCES, "tokens_per_call")
                )
                + f"  best divergence: {win}"
            )
    fkl_gap = max(1 - r["ratio_to_reference"] for r in rows if r["objective"] == "forward_kl")
    tv_gap = max(1 - r["ratio_to_reference"] for r in rows if r["objective"] == "tv")
    tv_wins = sum(w["best_divergence"] == "tv" for w in winners)
    seconds = time.perf_counter() - t0
    data = {
        "horizon": T,
        "vocab_size": vocab,
        "family": "TiedDraft.last_token: the draft sees the last token, the target the last two",
        "gammas": list(gammas),
        "bonus": True,
        "cells": cells,
        "rows": rows,
        "winners": winners,
        "seconds": seconds,
    }
    path = write_results(
        __file__,
        data,
        args.out,
        argv,
        [
            headline(
                "draft objectives: cells where TV is the best divergence", tv_wins, note=f"of {len(winners)}"
            ),
            headline("draft objectives: max tokens-per-call shortfall of forward KL vs reference", fkl_gap),
            headline("draft objectives: max tokens-per-call shortfall of TV vs reference", tv_gap),
        ],
    )
    print(
        f"TV best divergence in {tv_wins} of {len(winners)} cells; forward-KL shortfall up to {fkl_gap:.2%}, TV up to {tv_gap:.2%}"
    )
    print(f"{seconds:.1f} s; wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

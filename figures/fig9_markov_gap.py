"""The Markov abstraction gap. Order-k chains fitted to samples of the target and of each draft (soft counts: the models' exact next-token laws, sparse contexts with back-off), and their exact predictions of E[rejections] (bonus off, left) and target calls (gamma = 4, bonus on, right) relative to what the real decoder measures, against the order k; the dotted line at 0 is the decoder, shaded bands its 95% interval, crosses the Rao-Blackwellised prediction (k = infinity). Low orders average contexts away and underestimate the rejections.

Usage: python figures/fig9_markov_gap.py [--quick] [--out DIR] [--target NAME]
"""
from __future__ import annotations

import argparse

import numpy as np
import torch

from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.decoder.validation import (chain_predictions, fit_order_k_chain, mean_se, measure_decoder,
                                           path_statistics, rb_predictions, repeat_prompts, resolve_models,
                                           sample_paths)
from spectheory.plotting import PALETTE, figure, save_figure


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None)
    ap.add_argument("--target", default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(2)
    target_name, drafts = resolve_models(args.target, None)
    q = args.quick
    N, T, L, g = (48, 10, 8, 4) if q else (384, 48, 16, 4)
    orders = [0, 1, 2] if q else [0, 1, 2, 3]
    prompts = heldout_windows(8 if q else 48, L)
    pr = repeat_prompts(prompts, N)
    target = load_model(target_name)
    tpaths = sample_paths(target, pr, T, seed=10_000_019)
    data = {"target": target_name, "orders": orders, "horizon": T, "gamma": g, "samples": N, "drafts": {}}
    for name in drafts:
        draft = load_model(name)
        st = path_statistics(target, draft, tpaths, L, keep_laws=True)
        dpaths = sample_paths(draft, pr, T, seed=30_000_001)
        sd = path_statistics(target, draft, dpaths, L, keep_laws=True)
        rb = rb_predictions(st, [g])
        d = {"orders": orders, "rejections": [], "target_calls": [], "states": []}
        for b, stat in ((False, "rejections"), (True, "target_calls")):
            m = mean_se(measure_decoder(target, draft, pr, T, g, b, seed=0)[stat])
            d[f"{stat}_measured"] = [float(m[0]), float(m[1])]
            d[f"{stat}_rb"] = [float(x) for x in rb[(g, b)][stat]]
        for k in orders:
            chain = fit_order_k_chain(k, tpaths, st.target_laws, dpaths, sd.draft_laws, L, prompts)
            cp = chain_predictions(chain, T, [g])
            d["states"].append(chain.n_states)
            d["rejections"].append(float(cp[(g, False)]["rejections"]))
            d["target_calls"].append(float(cp[(g, True)]["target_calls"]))
        data["drafts"][name] = d
    fig, axes = figure(ncols=2, width=3.2, height=2.6)
    for ax, stat, title in ((axes[0], "rejections", "E[rejections], bonus off"),
                            (axes[1], "target_calls", f"target calls, gamma = {g}, bonus on")):
        for i, name in enumerate(drafts):
            d = data["drafts"][name]
            m, se = d[f"{stat}_measured"]
            rel = np.array(d[stat]) / m - 1.0
            ax.plot(orders, 100 * rel, "o-", color=PALETTE[i], label=name)
            ax.fill_between([orders[0], orders[-1] + 1], 100 * -1.96 * se / m, 100 * 1.96 * se / m,
                            color=PALETTE[i], alpha=0.12, lw=0)
            ax.plot([orders[-1] + 1], [100 * (d[f"{stat}_rb"][0] / m - 1.0)], "x", color=PALETTE[i], ms=6)
        ax.axhline(0.0, color="0.3", lw=0.8, ls=":")
        ax.set_xticks(orders + [orders[-1] + 1], [str(k) for k in orders] + [r"$\infty$"])
        ax.set_xlabel("chain order k")
        ax.set_ylabel("chain prediction / measured - 1 (%)")
        ax.set_title(title)
    axes[0].legend(fontsize=6)
    paths = save_figure(fig, "fig9_markov_gap", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

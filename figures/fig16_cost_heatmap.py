"""Speculation stops paying as the batch grows: the exact speedup over plain decoding at the same batch size of drafting gamma tokens per round (x) at batch size B (y, rows decoded in lockstep), on the docs' default chain (random, V = 16, T = 128 tokens), under the roofline of Llama-2-7B verified with Llama-68M drafts on an H200 (dense BF16 989 TFLOP/s, 4.8 TB/s, context 0, no launch overhead; docs/cost.md). Blue: speculation wins, red: it loses; the black line is speedup = 1 (the crossover), dots mark the best gamma at each batch size. At small B a target call is memory-bound, so verifying gamma + 1 tokens costs what one costs and long drafts pay; once B (gamma + 1) passes the ridge (about 206 tokens per call), verification time grows with the tokens scored, the best gamma shrinks, and beyond the crossover every gamma loses. Leviathan's constant-c model predicts the bottom row (B = 1) at every B.

The numbers are those of simulations/cost_batch.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at small sizes when that file is absent).

Usage: python figures/fig16_cost_heatmap.py [--quick] [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np
from matplotlib.colors import TwoSlopeNorm

from spectheory.app.plotting import figure, figure_args, load_results, save_figure

MODEL = "llama2-7b/68m-h200"


def _compute_small():
    import spectheory as st
    from spectheory.cost import named_cost, optimal_gamma

    chain = st.DecodingChain.random(8, concentration=0.5, similarity=0.6, rng=0)
    gammas, batches = list(range(1, 7)), [1, 16, 256, 4096]
    opt = optimal_gamma(chain, named_cost(MODEL), batches, gammas=gammas, horizon=64)
    model = {"speedup": opt.speedup, "best_gamma": opt.best_gamma, "crossover": opt.crossover}
    return {
        "gammas": gammas,
        "batches": batches,
        "T": 64,
        "heatmap_model": MODEL,
        "models": {MODEL: model},
        "command": "computed by fig16 (small)",
    }


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("cost_batch", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    name = res["heatmap_model"]
    model = res["models"][name]
    gammas, batches = np.asarray(res["gammas"]), np.asarray(res["batches"])
    s = np.asarray(model["speedup"], dtype=np.float64)
    fig, ax = figure(width=3.6, height=3.0)
    rows = np.arange(batches.size)
    norm = TwoSlopeNorm(vmin=min(float(s.min()), 0.99), vcenter=1.0, vmax=max(float(s.max()), 1.01))
    mesh = ax.pcolormesh(gammas, rows, s, cmap="RdBu", norm=norm, shading="nearest")
    ax.contour(gammas, rows, s, levels=[1.0], colors="k", linewidths=1.2)
    best = np.asarray(model["best_gamma"])
    ax.plot(best, rows, "o", color="k", ms=3, label="best gamma")
    ax.set_yticks(rows)
    ax.set_yticklabels([str(int(b)) for b in batches], fontsize=6.5)
    ax.set_xlabel("draft length gamma")
    ax.set_ylabel("batch size B")
    ax.set_title(f"speedup at the same batch size ({name})", fontsize=8)
    ax.grid(False)
    fig.colorbar(mesh, ax=ax, label="speedup over plain decoding")
    ax.legend(loc="upper right", fontsize=6.5)
    crossover = model["crossover"]
    data = {
        "model": name,
        "T": res["T"],
        "gammas": gammas,
        "batches": batches,
        "speedup": s,
        "best_gamma": best,
        "crossover": crossover,
        "source": res.get("command"),
        "headline": [
            {"name": f"fig16 {name}: crossover batch size", "value": crossover},
            {"name": f"fig16 {name}: best speedup at B = 1", "value": float(s[0].max())},
        ],
    }
    save_figure(fig, "fig16_cost_heatmap", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

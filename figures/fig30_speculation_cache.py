"""Speculation caches (SSD / Saguaro): the exact probability that a round's outcome (accepted count, emitted token) is a cached key, against the fan-out budget B, K = 4, long-run round starts on random 16-token chains (thin lines: chains; thick: their mean). The optimal allocation with the draft's own top tokens as guesses (what a speculator can compute), the same with oracle guesses (the true emitted-token law's top tokens: the ceiling), the paper's geometric allocation with the fitted power-law exponent, and a uniform allocation.

The numbers are those of simulations/speculation_cache.py, read from ``--results DIR`` (default: the results folder beside the figures folder when it exists, else the checkout's results/).

Usage: python figures/fig30_speculation_cache.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure

SERIES = {
    "oracle": "optimal allocation, oracle guesses",
    "optimal": "optimal allocation, draft guesses",
    "geometric": "geometric allocation (power law)",
    "uniform": "uniform allocation",
}


def main(argv=None):
    args = figure_args(__doc__, argv)
    res = load_results("speculation_cache", args.out, args.results)
    budgets = res["budgets"]
    data = {"budgets": budgets, "k": res["k"], "vocab": res["vocab"], "source": res["command"]}
    fig, axes = figure(ncols=1, width=4.2, height=2.8)
    ax = axes[0] if isinstance(axes, (list, np.ndarray)) else axes
    for i, (key, label) in enumerate(SERIES.items()):
        vals = np.array([c[key] for c in res["curves"]])
        for v in vals:
            ax.plot(budgets, v, color=PALETTE[i], lw=0.5, alpha=0.35)
        ax.plot(budgets, vals.mean(0), "o-", color=PALETTE[i], ms=3, lw=1.6, label=label)
        data[key] = vals.mean(0).tolist()
    ax.set_xlabel("fan-out budget B (cached next rounds)")
    ax.set_ylabel("P(cache hit), exact")
    ax.set_title(f"K = {res['k']}, V = {res['vocab']}, long-run round starts")
    ax.legend(fontsize=6, loc="lower right")
    paths = save_figure(fig, "fig30_speculation_cache", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

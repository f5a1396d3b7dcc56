"""Acceptance-length tables: exact AL(K) never falls for prefix-only drafters but need not be concave (left), and a synthetic schedule with the right mean thins the latency tail (right). Left: exact long-run AL(K), tokens per target call at fixed draft length K, of random first-order chains (grey) and the two-token chain whose curve is not concave (2, 7/3, 3 at K = 1, 2, 3; black; an i.i.d. chain's curve is always concave). No curve falls (the monotonicity theorem for prefix-only drafters, docs/acceptance_length.md). Right: the exact law of the target calls a request of N tokens needs at i.i.d. acceptance alpha, under the true accepted-count law and under the min-variance synthetic schedule of the same mean: the synthetic schedule has the same mean and a far thinner tail.

The numbers are those of simulations/acceptance_length.py, read from ``--results DIR`` (default: the results folder beside the figures folder when it exists, else the checkout's results/).

Usage: python figures/fig29_acceptance_length.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure


def main(argv=None):
    args = figure_args(__doc__, argv)
    res = load_results("acceptance_length", args.out, args.results)
    ks = res["ks"]
    syn = res["synthetic"]
    data = {
        "ks": ks,
        "curves": res["curves"],
        "example": res["example"],
        "synthetic": syn,
        "source": res["command"],
    }
    fig, axes = figure(ncols=2, width=3.3, height=2.6)
    ax = axes[0]
    for c in res["curves"]:
        ax.plot(ks, c["al"], color="0.65", lw=0.8)
    ax.plot(ks, res["example"], "o-", color="k", ms=3, label="two-token chain (not concave)")
    ax.set_xlabel("draft length K")
    ax.set_ylabel("AL(K), tokens per target call")
    ax.set_title("exact long-run AL(K)")
    ax.legend(fontsize=6, loc="upper left")
    ax = axes[1]
    for i, (name, lat) in enumerate(syn["latency"].items()):
        law = np.array(lat["law"])
        c = np.arange(law.size)
        keep = law > 1e-6
        ax.plot(
            c[keep],
            law[keep],
            "o-" if name == "true" else "s-",
            ms=2.5,
            color=PALETTE[i + 1],
            label=f"{name} (p99 {lat['p99']})",
        )
    ax.set_xlabel(f"target calls for N = {syn['n_tokens']} tokens")
    ax.set_ylabel("probability")
    ax.set_title(f"alpha = {syn['alpha']}, K = {syn['k']}")
    ax.legend(fontsize=6)
    paths = save_figure(fig, "fig29_acceptance_length", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

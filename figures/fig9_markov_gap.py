"""The Markov abstraction gap. Order-k chains fitted to samples of the target and of each draft (soft counts: the models' exact next-token laws, sparse contexts with back-off), and their exact predictions of E[rejections] (bonus off, left) and target calls (gamma = 4, bonus on, right) relative to what the real decoder measures, against the order k; the dotted line at 0 is the decoder, shaded bands its 95% interval, crosses the Rao-Blackwellised prediction (k = infinity). Low orders average contexts away and underestimate the rejections.

The numbers are those of simulations/decoder_markov_gap.py, read from the results folder beside
the figures folder.

Usage: python figures/fig9_markov_gap.py [--out DIR]
"""
from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure


def main(argv=None):
    args = figure_args(__doc__, argv)
    gap = load_results("decoder_markov_gap", args.out)
    drafts, orders = gap["drafts"], gap["orders"]
    g = 4 if 4 in gap["gammas"] else gap["gammas"][0]
    data = {"target": gap["target"], "orders": orders, "horizon": gap["horizon"], "gamma": g,
            "samples": gap["samples"], "source": gap["command"], "drafts": {}}
    for name in drafts:
        rows = [r for r in gap["results"][name]["rows"] if r["fit"] == "soft" and r["gamma"] == g]
        d = {"orders": orders}
        for bonus, stat in ((False, "rejections"), (True, "target_calls")):
            mine = [next(r for r in rows if r["order"] == k and r["stat"] == stat and r["bonus"] == bonus)
                    for k in orders]
            d[stat] = [r["chain"] for r in mine]
            d[f"{stat}_measured"] = [mine[0]["measured"], mine[0]["measured_se"]]
            d[f"{stat}_rb"] = [mine[0]["rb"], mine[0]["rb_se"]]
        d["states"] = [next(r["states"] for r in rows if r["order"] == k) for k in orders]
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

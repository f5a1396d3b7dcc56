"""The Markov abstraction gap. Order-k chains fitted to the shipped models and their exact predictions of E[rejections] (bonus off, left) and target calls (gamma = 4, bonus on, right) relative to the real decoder, against the order k. Solid: the target-path fit (both kernels average the models' exact laws over the same target prefixes, pooled over positions; with one kernel per position its Theorem-1 sum is a lower bound on the truth that grows with k, docs/markov_abstraction.md), with its bias-corrected 95% bootstrap interval (vertical bars). Dashed: the old fit (draft kernel averaged over draft samples), which has no such guarantee. The dotted line at 0 is the decoder, shaded bands its 95% interval, crosses the Rao-Blackwellised prediction (k = infinity).

The numbers are those of simulations/decoder_markov_gap.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/).

Usage: python figures/fig9_markov_gap.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure

FITS = {"order-k": ("target paths", "o-"), "order-k (old fit, draft paths)": ("draft paths (old)", "s--")}


def main(argv=None):
    args = figure_args(__doc__, argv)
    gap = load_results("decoder_markov_gap", args.out, args.results)
    drafts, orders = gap["drafts"], gap["orders"]
    data = {
        "target": gap["target"],
        "orders": orders,
        "horizon": gap["horizon"],
        "gamma": gap["gamma"],
        "samples": gap["samples"],
        "reference": gap.get("reference", "decoder"),
        "source": gap["command"],
        "drafts": {},
    }
    for name in drafts:
        res = gap["results"][name]
        d = {"measured": res["measured"], "rb": res["rb"]}
        for fam in FITS:
            rows = sorted((r for r in res["rows"] if r["family"] == fam), key=lambda r: r["param"])
            d[fam] = {
                "states": [r["states"] for r in rows],
                "rejections": [r["rejections"] for r in rows],
                "target_calls": [r["target_calls"] for r in rows],
                "rejections_ci": [r.get("rejections_ci") for r in rows],
            }
        data["drafts"][name] = d
    fig, axes = figure(ncols=2, width=3.3, height=2.7)
    for ax, stat, title in (
        (axes[0], "rejections", "E[rejections], bonus off"),
        (axes[1], "target_calls", f"target calls, gamma = {gap['gamma']}, bonus on"),
    ):
        for i, name in enumerate(drafts):
            d = data["drafts"][name]
            m, se = d["measured"][stat]
            for fam, (label, style) in FITS.items():
                ax.plot(
                    orders,
                    100 * (np.array(d[fam][stat]) / m - 1.0),
                    style,
                    color=PALETTE[i],
                    label=f"{name}, {label}" if stat == "rejections" else None,
                    alpha=1.0 if "old" not in fam else 0.6,
                )
                if stat == "rejections" and all(d[fam]["rejections_ci"]):
                    ci = np.array(d[fam]["rejections_ci"])
                    ax.vlines(
                        orders,
                        100 * (ci[:, 0] / m - 1),
                        100 * (ci[:, 1] / m - 1),
                        color=PALETTE[i],
                        lw=2.5,
                        alpha=0.35,
                    )
            ax.fill_between(
                [orders[0], orders[-1] + 1], -196 * se / m, 196 * se / m, color=PALETTE[i], alpha=0.10, lw=0
            )
            ax.plot([orders[-1] + 1], [100 * (d["rb"][stat][0] / m - 1.0)], "x", color=PALETTE[i], ms=6)
        ax.axhline(0.0, color="0.3", lw=0.8, ls=":")
        ax.set_xticks(orders + [orders[-1] + 1], [str(k) for k in orders] + [r"$\infty$"])
        ax.set_xlabel("chain order k")
        ax.set_ylabel("chain prediction / measured - 1 (%)")
        ax.set_title(title)
    axes[0].legend(fontsize=5.5, loc="lower right")
    paths = save_figure(fig, "fig9_markov_gap", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

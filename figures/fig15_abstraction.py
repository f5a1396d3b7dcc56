"""How many states does the Markov abstraction of a real model need? Prediction error of the fitted chain (target-path fit, pooled over positions) against its number of states, per draft (columns), for E[rejections] with bonus off (top) and target calls at gamma = 4 with bonus on (bottom): order-k contexts (circles), context trees grown by Theorem-1 gain (squares) and k-means clusters of the target's last hidden state (triangles: with the stochastic cluster-transition law observed along the target paths, a DecodingChain with next_state a law [S, V, S]; hollow triangles: the most likely next cluster instead, which is not certified). Hollow markers (top): the certified per-position plug-in bound of the same order-k contexts and trees, which never exceeds the truth in the population and never exceeds the Rao-Blackwellised estimate in-sample (docs/markov_abstraction.md). The grey band is +-5%; the dotted line the decoder.

The numbers are those of simulations/decoder_markov_gap.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/).

Usage: python figures/fig15_abstraction.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure

FAMILIES = (
    ("order-k", "o", PALETTE[0]),
    ("context tree", "s", PALETTE[1]),
    ("hidden-state clusters", "^", PALETTE[2]),
    ("hidden-state clusters (most likely next)", "^", PALETTE[2]),
)


def main(argv=None):
    args = figure_args(__doc__, argv)
    gap = load_results("decoder_markov_gap", args.out, args.results)
    drafts = gap["drafts"]
    data = {
        "target": gap["target"],
        "horizon": gap["horizon"],
        "gamma": gap["gamma"],
        "samples": gap["samples"],
        "reference": gap.get("reference", "decoder"),
        "source": gap["command"],
        "drafts": {},
        "headline": gap.get("headline", []),
    }
    for name in drafts:
        res = gap["results"][name]
        d = {"measured": res["measured"]}
        for fam, _, _ in FAMILIES:
            rows = sorted((r for r in res["rows"] if r["family"] == fam), key=lambda r: r["states"])
            d[fam] = {
                k: [r.get(k) for r in rows]
                for k in (
                    "states",
                    "param",
                    "rejections_error",
                    "target_calls_error",
                    "bound_position",
                    "rejections",
                    "target_calls",
                )
            }
        data["drafts"][name] = d
    fig, axes = figure(ncols=len(drafts), nrows=2, width=2.6, height=2.3, squeeze=False)
    for j, name in enumerate(drafts):
        d = data["drafts"][name]
        for i, (stat, label) in enumerate(
            (("rejections", "E[rejections] error (%)"), ("target_calls", "target calls error (%)"))
        ):
            ax = axes[i, j]
            m, se = d["measured"][stat]
            for fam, marker, colour in FAMILIES:
                s = np.array(d[fam]["states"], float)
                if not len(s):
                    continue
                hollow = fam.endswith("(most likely next)")
                ax.plot(
                    s,
                    100 * np.array(d[fam][f"{stat}_error"]),
                    marker + ("--" if hollow else "-"),
                    color=colour,
                    mfc="none" if hollow else colour,
                    lw=0.8 if hollow else None,
                    label=fam,
                )
                if stat == "rejections" and not fam.startswith("hidden-state clusters"):
                    b = np.array(d[fam]["bound_position"], float)
                    ax.plot(
                        s,
                        100 * (b / m - 1),
                        marker,
                        mfc="none",
                        color=colour,
                        ls=":",
                        lw=0.8,
                        label=f"{fam}: certified per-position bound",
                    )
            ax.axhspan(-5, 5, color="0.5", alpha=0.15, lw=0)
            ax.axhline(0.0, color="0.3", lw=0.8, ls=":")
            ax.axhspan(-196 * se / m, 196 * se / m, color=PALETTE[3], alpha=0.10, lw=0)
            ax.set_xscale("log")
            ax.set_xlabel("states")
            if j == 0:
                ax.set_ylabel(label)
            if i == 0:
                ax.set_title(f"draft = {name}")
    # one legend under the grid (inside a panel it hid the small-state points)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=6, frameon=False)
    paths = save_figure(fig, "fig15_abstraction", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

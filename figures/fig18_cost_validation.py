"""Measured vs predicted throughput of the real decoder at every batch size. (a) Predicted (filled: the cost model fitted on the other configurations' logged calls, with the Rao-Blackwellised rounds law; hollow: Leviathan's constant c at batch 1) against measured tokens/s (median over repeats, bars from the slowest to the fastest repeat), every batch size and configuration, with y = x and a 10% band. (b) predicted / measured against the batch size, per configuration, the constant-c prediction dashed.

The numbers are those of benchmarks/cost_validation.py (CPU), and of benchmarks/cost_validation_gpu.py
when its results are present (drawn as squares), read from the results folder beside the figures folder.

Usage: python figures/fig18_cost_validation.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np
from matplotlib.ticker import NullFormatter

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure


def _runs(args):
    runs = [("cpu", load_results("cost_validation", args.out, args.results))]
    try:
        runs.append(("gpu", load_results("cost_validation_gpu", args.out, args.results)))
    except FileNotFoundError:
        pass
    return runs


def main(argv=None):
    args = figure_args(__doc__, argv)
    runs = _runs(args)
    data = {
        name: {
            "device": r.get("device"),
            "command": r.get("command"),
            "rows": [
                {
                    k: row[k]
                    for k in (
                        "batch",
                        "config",
                        "predicted",
                        "measured",
                        "measured_min",
                        "measured_max",
                        "constant_c",
                    )
                }
                for row in r["rows"]
            ],
        }
        for name, r in runs
    }
    configs = sorted(
        {row["config"] for d in data.values() for row in d["rows"]}, key=lambda c: (c != "autoregressive", c)
    )
    color = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(configs)}
    fig, axes = figure(ncols=2, width=3.4, height=2.9)
    ax = axes[0]
    lo, hi = np.inf, 0.0
    for name, d in data.items():
        marker = "o" if name == "cpu" else "s"
        for row in d["rows"]:
            c = color[row["config"]]
            m = row["measured"]
            ax.errorbar(
                m,
                row["predicted"],
                xerr=[[m - row["measured_min"]], [row["measured_max"] - m]],
                fmt=marker,
                color=c,
                ms=3,
                lw=0.6,
            )
            if row["config"] != "autoregressive":
                ax.plot(m, row["constant_c"], marker, mfc="none", color=c, ms=3, mew=0.6)
            lo = min(lo, m, row["predicted"])
            hi = max(hi, m, row["predicted"])
    x = np.geomspace(0.8 * lo, 1.25 * hi, 10)
    ax.plot(x, x, color="0.3", lw=0.8)
    ax.fill_between(x, 0.9 * x, 1.1 * x, color="0.8", alpha=0.5, lw=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):  # decades only: the minor labels ran together
        axis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("measured tokens / s")
    ax.set_ylabel("predicted tokens / s")
    ax.set_title("(a) filled: cost model; hollow: constant c")
    ax = axes[1]
    for cfg in configs:
        for name, d in data.items():
            rows = sorted((r for r in d["rows"] if r["config"] == cfg), key=lambda r: r["batch"])
            if not rows:
                continue
            B = [r["batch"] for r in rows]
            marker = "o-" if name == "cpu" else "s-"
            label = cfg if name == "cpu" else None
            ax.plot(
                B,
                [r["predicted"] / r["measured"] for r in rows],
                marker,
                color=color[cfg],
                ms=3,
                lw=0.8,
                label=label,
            )
            if cfg != "autoregressive":
                ax.plot(B, [r["constant_c"] / r["measured"] for r in rows], "--", color=color[cfg], lw=0.6)
    ax.axhspan(0.9, 1.1, color="0.85", alpha=0.6, lw=0)
    ax.axhline(1.0, color="0.3", lw=0.8)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch size B")
    ax.set_ylabel("predicted / measured")
    ax.set_title("(b) solid: cost model; dashed: constant c")
    ax.legend(fontsize=5, loc="upper left")
    data["sources"] = [r.get("command") for _, r in runs]
    paths = save_figure(fig, "fig18_cost_validation", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

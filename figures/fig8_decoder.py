"""The real decoder against the theory. (a) Accepted-count law of a round (gamma = 4, bonus on): the Rao-Blackwellised prediction (bars) against the decoder's measured histogram (points, 95% intervals), per draft model. (b) E[rejections] with bonus off: the Theorem-1 sum of exact TVs along target paths against the decoder's measured mean, per draft and gamma in {1, 2, 4, 8}, with the y = x line. (c) Walltime speedup on CPU (batch 1): measured (median over the repeats, bars from the fastest to the slowest repeat when the results hold them) against Leviathan's prediction from the measured cost ratio c and acceptance, against gamma.

The numbers are those of simulations/decoder_theory.py (panels a, b) and benchmarks/decoder_speed.py
(panel c), read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/).

Usage: python figures/fig8_decoder.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure


def main(argv=None):
    args = figure_args(__doc__, argv)
    theory, speed = (
        load_results("decoder_theory", args.out, args.results),
        load_results("decoder_speed", args.out, args.results),
    )
    drafts, gammas, T = theory["drafts"], theory["gammas"], theory["horizon"]
    data = {
        "target": theory["target"],
        "drafts": drafts,
        "gammas": gammas,
        "horizon": T,
        "sequences": theory["sequences"],
        "theory": theory["results"],
        "speed": speed["results"],
        "sources": [theory["command"], speed["command"]],
    }
    fig, axes = figure(ncols=3, width=3.0, height=2.6)
    ax = axes[0]
    g_hist = 4 if 4 in gammas else gammas[-1]
    w = 0.8 / len(drafts)
    for i, name in enumerate(drafts):
        law = next(x for x in data["theory"][name]["laws"] if x["gamma"] == g_hist and x["bonus"])
        rows = {r["stat"]: r for r in data["theory"][name]["rows"] if r["gamma"] == g_hist and r["bonus"]}
        calls = rows["target_calls"]["measured"]
        j = np.arange(g_hist + 1)
        ax.bar(
            j + (i - (len(drafts) - 1) / 2) * w,
            law["law_predicted"],
            width=w,
            color=PALETTE[i],
            alpha=0.45,
            label=f"{name} (theory)",
        )
        m = np.array([rows[f"count[{k}]"]["measured"] for k in j]) / calls
        se = np.array([rows[f"count[{k}]"]["measured_se"] for k in j]) / calls
        ax.errorbar(j + (i - (len(drafts) - 1) / 2) * w, m, yerr=1.96 * se, fmt="o", color=PALETTE[i], ms=3)
    ax.set_xlabel(f"accepted drafts per round ($\\gamma$ = {g_hist})")
    ax.set_ylabel("fraction of rounds")
    ax.set_title("(a) accepted-count law")
    ax.legend(loc="upper center", fontsize=6)
    ax = axes[1]
    lo, hi = np.inf, 0
    for i, name in enumerate(drafts):
        rows = [r for r in data["theory"][name]["rows"] if r["stat"] == "rejections_tv"]
        x = [r["predicted"] for r in rows]
        y = [r["measured"] for r in rows]
        ax.errorbar(
            x,
            y,
            xerr=[1.96 * r["predicted_se"] for r in rows],
            yerr=[1.96 * r["measured_se"] for r in rows],
            fmt="o",
            color=PALETTE[i],
            label=name,
            ms=3,
        )
        lo, hi = min(lo, *x, *y), max(hi, *x, *y)
    ax.plot([0.9 * lo, 1.1 * hi], [0.9 * lo, 1.1 * hi], color="0.4", lw=0.8, ls="--")
    ax.set_xlabel(r"predicted $\sum_n E[\mathrm{TV}_n]$")
    ax.set_ylabel("measured rejections (bonus off)")
    ax.set_title(f"(b) rejections, T = {T}, $\\gamma$ = {', '.join(str(g) for g in gammas)}")
    ax.legend(fontsize=6)
    ax = axes[2]
    for i, name in enumerate(d for d in drafts if d in data["speed"]):
        rows = data["speed"][name]["rows"]
        g = [r["gamma"] for r in rows]
        ax.plot(g, [r["predicted"] for r in rows], "--", color=PALETTE[i])
        label = f"{name} (c = {data['speed'][name]['c']:.2f})"
        if all("measured_repeats" in r for r in rows):  # repeated timings: median and full range
            reps = [np.asarray(r["measured_repeats"]) for r in rows]
            med = np.array([np.median(x) for x in reps])
            ax.errorbar(
                g,
                med,
                yerr=[med - [x.min() for x in reps], [x.max() for x in reps] - med],
                fmt="o-",
                color=PALETTE[i],
                ms=3,
                capsize=2,
                lw=1,
                label=label,
            )
        else:
            ax.plot(g, [r["measured"] for r in rows], "o-", color=PALETTE[i], label=label)
    ax.axhline(1.0, color="0.5", lw=0.8)
    ax.set_xlabel("draft length $\\gamma$")
    ax.set_ylabel("walltime speedup")
    ax.set_title("(c) measured (solid) vs predicted (dashed)")
    ax.legend(fontsize=6)
    paths = save_figure(fig, "fig8_decoder", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

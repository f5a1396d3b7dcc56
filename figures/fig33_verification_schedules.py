"""Verification schedules under batch load: each schedule's exact throughput divided by that of the best non-anticipating (sequential admission) schedule, found by backward induction. Left: against the batch size B (random batches, gamma = 3, a forward of time 1 + 0.2 N padded to buckets of 2, 4, 8, 16 scored positions; mean over the batches). Solid: schedules the kit finds lossless (their ratio is at most 1); dashed: schedules whose exact output law differs from the target's, whose ratio can exceed 1 only because a slot's own draw decides whether it is verified. Right: top-K by live survival against the verify budget K at fixed B: not monotone on a staircase.

The numbers are those of simulations/verification_schedules.py, read from ``--results DIR`` (default: the results folder beside the figures folder when it exists, else the checkout's results/).

Usage: python figures/fig33_verification_schedules.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure


def main(argv=None):
    args = figure_args(__doc__, argv)
    res = load_results("verification_schedules", args.out, args.results)
    batches = res["batches"]
    fig, axes = figure(ncols=2, width=3.6, height=3.0)
    ax, bx = axes[0], axes[1]
    curves = {}
    for i, label in enumerate(res["ratio"][str(batches[0])]):
        lossless = res["kit"][label]["passed"]
        y = [res["ratio"][str(B)][label]["mean"] for B in batches]
        curves[label] = {"ratio": y, "kit_lossless": lossless}
        ax.plot(
            batches,
            y,
            "o-" if lossless else "s--",
            color=PALETTE[i % len(PALETTE)],
            ms=3,
            lw=1.3,
            label=label,
        )
    ax.axhline(1.0, color="grey", lw=0.6)
    ax.set_xticks(batches)
    ax.set_xlabel("batch size B (requests stepped together)")
    ax.set_ylabel("throughput / best non-anticipating")
    fig.legend(fontsize=6, loc="outside lower center", ncol=4, frameon=False)
    ks = sorted(int(k) for k in res["budget_ratio"])
    bx.plot(ks, [res["budget_ratio"][str(k)] for k in ks], "o-", color=PALETTE[0], ms=3)
    bx.axhline(1.0, color="grey", lw=0.6)
    bx.set_xlabel(f"verify budget K (drafts), B = {res['budget_batch']}")
    bx.set_ylabel("top-K / best non-anticipating")
    data = {
        "batches": batches,
        "source": res["command"],
        "curves": curves,
        "budget_ratio": res["budget_ratio"],
    }
    paths = save_figure(fig, "fig33_verification_schedules", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

"""Shipped lossy rules against the exact sequence-level fronts: expected rejections (bonus off) against the sequence TV from the target's law (left; the front is a linear program) and against the sequence KL (right; the front is traced exactly by its Lagrange multipliers), one random 4-token chain, T = 5 tokens from a fixed start. Markers: speculative cascades (Chow deferral), FSD (Jensen-Shannon threshold), BiLD's rollback and Medusa's typical acceptance at several settings each; every point sits on or above both fronts, most far above.

The numbers are those of simulations/lossy_rules_front.py, read from ``--results DIR`` (default: the results folder beside the figures folder when it exists, else the checkout's results/).

Usage: python figures/fig31_lossy_rules_front.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure

MARKERS = {"cascade (Chow)": "o", "FSD (JS)": "s", "BiLD rollback": "^", "typical (Medusa)": "D"}


def main(argv=None):
    args = figure_args(__doc__, argv)
    res = load_results("lossy_rules_front", args.out, args.results)
    ch = res["chains"][0]
    rows = [r for r in res["rows"] if r["chain"] == ch["seed"]]
    data = {
        "chain": ch,
        "rows": rows,
        "vocab": res["vocab"],
        "horizon": res["horizon"],
        "source": res["command"],
    }
    fig, axes = figure(ncols=2, width=3.3, height=2.7)
    for ax, x, front_x, front_y, label in (
        (axes[0], "sequence_tv", ch["tv_grid"], ch["tv_front"], "sequence TV from the target"),
        (axes[1], "sequence_kl", ch["kl"], ch["kl_front"], "sequence KL(O || P_T), nats"),
    ):
        ax.plot(front_x, front_y, "-", color="k", lw=1.4, label="exact front")
        for i, (fam, m) in enumerate(MARKERS.items()):
            pts = [r for r in rows if r["family"] == fam]
            ax.plot(
                [r[x] for r in pts],
                [r["rejections"] for r in pts],
                m,
                color=PALETTE[i],
                ms=4,
                ls="none",
                label=fam,
            )
        ax.set_xlabel(label)
        ax.set_ylabel("expected rejections (bonus off)")
        ax.set_xlim(left=0)
        ax.set_ylim(bottom=0)
    axes[1].set_xscale("symlog", linthresh=0.01)
    axes[0].legend(fontsize=5.5, loc="upper right")
    paths = save_figure(fig, "fig31_lossy_rules_front", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

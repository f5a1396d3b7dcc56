"""The exact sequence-level quality/speed front of lossy speculative decoding (bonus off, fixed
start state) against the per-step heuristics. Black: the least expected rejections R*(eps) of
any rejection-based rule whose emitted sequence law is within TV eps of the target's (a linear
program over the V^T sequence masses; convex, non-increasing, from Theorem 1's sum at eps = 0
to 0 at eps = TV(draft's law, target's law)); the black dot is Theorem 1. Coloured markers:
the biased-acceptance heuristics at their exact (sequence TV, expected rejections), filled
with the optimal rejection law norm(max(t - d b, 0)), open with the naive law (the target);
grey: the per-step optimal mixtures (1 - lambda) min(1, t/d) + lambda of Yin et al.'s
Theorems 4-5, on the single-position Pareto line at every step. Every heuristic, and the
whole per-step line, lies above the front (the line meets it only at its two ends): at the
same sequence quality the optimal sequence-level rule (standard speculative sampling against the LP's law O) rejects less.
(a) A random chain with V = 3, T = 4; (b) V = 4, T = 5.
"""

import numpy as np

import spectheory as st
from spectheory.analysis.sequence_front import optimal_sequence_front
from spectheory.analysis.sequence_front_gaps import front_gaps, heuristic_rules
from spectheory.app.plotting import PALETTE, figure, figure_args, save_figure

MARKERS = {"additive": "o", "ratio": "s", "lenience": "^", "typical": "D"}


def panel(ax, chain, T, quick, title):
    grid_n = 13 if quick else 41
    rules = heuristic_rules(quick)
    gaps, _ = front_gaps(chain, T, rules, start_state=0)
    max_tv = optimal_sequence_front(chain, T, 0.0, start_state=0).max_tv
    front = optimal_sequence_front(chain, T, np.linspace(0.0, max_tv, grid_n), start_state=0)
    ax.plot(front.eps, front.rejections, color="k", lw=1.5, label="exact front (LP)", zorder=5)
    ax.plot([0.0], [front.theorem1], "o", color="k", ms=4, zorder=6)
    data = {
        "front": {
            "eps": front.eps,
            "rejections": front.rejections,
            "theorem1": front.theorem1,
            "max_tv": front.max_tv,
        },
        "heuristics": [g.as_dict() for g in gaps],
    }
    mix = [g for g in gaps if g.family == "mixture/optimal"]
    ax.plot(
        [0.0] + [g.sequence_tv for g in mix],
        [front.theorem1] + [g.rejections for g in mix],
        color="0.6",
        lw=3,
        alpha=0.6,
        label="per-step optimal mixture",
    )
    for j, fam in enumerate(MARKERS):
        for law, fill in (("optimal", PALETTE[j]), ("target", "none")):
            pts = [g for g in gaps if g.family == f"{fam}/{law}"]
            ax.plot(
                [g.sequence_tv for g in pts],
                [g.rejections for g in pts],
                MARKERS[fam],
                ls="none",
                color=PALETTE[j],
                mfc=fill,
                ms=3.5,
                label=f"{fam}, {'optimal' if law == 'optimal' else 'naive'} law",
            )
    ax.set_xlabel("TV(generated sequence law, target's)")
    ax.set_ylabel(f"expected rejections (T = {T}, bonus off)")
    ax.set_title(title)
    ax.set_xlim(-0.02, front.max_tv + 0.05)
    ax.set_ylim(bottom=0)
    return data


def main(argv=None):
    args = figure_args(__doc__, argv)
    fig, (ax, bx) = figure(ncols=2)
    data = {
        "a": panel(ax, st.DecodingChain.random(3, rng=1), 4, args.quick, "(a) V = 3, T = 4"),
        "b": panel(
            bx,
            st.DecodingChain.random(4, rng=3),
            3 if args.quick else 5,
            args.quick,
            "(b) V = 4, T = " + ("3" if args.quick else "5"),
        ),
    }
    ax.legend(fontsize=5, loc="upper right")
    save_figure(fig, "fig14_sequence_front", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

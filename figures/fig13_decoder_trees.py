"""Trees in the real decoder against the exact theory. (a) Tokens per target call measured by the decoder (T new tokens per sequence, 95% intervals) against the full-horizon prediction along target paths for every (tree, verifier) with a shipped draft and for Medusa heads' trees (filled: Rao-Blackwellised exact per-node acceptances; recursive rejection without replacement with 4 children pruned below 1e-6 with its error bound; traversal from round emission weights with the target path forced onto one branch, importance-weighted on branching trees, hence its wider intervals), and, open markers at the same measured value, the exact value of the order-2 chain fitted to the models (where the chain's exact engine reaches at V = 256); the dashed line is y = x. (b) First round's accepted length: the exact outcome law of the decoder's own drafted trees (every verifier, traversal included) against the decoder's first rounds. (c) Typical acceptance against the per-step Pareto front at a held-out prompt: the front rho + L = TV(p, q) with q = Medusa head 1's law (line), the exact (rejection, TV loss) of typical acceptance on one sampled draft (square), and the sparse Medusa tree's measured first-position rejection rate and first-byte TV loss (star) beside the lossless tree verifiers' measured TVs (plug-in noise floor, circles).

The numbers are those of simulations/decoder_trees.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/).

Usage: python figures/fig13_decoder_trees.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure

MARKERS = {"tree_rrs": "o", "tree_rrs_wo": "s", "tree_topk": "^", "traversal": "D"}


def main(argv=None):
    args = figure_args(__doc__, argv)
    res = load_results("decoder_trees", args.out, args.results)
    rows = res["comparisons"]
    data = {
        "comparisons": rows,
        "typical_front": res["typical_front"],
        "chisquare": res["chisquare"],
        "chains": res.get("chains"),
        "source": res["command"],
    }
    chain_key = max((k for r in rows for k in r if k.startswith("chain") and r[k] is not None), default=None)
    fig, axes = figure(ncols=3, width=3.0, height=2.7)
    trees = sorted({(r["drafter"], r["tree"]) for r in rows})
    colors = {t: PALETTE[i % len(PALETTE)] for i, t in enumerate(trees)}
    for ax, (pk, mk, sek, psek, title) in zip(
        axes[:2],
        (
            (
                "predicted_tokens_per_call",
                "tokens_per_call",
                "tokens_per_call_se",
                "predicted_tokens_per_call_se",
                "(a) tokens per target call",
            ),
            (
                "predicted_first",
                "measured_first",
                "measured_first_se",
                "predicted_first_se",
                "(b) first round: accepted drafts",
            ),
        ),
    ):
        lo, hi = np.inf, 0.0
        for r in rows:
            if pk not in r:
                continue
            x, y = r[pk], r[mk]
            ax.errorbar(
                x,
                y,
                xerr=1.96 * r[psek],
                yerr=1.96 * r[sek],
                fmt=MARKERS.get(r["verifier"], "o"),
                color=colors[(r["drafter"], r["tree"])],
                ms=3.5,
                lw=0.8,
            )
            lo, hi = min(lo, x, y), max(hi, x, y)
            if pk == "predicted_tokens_per_call" and chain_key and r.get(chain_key) is not None:
                ax.plot(
                    r[chain_key],
                    y,
                    MARKERS.get(r["verifier"], "o"),
                    mfc="none",
                    color=colors[(r["drafter"], r["tree"])],
                    ms=4.5,
                    lw=0.8,
                )
                lo, hi = min(lo, r[chain_key]), max(hi, r[chain_key])
        ax.plot([0.95 * lo, 1.05 * hi], [0.95 * lo, 1.05 * hi], color="0.4", lw=0.8, ls="--")
        ax.set_xlabel("predicted (exact theory)")
        ax.set_ylabel("measured (decoder)")
        ax.set_title(title)
    for t in trees:
        axes[0].plot([], [], "o", color=colors[t], ms=3.5, label=f"{t[0]} {t[1]}")
    for v, m in MARKERS.items():
        axes[1].plot([], [], m, color="0.3", ms=3.5, label=v)
    if chain_key:
        axes[0].plot(
            [],
            [],
            "o",
            mfc="none",
            color="0.3",
            ms=4.5,
            label=f"order-{chain_key[5:].split('_')[0]} chain (exact)",
        )
    axes[0].legend(fontsize=5.5, loc="upper left")
    axes[1].legend(fontsize=5.5, loc="upper left")
    ax = axes[2]
    tf = res["typical_front"]
    ax.plot(tf["front_rejection"], tf["front_loss"], color=PALETTE[0], label="Pareto front (head 1 as q)")
    ex = tf["typical_single_draft_exact"]
    ax.plot(ex["rejection"], ex["loss"], "s", color=PALETTE[3], ms=5, label="typical, one draft (exact)")
    meas = tf["typical_tree_measured"]
    ax.plot(
        meas["rejection_first_position"],
        meas["tv_first_token"],
        "*",
        color=PALETTE[1],
        ms=9,
        label="typical, sparse tree (measured)",
    )
    for r in res["chisquare"]:
        if not r["broken"] and not r["lossy"]:
            ax.plot(0.0, r["tv_first_token"], "o", color="0.5", ms=3)
    ax.plot([], [], "o", color="0.5", ms=3, label="lossless trees (measured)")
    ax.set_xlabel("rejection probability at the first position")
    ax.set_ylabel("TV loss of the first byte")
    ax.set_title("(c) typical acceptance vs the front")
    ax.legend(fontsize=5.5, loc="upper right")
    save_figure(fig, "fig13_decoder_trees", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

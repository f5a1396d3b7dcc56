"""Block drafters, exactly: a parallel head's acceptance decays with depth and its cross-entropy optimum is not its ceiling (left), because what is accepted at depth k depends on what was accepted before it (right). Left: exact long-run tokens per target call at draft length K on a random 6-token chain, for the chain's autoregressive draft, the parallel head trained by cross-entropy on the draft (the draft's k-step marginals), the oracle parallel head (the target's k-step marginals), the acceptance-LP parallel head (each depth's law maximising that depth's acceptance given the earlier depths) and the draft's Markov head (on a first-order chain, the draft itself: its curve is the autoregressive one, computed by another engine). Right: the conditional acceptance at each depth, P(depth k accepted | depths before k accepted), at the largest K. Third panel: tokens per target call (exact, T = 128) of DDTree-style trees of n nodes grown from each parallel head's per-depth laws (children sampled and checked by recursive rejection sampling; the oracle head also with top-k children): a tree spends draft tokens where the head's rank probabilities are largest.

The numbers are those of simulations/block_drafters.py, read from ``--results DIR`` (default: the results folder beside the figures folder when it exists, else the checkout's results/).

Usage: python figures/fig34_block_drafters.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure

STYLE = {
    "autoregressive draft": ("o-", 0),
    "parallel head (draft marginals)": ("s--", 1),
    "oracle parallel head (target marginals)": ("^--", 2),
    "acceptance-LP parallel head": ("D-", 3),
    "Markov head (draft)": ("x:", 4),
}


def main(argv=None):
    args = figure_args(__doc__, argv)
    res = load_results("block_drafters", args.out, args.results)
    ks = res["ks"]
    data = {
        "ks": ks,
        "curves": res["curves"],
        "conditional_acceptance": res["conditional_acceptance"],
        "source": res["command"],
    }
    data["head_trees"] = res["head_trees"]
    data["tree_sizes"] = res["tree_sizes"]
    fig, axes = figure(ncols=3, width=3.0, height=2.6)
    ax = axes[0]
    for name, curve in res["curves"].items():
        marker, c = STYLE.get(name, ("o-", 5))
        ax.plot(ks, curve, marker, ms=3, color=PALETTE[c % len(PALETTE)], label=name)
    ax.set_xlabel("draft length K")
    ax.set_ylabel("tokens per target call")
    ax.set_title("exact long run")
    ax.set_xticks(ks)
    ax.legend(fontsize=5.5, loc="upper left")
    ax = axes[1]
    for name, acc in res["conditional_acceptance"].items():
        marker, c = STYLE.get(name, ("o-", 5))
        ax.plot(range(1, len(acc) + 1), acc, marker, ms=3, color=PALETTE[c % len(PALETTE)])
    ax.set_xlabel("depth k")
    ax.set_ylabel("P(accept k | accepted < k)")
    ax.set_title(f"conditional acceptance, K = {ks[-1]}")
    ax.set_xticks(ks)
    ax = axes[2]
    for name, curve in res["head_trees"].items():
        base = name.rsplit(", ", 1)[0]
        marker, c = STYLE.get(base, ("o-", 5))
        if name.endswith("tree_topk"):
            marker = "v:"
        ax.plot(res["tree_sizes"], curve, marker, ms=3, color=PALETTE[c % len(PALETTE)])
    ax.set_xlabel("tree nodes n")
    ax.set_ylabel("tokens per target call")
    ax.set_title(f"head trees, T = {res['tree_horizon']} (dotted: top-k)")
    paths = save_figure(fig, "fig34_block_drafters", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

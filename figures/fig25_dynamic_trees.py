"""Dynamic draft trees and controllers on one axis: time per token as a ratio to the exact path optimum (1 = the best single-path drafter with at most 4 drafts), with the hindsight oracle below 1. Rows: two built-in chains (easy/hard at stay 0.9, a random chain over V = 4) at draft step costs c = 0.05 and 0.2; T = 40 tokens. Trees have at most 6 nodes with the draft's top-k children, verified by tree_topk: EAGLE-2's confidence tree, OPT-Tree's rule, the exact per-state optimal tree and two static trees; controllers draft a path (Leviathan's gamma exact; SGLang's adaptive steps by Monte Carlo, open marker with 1 SE bars). Filled markers are exact.

The numbers are those of simulations/dynamic_trees.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at small sizes when that file is absent).

Usage: python figures/fig25_dynamic_trees.py [--quick] [--out DIR] [--results DIR]
"""

from __future__ import annotations

from spectheory.app.plotting import (
    PALETTE,
    figure,
    figure_args,
    load_results,
    load_script,
    ratio_axis,
    save_figure,
)

STYLE = {
    "EAGLE-2 tree": (PALETTE[0], "o"),
    "OPT-Tree": (PALETTE[1], "s"),
    "optimal tree (per state)": (PALETTE[3], "D"),
    "static greedy path": (PALETTE[5], "x"),
    "static tree [2, 1, 1]": (PALETTE[5], "+"),
    "Leviathan gamma": (PALETTE[4], "v"),
    "SGLang adaptive steps": (PALETTE[4], "P"),
    "optimum (state)": (PALETTE[7], "|"),
    "hindsight oracle": (PALETTE[2], "<"),
}


def _compute_small():
    mod = load_script("simulations", "dynamic_trees")
    import numpy as np

    rows = []
    for label, chain in mod.chains():
        for c in (0.05, 0.2):
            rows += mod.cell_rows(label, chain, 12, c, 4, 6, 100, np.random.default_rng(0))[0]
    return {"rows": rows, "T": 12, "budget": 6, "command": "computed by fig25 (small)"}


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("dynamic_trees", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    rows = res["rows"]
    cells = list(dict.fromkeys((r["chain"], r["c"]) for r in rows))
    fig, ax = figure(width=6.8, height=0.42 * len(cells) + 1.4)
    data = {"T": res["T"], "budget": res["budget"], "source": res.get("command")}
    data["cells"] = ratio_axis(ax, rows, STYLE, "name")
    fig.legend(loc="outside lower center", ncol=3, fontsize=6.5)
    save_figure(fig, "fig25_dynamic_trees", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

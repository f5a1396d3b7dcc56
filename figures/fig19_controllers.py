"""Engines' draft-length controllers on one axis: time per token as a ratio to the exact path optimum (1 = the best any drafter can do), with the hindsight oracle (which knows each round's accepted length before drafting) below 1. Rows: the package's built-in chains (easy/hard at stay 0.9 and 0.5, two random chains over V = 4) at draft step costs c = 0.05 and 0.2; T = 40 tokens, at most 5 drafts per round. Filled markers are exact (Leviathan's gamma, HuggingFace's confidence threshold and +2/-1 schedule, vLLM's adaptive K with a one-round window, the state optimum), open ones Monte Carlo with 1 SE bars (HuggingFace's ROC-tuned threshold, vLLM's adaptive K with its 10-round window, a UCB bandit over gamma). The distance from a controller to 1 is its reducible gap, from 1 to the oracle the irreducible one.

The numbers are those of simulations/adaptive_controllers.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at small sizes when that file is absent).

Usage: python figures/fig19_controllers.py [--quick] [--out DIR] [--results DIR]
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
    "Leviathan gamma": (PALETTE[0], "o"),
    "HF confidence 0.4": (PALETTE[1], "s"),
    "HF schedule + confidence": (PALETTE[3], "v"),
    "vLLM adaptive K (1-round window)": (PALETTE[4], "D"),
    "HF ROC-tuned threshold": (PALETTE[1], "P"),
    "vLLM adaptive K (10-round window)": (PALETTE[4], "X"),
    "UCB bandit over gamma": (PALETTE[5], "*"),
    "optimum (state)": (PALETTE[7], "|"),
    "hindsight oracle": (PALETTE[2], "<"),
}


def _compute_small():
    mod = load_script("simulations", "adaptive_controllers")
    import numpy as np

    rows = []
    for label, chain in mod.chains(True):
        for c in (0.05, 0.2):
            rows += mod.finite_rows(label, chain, 16, c, 4, 200, np.random.default_rng(0))[0]
    return {"rows": rows, "T": 16, "max_depth": 4, "command": "computed by fig19 (small)"}


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("adaptive_controllers", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    rows = res["rows"]
    cells = list(dict.fromkeys((r["chain"], r["c"]) for r in rows))
    fig, ax = figure(width=6.8, height=0.42 * len(cells) + 1.4)
    data = {"T": res["T"], "max_depth": res["max_depth"], "source": res.get("command")}
    data["cells"] = ratio_axis(ax, rows, STYLE, "controller")
    fig.legend(loc="outside lower center", ncol=3, fontsize=6.5)
    save_figure(fig, "fig19_controllers", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

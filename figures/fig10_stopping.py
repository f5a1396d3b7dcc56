"""How long to draft: the exact expected time per generated token of the draft-length rules that engines ship, as a ratio to the exact optimum (1 = optimal), against the draft step cost c (T = 32 tokens, at most 6 drafts per round). (a) Random first-order chains over V = 4 tokens (mean over 4 chains), ratio to the full-information optimum (an oracle that knows the drafted path and the target's laws: SpecDec++'s rule with per-state thresholds); (b) the easy/hard chain (acceptance 0.95 or 0.3 by context, stretches of mean length 10); (c) random chains over V = 16 tokens and (d) order-1 chains fitted to samples of the shipped byte-level target and each draft (V = 256), ratio to the state-information optimum (the round's length chosen from its start state, by dynamic programming; rules that look along the drafted path can go below 1 there). Leviathan's gamma and the best fixed gamma coincide on most chains; HuggingFace's confidence rule (top probability < 0.4) stops too early wherever the draft is spread out (up to 1.8 times the optimal time) and its +2/-1 schedule loses 5-30%; a single SpecDec++ threshold, tuned, comes within a few percent of the oracle.

The numbers are those of simulations/stopping_policies.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at small sizes when that file is absent).

Usage: python figures/fig10_stopping.py [--quick] [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure
from spectheory.stopping.sweep import POLICY_NAMES

STYLE = {
    "Leviathan gamma": (PALETTE[0], "o", "-"),
    "best fixed gamma": (PALETTE[5], "", ":"),
    "HF confidence 0.4": (PALETTE[1], "s", "-"),
    "HF schedule": (PALETTE[3], "^", "-"),
    "HF schedule + confidence": (PALETTE[3], "v", "--"),
    "entropy rule (tuned)": (PALETTE[4], "D", "-"),
    "SpecDec++ threshold (tuned)": (PALETTE[2], "x", "-"),
    "optimum (state)": (PALETTE[7], "", "--"),
    "optimum (path)": (PALETTE[7], "", "-"),
}


def _compute_small():
    import spectheory as st
    from spectheory.chain.examples import easy_hard_chain
    from spectheory.stopping.sweep import policy_table

    costs = [0.05, 0.2]
    chains = [
        ("random V=4", st.DecodingChain.random(4, concentration=0.3, similarity=0.3, rng=100)),
        ("easy/hard", easy_hard_chain(0.9, group_size=2)),
    ]
    rows = []
    for fam, chain in chains:
        for c in costs:
            for name, r in policy_table(chain, 16, c, max_depth=4).items():
                rows.append({"family": fam, "chain": "", "c": c, "policy": name, "ratio": r["ratio"]})
    return {"rows": rows, "costs": costs, "T": 16, "max_depth": 4, "command": "computed by fig10 (small)"}


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("stopping_policies", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    rows, costs = res["rows"], res["costs"]
    models = "shipped models, order-1 fits (vs state optimum)"
    fams = [
        f
        for f in ("random V=4", "easy/hard", "random V=16 (vs state optimum)", models)
        if any(r["family"] == f for r in rows)
    ]
    titles = {
        "random V=4": "(a) random chains, V = 4",
        "easy/hard": "(b) easy/hard chain, stay 0.9",
        "random V=16 (vs state optimum)": "(c) random chains, V = 16 (vs state optimum)",
        models: "(d) shipped models' order-1 chains (vs state opt.)",
    }
    ncols = 2 if len(fams) > 2 else len(fams)
    nrows = -(-len(fams) // ncols)
    fig, grid = figure(ncols=ncols, nrows=nrows, width=3.2, height=2.6, squeeze=False)
    axes = grid.ravel()
    for ax in axes[len(fams) :]:
        ax.set_visible(False)
    data = {
        "T": res["T"],
        "max_depth": res["max_depth"],
        "costs": costs,
        "source": res.get("command"),
        "panels": {},
    }
    for ax, fam in zip(axes, fams):
        panel = {}
        for name in POLICY_NAMES:
            vals = []
            for c in costs:
                sel = [
                    r["ratio"]
                    for r in rows
                    if r["family"] == fam
                    and r["policy"] == name
                    and r["c"] == c
                    and (fam != "easy/hard" or r["chain"] in ("", "stay=0.9"))
                ]
                vals.append(float(np.mean(sel)) if sel else np.nan)
            if np.all(np.isnan(vals)):
                continue
            color, marker, ls = STYLE[name]
            ax.plot(costs, vals, color=color, marker=marker or None, ls=ls, ms=3.5, lw=1.2, label=name)
            panel[name] = vals
        ax.set_xscale("log")
        ax.set_xlabel("draft step cost c")
        ax.set_ylabel("time / optimum")
        ax.set_title(titles[fam])
        data["panels"][fam] = panel
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=5, fontsize=6.5)
    save_figure(fig, "fig10_stopping", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

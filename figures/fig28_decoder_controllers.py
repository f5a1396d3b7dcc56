"""Engines' draft-length controllers and dynamic draft trees on the shipped models: time per token as a ratio to the best fixed gamma (1), with the hindsight oracle (which knows each round's accepted length before drafting) below it. Rows: the shipped byte-level target with draft-small at draft step costs c = 0.05 and 0.2 (time in target calls: c per draft step or kept tree node plus 1 per call); T = 24 tokens after 16-byte held-out prompts, at most 7 drafts per round. Controllers (HuggingFace's +2/-1 schedule, vLLM's adaptive K, SGLang's adaptive steps, a UCB bandit and HedgeSpec's NormalHedge over gamma) are predicted from one pass of each model along target-sampled paths with the verification coins drawn per path (open markers, 1 SE bars); the oracle and the dynamic trees (EAGLE-2's confidence tree, 6 nodes, top-2, depth 4; OPT-Tree, 4 nodes, depth 3; top-k children verified by tree_topk, where a round is a function of the target's path) are exact given the paths (filled). Crosses (in the colour of the prediction): the decoder's measured time per token for two controllers and both trees at c = 0.05 (1 SE bars; results/decoder_controllers.json, "checks"). The per-state optimal tree reads the target's laws and does not run in the decoder (scored on chains in fig25).

The numbers are those of simulations/decoder_controllers.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at small sizes when that file is absent).

Usage: python figures/fig28_decoder_controllers.py [--quick] [--out DIR] [--results DIR]
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
    "HF schedule (+2/-1)": (PALETTE[3], "v"),
    "vLLM adaptive K": (PALETTE[4], "X"),
    "SGLang adaptive steps": (PALETTE[0], "P"),
    "UCB bandit over gamma": (PALETTE[5], "*"),
    "HedgeSpec (NormalHedge)": (PALETTE[1], "s"),
    "EAGLE-2 tree": (PALETTE[0], "o"),
    "OPT-Tree": (PALETTE[2], "D"),
    "hindsight oracle": (PALETTE[2], "<"),
}


def _measured(ax, res, cells):
    """The decoder's measured values (``checks``) as crosses on their cells' lines."""
    out = {}
    for ch in res.get("checks", []):
        cell = (ch["draft"], ch["c"])
        if cell not in cells:
            continue
        ref = next(
            r["time"]
            for r in res["rows"]
            if (r["chain"], r["c"]) == cell and r["name"].startswith("best fixed")
        )
        y = cells.index(cell)
        first = not out
        ax.errorbar(
            ch["measured"] / ref,
            y + 0.22,
            xerr=ch["measured_se"] / ref,
            color=STYLE.get(ch["controller"], ("k", ""))[0],
            marker="x",
            ms=4,
            lw=0.8,
            ls="none",
            label="measured in the decoder (colour: its prediction)" if first else None,
        )
        out[f"{ch['controller']}, c={ch['c']}"] = [ch["measured"] / ref, ch["measured_se"] / ref]
    return out


def _compute_small():
    import json
    import tempfile
    from pathlib import Path

    mod = load_script("simulations", "decoder_controllers")
    with tempfile.TemporaryDirectory() as tmp:
        mod.main(["--quick", "--out", tmp])
        return json.loads((Path(tmp) / "decoder_controllers.json").read_text())


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("decoder_controllers", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    rows = [r for r in res["rows"] if not r["name"].startswith("best fixed gamma")]
    cells = list(dict.fromkeys((r["chain"], r["c"]) for r in rows))
    fig, ax = figure(width=6.8, height=0.42 * len(cells) + 1.4)
    data = {"T": res["T"], "max_depth": res["max_depth"], "source": res.get("command")}
    data["cells"] = ratio_axis(ax, rows, STYLE, "name", xlabel="time per token / best fixed gamma")
    data["measured"] = _measured(ax, res, cells)
    data["checks"] = res.get("checks", [])
    fig.legend(loc="outside lower center", ncol=3, fontsize=6.5)
    save_figure(fig, "fig28_decoder_controllers", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

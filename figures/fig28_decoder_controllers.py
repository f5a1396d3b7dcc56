"""Engines' draft-length controllers on the shipped models: time per token as a ratio to the best fixed gamma (1), with the hindsight oracle (which knows each round's accepted length before drafting) below it. Rows: the shipped byte-level target with draft-small at draft step costs c = 0.05 and 0.2 (time in target calls: c per draft step plus 1 per call); T = 24 tokens after 16-byte held-out prompts, at most 7 drafts per round. Controllers (HuggingFace's +2/-1 schedule, vLLM's adaptive K, SGLang's adaptive steps, a UCB bandit and HedgeSpec's NormalHedge over gamma) are predicted from one pass of each model along target-sampled paths with the verification coins drawn per path (open markers, 1 SE bars); the oracle is exact given the paths (filled). The decoder's measured time per token for two controllers agrees with the prediction (results/decoder_controllers.json, "checks").

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
    "hindsight oracle": (PALETTE[2], "<"),
}


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
    data["checks"] = res.get("checks", [])
    fig.legend(loc="outside lower center", ncol=3, fontsize=6.5)
    save_figure(fig, "fig28_decoder_controllers", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

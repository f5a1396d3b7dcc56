"""The theory on a real pretrained LLM (SmolLM2-135M, V = 49,152): tokens per target call predicted along target paths against the decoder's measured runs, per draft length gamma (bars: 5 SE), with the exact value of the model's sparse last-token Markov abstraction (squares). Predicted: the exact round bookkeeping along target-sampled paths (spectheory.validation.compare_theory); measured: the package's speculative decoder on the same prompts; abstraction: chain.protocol on the fitted sparse chain at the decoder's horizon (its certified truncation interval in the results file). The draft is the target's 2-layer early exit unless a shipped same-tokenizer draft was named.

The numbers are those of simulations/real_theory.py, read from ``--results DIR`` (default: the results folder beside the figures folder when it exists, else the checkout's results/).

Usage: python figures/fig32_real_theory.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("real_theory", args.out, args.results)
    except FileNotFoundError as err:  # the real extra is optional: no results, no figure
        print(f"fig32_real_theory: skipped: {err}")
        return
    ap = res["along_path"]
    tpc = ap["tokens_per_call"]
    g = np.array([r["gamma"] for r in tpc], dtype=float)
    abst = {r["gamma"]: r["tokens_per_call"] for r in res["abstraction"]["at_decoder_horizon"]}
    data = {"tokens_per_call": tpc, "abstraction": abst, "source": res["command"]}
    fig, axes = figure(ncols=1, width=3.6, height=2.7)
    ax = axes[0] if isinstance(axes, (list, tuple, np.ndarray)) else axes
    ax.errorbar(
        g - 0.06,
        [r["predicted"] for r in tpc],
        yerr=[5 * r["predicted_se"] for r in tpc],
        fmt="o",
        ms=3,
        color=PALETTE[0],
        capsize=2,
        label="predicted along target paths",
    )
    ax.errorbar(
        g + 0.06,
        [r["measured"] for r in tpc],
        yerr=[5 * r["measured_se"] for r in tpc],
        fmt="^",
        ms=3,
        color=PALETTE[1],
        capsize=2,
        label="measured (decoder)",
    )
    ax.plot(
        g, [abst[int(x)] for x in g], "s", ms=3, mfc="none", color=PALETTE[2], label="last-token abstraction"
    )
    ax.set_xlabel("draft length gamma")
    ax.set_ylabel("tokens per target call")
    ax.set_xticks(g)
    ax.set_title(f"{res['target']}, T = {ap['horizon']}, bars 5 SE", fontsize=8)
    ax.legend(fontsize=6)
    paths = save_figure(fig, "fig32_real_theory", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

"""Which draft to train: exact tokens per target call of drafts fitted by forward KL, reverse KL, JSD, TV and the multi-step objective (tokens per call at the panel's gamma, fine-tuned from the forward-KL draft), as a ratio to the best draft found for that gamma (1 = the reference). Targets: second-order chains over V = 6 tokens, from low entropy (concentration 0.2) to high (5), with a share `visible` (0 or 0.6) of their law in the last token; every draft sees the last token only, so no draft equals the target. T = 32, bonus on, on-policy weights (the target's state law). TV, which minimises the Theorem-1 sum exactly, is the best divergence in every cell; forward KL, the loss the shipped drafts were trained with, loses most at low entropy and long drafts, where the multi-step objective recovers most of the gap.

The numbers are those of simulations/draft_objectives.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at quick size when that file is absent).

Usage: python figures/fig26_draft_objectives.py [--quick] [--out DIR] [--results DIR]
"""

from __future__ import annotations

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure

STYLE = {
    "forward_kl": (PALETTE[0], "o", "forward KL"),
    "reverse_kl": (PALETTE[1], "s", "reverse KL"),
    "jsd": (PALETTE[2], "^", "JSD"),
    "tv": (PALETTE[3], "D", "TV (= Theorem-1 sum)"),
    "tokens_per_call": (PALETTE[4], "*", "tokens per call @ gamma"),
}


def _compute_small():
    import importlib.util
    import json
    import tempfile
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "simulations" / "draft_objectives.py"
    spec = importlib.util.spec_from_file_location("_draft_objectives", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory() as tmp:
        mod.main(["--quick", "--out", tmp])
        return json.loads((Path(tmp) / "draft_objectives.json").read_text())


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("draft_objectives", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    rows, gammas = res["rows"], res["gammas"]
    cells = res["cells"]
    fig, axes = figure(ncols=len(gammas), width=3.4, height=2.8, squeeze=False, sharey=True)
    data = {"source": res.get("command"), "horizon": res["horizon"], "panels": {}}
    labels = [f"c={c['concentration']:g}\nvis={c['visible']:g}\nH={c['entropy']:.2f}" for c in cells]
    for ax, g in zip(axes[0], gammas):
        panel = data["panels"][f"gamma={g}"] = {}
        for k, (name, (color, marker, label)) in enumerate(STYLE.items()):
            ys = []
            for c in cells:
                r = next(
                    r
                    for r in rows
                    if (r["concentration"], r["visible"], r["gamma"], r["objective"])
                    == (c["concentration"], c["visible"], g, name)
                )
                ys.append(r["ratio_to_reference"])
            xs = [i + 0.1 * (k - 2) for i in range(len(cells))]
            ax.plot(
                xs, ys, marker=marker, color=color, ls="none", ms=4, label=label if g == gammas[0] else None
            )
            panel[name] = ys
        ax.axhline(1.0, color="k", lw=0.8)
        ax.set_xticks(range(len(cells)), labels, fontsize=5.5)
        ax.set_title(f"gamma = {g}", fontsize=8)
    axes[0][0].set_ylabel(f"tokens per call / reference (T={res['horizon']})")
    fig.legend(loc="outside lower center", ncol=3, fontsize=6.5)
    save_figure(fig, "fig26_draft_objectives", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

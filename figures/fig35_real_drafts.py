"""Distillation or compression on a real LLM (SmolLM2-135M, one CPU thread): (a) each same-tokenizer draft's exact acceptance 1 - E[TV] along the target's own sampled paths (bars: 2 SE) against its measured cost ratio c = draft step / target step, with the break-even curve and the speedup-1.5 curve of the i.i.d. formula max over gamma of (1 - a^(gamma+1)) / ((1 - a)(gamma c + 1)) (verification free); colours: distilled (trained in the repository on the target's samples), compression (early exit, int8, 4-bit, low rank) and retrieval (prompt lookup). (b) The distilled draft's held-out acceptance against training steps (batches of 4 target paths of 96 tokens; the same batches for each), one curve per objective of the draft-objective lab at equal budgets (forward KL, TV, the exact tokens-per-call objective); every curve starts at the 2-layer early exit.

The numbers are those of simulations/real_drafts.py (and the training metadata of simulations/train_real_draft.py it copies), read from ``--results DIR``.

Usage: python figures/fig35_real_drafts.py [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure

FAMILY_COLOUR = {"distillation": PALETTE[3], "compression": PALETTE[0], "retrieval": PALETTE[2]}


def iid_speedup(a: np.ndarray, c: np.ndarray, gammas=range(1, 11)) -> np.ndarray:
    """Leviathan et al.'s speedup at the best gamma for i.i.d. acceptance ``a`` and cost ratio ``c``."""
    return np.max([(1 - a ** (g + 1)) / ((1 - a) * (g * c + 1)) for g in gammas], axis=0)


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("real_drafts", args.out, args.results)
    except FileNotFoundError as err:  # the real extra is optional: no results, no figure
        print(f"fig35_real_drafts: skipped: {err}")
        return
    rows = res["rows"]
    fig, (ax, bx) = figure(ncols=2, width=3.4, height=2.7)
    c_grid = np.logspace(-3, 0.5, 200)
    a_grid = np.linspace(0.001, 0.999, 400)
    S = iid_speedup(a_grid[:, None], c_grid[None, :])
    cs = ax.contour(
        c_grid, a_grid, S, levels=[1.0, 1.5], colors="0.6", linewidths=0.7, linestyles=["--", ":"]
    )
    del cs
    ax.plot([], [], "--", color="0.6", lw=0.7, label="i.i.d. speedup 1")
    ax.plot([], [], ":", color="0.6", lw=0.7, label="i.i.d. speedup 1.5")
    for r in rows:
        colour = FAMILY_COLOUR.get(r["family"], PALETTE[7])
        c = max(r["cost_ratio"], 1e-3)
        ax.errorbar(c, r["alpha"], yerr=2 * r["alpha_se"], fmt="o", ms=3, color=colour, capsize=2)
        ax.annotate(
            r["draft"].split(":")[-1], (c, r["alpha"]), fontsize=5, xytext=(3, 3), textcoords="offset points"
        )
    for fam, colour in FAMILY_COLOUR.items():
        ax.plot([], [], "o", ms=3, color=colour, label=fam)
    ax.set_xscale("log")
    ax.set_xlabel("cost ratio c (draft step / target step)")
    ax.set_ylabel("acceptance 1 - E[TV] along target paths")
    ax.set_ylim(0, 1.02)
    ax.set_title(f"(a) {res['target']}, {res['paths']} paths of {res['horizon']} tokens", fontsize=7)
    ax.legend(fontsize=5, loc="upper left")
    info = res.get("distillation") or {}
    curves = {}
    for i, (objective, run) in enumerate(sorted(info.get("runs", {}).items())):
        pts = run["curve"]
        curves[objective] = pts
        bx.plot(
            [p["step"] for p in pts],
            [p["alpha"] for p in pts],
            "o-",
            ms=2.5,
            color=PALETTE[i + 3],
            label=objective + (" (shipped)" if objective == info.get("default") else ""),
        )
    bx.set_xlabel("training steps (4 target paths each)")
    bx.set_ylabel("held-out acceptance 1 - E[TV]")
    bx.set_title("(b) distilling 2 layers, equal budgets", fontsize=7)
    if curves:
        bx.legend(fontsize=5)
    data = {
        "drafts": [
            {k: r[k] for k in ("draft", "family", "alpha", "alpha_se", "cost_ratio", "predicted_speedup")}
            for r in rows
        ],
        "curves": curves,
        "source": res["command"],
    }
    paths = save_figure(fig, "fig35_real_drafts", data=data, out_dir=args.out)
    print("wrote", *paths)


if __name__ == "__main__":
    main()

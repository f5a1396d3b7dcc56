"""Claimed vs exact for the verification rules of 2023-26: every rule shown is claimed lossless, and the right panel gives the exact total variation of its first gamma + 1 output tokens from the target (0 = lossless; Fractions from the literal enumeration) on Sun et al.'s binary example (target (1/3, 2/3), draft (2/3, 1/3)) at gamma 2 and 3 and the largest over random first-order chains (gamma 2). The left panel gives the exact expected accepted drafts of one round on Sun et al.'s example, with block verification (the optimum of lossless single-path rules) as dashed lines: only biased rules pass it (the HSD listing), and HSD's equations equal it, against the claimed gain. Red labels: a claim (lossless, or an efficiency claim against another rule) that fails exactly.

The numbers are those of simulations/verification_rules.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at quick size when that file is absent).

Usage: python figures/fig20_verification_rules.py [--quick] [--out DIR] [--results DIR]
"""

from __future__ import annotations

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure


def _compute_small():
    import importlib.util
    import json
    import tempfile
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "simulations" / "verification_rules.py"
    spec = importlib.util.spec_from_file_location("_verification_rules", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory() as tmp:
        mod.main(["--quick", "--out", tmp])
        return json.loads((Path(tmp) / "verification_rules.json").read_text())


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("verification_rules", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    rules = res["rules"]
    n = len(rules)
    fig, (ax_acc, ax_tv) = figure(ncols=2, width=3.4, height=0.32 * n + 1.3, sharey=True)
    h = 0.38
    data = {"source": res.get("command"), "rules": {}}
    for y, r in enumerate(rules):
        cells = r["instances"]
        sun = [c for c in cells if c["label"].startswith("Sun")]
        rand = [c for c in cells if not c["label"].startswith("Sun")]
        worst = max(rand, key=lambda c: c["tv_float"]) if rand else None
        for j, c in enumerate(sun):
            ax_acc.barh(
                y + (j - 0.5) * h,
                c["mean_accepted_float"],
                h,
                color=PALETTE[j],
                label=f"gamma={c['gamma']}" if y == 0 else None,
            )
            ax_acc.text(
                c["mean_accepted_float"],
                y + (j - 0.5) * h,
                f" {c['mean_accepted']}"
                + (f" ({c['target_calls']} calls)" if c.get("target_calls", "1") != "1" else ""),
                va="center",
                fontsize=5.5,
            )
        tvs = [(c["tv_float"], c["tv"], PALETTE[j]) for j, c in enumerate(sun)]
        if worst is not None:
            tvs.append((worst["tv_float"], worst["tv"], PALETTE[2]))
        hh = 0.8 / len(tvs)
        for j, (v, text, color) in enumerate(tvs):
            yy = y - 0.4 + (j + 0.5) * hh
            ax_tv.barh(yy, v, hh, color=color)
            ax_tv.text(v, yy, f" {text}", va="center", fontsize=5.5)
        data["rules"][r["rule"]] = {
            "claim": r["claim"],
            "verdict": r["verdict"],
            "accepted_sun": [c["mean_accepted"] for c in sun],
            "target_calls_sun": [c.get("target_calls", "1") for c in sun],
            "tv_sun": [c["tv"] for c in sun],
            "tv_worst_random": worst["tv"] if worst else None,
        }
    block = next((r for r in rules if r["rule"] == "block"), None)
    if block is not None:
        for j, c in enumerate(c for c in block["instances"] if c["label"].startswith("Sun")):
            ax_acc.axvline(c["mean_accepted_float"], color=PALETTE[j], ls="--", lw=0.8)
    from matplotlib.patches import Patch

    handles, labels = ax_acc.get_legend_handles_labels()
    handles.append(Patch(color=PALETTE[2]))
    labels.append("random chains, gamma=2 (largest TV)")
    ax_acc.set_yticks(range(n), [r["rule"] for r in rules])
    for tick, r in zip(ax_acc.get_yticklabels(), rules):
        if not r["lossless_claim_holds"] or r.get("efficiency_claim_holds") is False:
            tick.set_color("#D55E00")
    ax_acc.invert_yaxis()
    ax_acc.set_xlabel("accepted drafts per round (exact)")
    ax_tv.set_xlabel("TV of the first gamma+1 tokens (exact)")
    ax_acc.set_xlim(0, 2.3)
    ax_tv.set_xlim(0, max(c["tv_float"] for r in rules for c in r["instances"]) * 1.35 or 1)
    fig.legend(handles, labels, loc="outside lower center", ncol=3, fontsize=6.5)
    save_figure(fig, "fig20_verification_rules", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

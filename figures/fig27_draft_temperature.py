"""The draft temperature: the draft temperature that maximises tokens per target call, against the target's temperature (left), and tokens per call of the shipped pair over the draft temperature (right), with HuggingFace's default assistant temperature of 1.5 marked. Left: exact optima on the draft-objective lab's chains (second-order targets over V = 6 tokens, visible share 0.6, concentration 0.2, 1 and 5; their forward-KL draft sees the last token; T = 32, gamma = 4, bonus on) and the optimum on a 0.1 grid for the shipped target with draft-small (Rao-Blackwellised along target paths sampled at the target's temperature, gamma = 1 and 4). Every optimum lies near the diagonal tau_d = tau_t, none near 1.5 unless the target itself runs at 1.5. Right: the shipped pair's tokens per call with a 95% band (SE over the paths), the optimum circled.

The numbers are those of simulations/draft_temperature.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at quick size when that file is absent).

Usage: python figures/fig27_draft_temperature.py [--quick] [--out DIR] [--results DIR]
"""

from __future__ import annotations

from spectheory.app.plotting import PALETTE, band, figure, figure_args, load_results, save_figure

MARKERS = ("o", "s", "^", "D")


def _compute_small():
    import importlib.util
    import json
    import tempfile
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "simulations" / "draft_temperature.py"
    spec = importlib.util.spec_from_file_location("_draft_temperature", path)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    with tempfile.TemporaryDirectory() as tmp:
        mod.main(["--quick", "--out", tmp])
        return json.loads((Path(tmp) / "draft_temperature.json").read_text())


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("draft_temperature", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    hf = res["hf_default"]
    chains, shipped = res["chains"], res["shipped"]
    fig, (left, right) = figure(ncols=2, width=3.4, height=2.8)
    data = {"source": res.get("command"), "hf_default": hf, "chains": {}, "shipped": {}}

    concs = sorted({r["concentration"] for r in chains})
    for k, conc in enumerate(concs):
        rows = sorted(
            (r for r in chains if r["concentration"] == conc), key=lambda r: r["target_temperature"]
        )
        xs = [r["target_temperature"] for r in rows]
        ys = [r["best_draft_temperature"] for r in rows]
        left.plot(
            xs, ys, marker=MARKERS[k % 4], color=PALETTE[k], ms=4, lw=0.8, label=f"chain, conc {conc:g}"
        )
        data["chains"][f"concentration={conc:g}"] = {"target_temperature": xs, "best_draft_temperature": ys}
    gammas = sorted({r["gamma"] for r in shipped})
    for k, g in enumerate(gammas):
        rows = sorted((r for r in shipped if r["gamma"] == g), key=lambda r: r["target_temperature"])
        xs = [r["target_temperature"] for r in rows]
        ys = [r["best_draft_temperature"] for r in rows]
        left.plot(
            xs,
            ys,
            marker="*",
            color=PALETTE[4 + k],
            ms=8 - 2 * k,
            ls="none",
            label=f"shipped pair, gamma {g}",
        )
        data["shipped"][f"gamma={g}"] = {"target_temperature": xs, "best_draft_temperature": ys}
    lo = min(0.4, *(r["best_draft_temperature"] for r in chains))
    hi = max(1.6, hf + 0.1)
    left.plot([lo, hi], [lo, hi], color="0.5", lw=0.8, ls="--", label="tau_d = tau_t")
    left.axhline(hf, color="k", lw=0.8, ls=":", label=f"HF default {hf:g}")
    left.set_xlabel("target temperature tau_t")
    left.set_ylabel("optimal draft temperature tau_d*")
    left.legend(fontsize=5.5, loc="upper left")

    for k, r in enumerate(shipped):
        label = f"tau_t={r['target_temperature']:g}, gamma={r['gamma']}"
        taus, tpc, se = r["draft_temperatures"], r["tokens_per_call"], r["tokens_per_call_se"]
        band(right, taus, tpc, se, color=PALETTE[k], lw=1.0, label=label)
        best = taus.index(r["best_draft_temperature"])
        right.plot([taus[best]], [tpc[best]], marker="o", mfc="none", color=PALETTE[k], ms=6)
        data["shipped"][label] = {"draft_temperatures": taus, "tokens_per_call": tpc, "se": se}
    right.axvline(hf, color="k", lw=0.8, ls=":")
    right.set_xlabel("draft temperature tau_d")
    right.set_ylabel(f"tokens per call (shipped, T={shipped[0]['horizon']})")
    right.legend(fontsize=5.5)
    save_figure(fig, "fig27_draft_temperature", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

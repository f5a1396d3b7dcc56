"""Token-Level Intersection (TLI, Timor et al. 2025) with a draft whose vocabulary adds merged tokens: on a byte-level target the exact acceptance and tokens per target call track the draft's probability mass on the shared tokens, while the vocabulary overlap stays near 1 as the acceptance already drops. Target: a byte bigram fitted on one slice of the shipped models' corpus; draft: a bigram over bytes plus the k most frequent byte pairs (k labelled at each point), fitted on another slice; TLI drafts from the draft's law restricted to the bytes and renormalised, then runs token verification (lossless). Left: exact per-position acceptance against both overlaps; right: exact tokens per target call (T = 64, gamma = 4) against the mass overlap.

The numbers are those of simulations/vocabularies.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at quick size when that file is absent).

Usage: python figures/fig21_vocabularies.py [--quick] [--out DIR] [--results DIR]
"""

from __future__ import annotations

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure


def _compute_small():
    import importlib.util
    import json
    import tempfile
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "simulations" / "vocabularies.py"
    spec = importlib.util.spec_from_file_location("_vocabularies", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    with tempfile.TemporaryDirectory() as tmp:
        mod.main(["--quick", "--out", tmp])
        return json.loads((Path(tmp) / "vocabularies.json").read_text())


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("vocabularies", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    rows = res["rows"]
    fig, (ax_acc, ax_tpc) = figure(ncols=2)
    mass = [r["mass_overlap"] for r in rows]
    vocab = [r["vocab_overlap"] for r in rows]
    acc = [r["acceptance"] for r in rows]
    tpc = [r["tokens_per_call"] for r in rows]
    ax_acc.plot(mass, acc, "o-", color=PALETTE[0], label="draft mass on shared tokens")
    ax_acc.plot(vocab, acc, "s--", color=PALETTE[1], mfc="none", label="|shared| / |draft vocabulary|")
    ax_tpc.plot(mass, tpc, "o-", color=PALETTE[0])
    for r, x, y in zip(rows, mass, tpc):
        ax_tpc.annotate(f"k={r['merges']}", (x, y), fontsize=5.5, xytext=(2, 2), textcoords="offset points")
    ax_acc.set_xlabel("overlap")
    ax_acc.set_ylabel("per-position acceptance (exact)")
    ax_tpc.set_xlabel("draft mass on shared tokens")
    ax_tpc.set_ylabel(f"tokens per target call (T={res['T']}, gamma={res['gamma']})")
    ax_acc.legend(fontsize=6)
    data = {
        "source": res.get("command"),
        "merges": [r["merges"] for r in rows],
        "mass_overlap": mass,
        "vocab_overlap": vocab,
        "acceptance": acc,
        "tokens_per_call": tpc,
    }
    save_figure(fig, "fig21_vocabularies", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

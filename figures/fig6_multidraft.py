"""Multi-draft verification at one position: acceptance probability against the number of
drafted candidates k. (a) One random pair (V = 8): exact acceptance of recursive rejection
sampling with replacement (SpecInfer) and without replacement (Sequoia), K-SEQ at its optimal
rho (SpecTr), and the optimal-transport optimum for i.i.d. drafts and for drafts without
replacement; markers are Monte Carlo estimates (+- 2 SE). (b) The same, averaged over random
Dirichlet(0.5) pairs; the dotted line is SpecTr's guarantee (1 - (1 - 1/k)^k) x optimum.
Without replacement dominates with replacement, and K-SEQ lies between the guarantee and the
optimum.
"""

import numpy as np

from spectheory.analysis.optimal_transport import optimal_multidraft_acceptance
from spectheory.app.plotting import PALETTE, figure, figure_args, save_figure
from spectheory.verifiers.kseq import kseq_acceptance, kseq_verify
from spectheory.verifiers.multidraft import rrs_acceptance, rrs_verify

RULES = [
    ("rrs", "RRS, with replacement", PALETTE[0], "o", "-"),
    ("rrs_wo", "RRS, without replacement", PALETTE[1], "s", "-"),
    ("kseq", "K-SEQ (optimal rho)", PALETTE[2], "^", "-"),
    ("optimal", "optimum, i.i.d. drafts", PALETTE[3], None, "--"),
    ("optimal_wo", "optimum, without replacement", PALETTE[4], None, "--"),
]


def exact_curves(t, d, ks):
    V = t.size
    out = {name: [] for name, *_ in RULES}
    for k in ks:
        out["rrs"].append(rrs_acceptance(t, d, k))
        out["kseq"].append(kseq_acceptance(t, d, k))
        out["optimal"].append(optimal_multidraft_acceptance(t, d, k))
        kw = min(k, V)
        out["rrs_wo"].append(rrs_acceptance(t, d, kw, replacement=False))
        out["optimal_wo"].append(optimal_multidraft_acceptance(t, d, kw, replacement=False))
    return {k: np.array(v) for k, v in out.items()}


def main(argv=None):
    args = figure_args(__doc__, argv)
    V = 8
    ks = np.arange(1, 9)
    n_pairs = 10 if args.quick else 100
    n_runs = 2000 if args.quick else 40_000
    rng = np.random.default_rng(6)

    t0, d0 = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
    one = exact_curves(t0, d0, ks)
    mc = {"rrs": [], "rrs_wo": [], "kseq": []}
    for k in ks:
        for name, fn in (
            ("rrs", lambda k: rrs_verify(t0, d0, k, n_runs, rng=rng)),
            ("rrs_wo", lambda k: rrs_verify(t0, d0, min(k, V), n_runs, rng=rng, replacement=False)),
            ("kseq", lambda k: kseq_verify(t0, d0, k, n_runs, rng=rng)),
        ):
            idx, _ = fn(int(k))
            m = float((idx >= 0).mean())
            mc[name].append((m, float(np.sqrt(m * (1 - m) / n_runs))))

    avg = {name: np.zeros(ks.size) for name, *_ in RULES}
    for _ in range(n_pairs):
        t, d = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
        for name, vals in exact_curves(t, d, ks).items():
            avg[name] += vals / n_pairs
    bound = (1 - (1 - 1 / ks) ** ks) * avg["optimal"]

    fig, axes = figure(ncols=2, height=2.9)
    for name, label, color, marker, ls in RULES:
        axes[0].plot(ks, one[name], color=color, ls=ls, label=label)
        axes[1].plot(ks, avg[name], color=color, ls=ls, label=label)
        if name in mc:
            m = np.array(mc[name])
            axes[0].errorbar(ks, m[:, 0], yerr=2 * m[:, 1], fmt=marker, color=color, ms=3, lw=0.8)
    axes[1].plot(ks, bound, color=PALETTE[7], ls=":", label="SpecTr guarantee x optimum")
    axes[0].set_title("(a) one pair, V = 8 (markers: Monte Carlo)")
    axes[1].set_title(f"(b) mean over {n_pairs} random pairs")
    for ax in axes:
        ax.set_xlabel("candidates k")
        ax.set_ylabel("acceptance probability")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=3)
    data = {
        "V": V,
        "k": ks,
        "single_pair": {
            "target": t0,
            "draft": d0,
            "exact": one,
            "monte_carlo": {k: np.array(v) for k, v in mc.items()},
            "n_runs": n_runs,
        },
        "average": {"n_pairs": n_pairs, "exact": avg, "spectr_bound": bound},
    }
    save_figure(fig, "fig6_multidraft", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

"""Multi-draft verification at one position: exact acceptance vs Monte Carlo, and losslessness.

For random target/draft pairs over V tokens and k = 1..K candidates: recursive rejection
sampling with replacement (SpecInfer) and without replacement (Sequoia), K-SEQ (SpecTr) at its
optimal rho, and the optimal-transport acceptance (i.i.d. drafts and drafts without
replacement; the LP-optimal verifier is simulated on a small vocabulary). Prints the
exact-vs-Monte-Carlo table (z = (MC - exact) / SE) and a chi-square test of each rule's
output law against the target; writes ``multidraft.json`` into ``--out`` (default ``results/``).

Usage: python simulations/multidraft.py [--quick] [--out DIR]
"""

import numpy as np
from scipy import stats

from spectheory.analysis.optimal_transport import optimal_multidraft_acceptance
from spectheory.app.results import headline, script_parser, write_results
from spectheory.verifiers.kseq import kseq_acceptance, kseq_verify
from spectheory.verifiers.multidraft import rrs_acceptance, rrs_verify
from spectheory.verifiers.optimal_coupling import optimal_coupling_lp, optimal_verify


def chi2_pvalue(tokens, law):
    counts = np.bincount(tokens, minlength=law.size)
    keep = law > 0
    exp = law[keep] * tokens.size
    stat = float(((counts[keep] - exp) ** 2 / exp).sum())
    if counts[~keep].sum():
        return 0.0
    return float(stats.chi2.sf(stat, max(int(keep.sum()) - 1, 1)))


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    n_runs = 4000 if args.quick else 50_000
    n_pairs = 2 if args.quick else 4
    K = 4 if args.quick else 6
    rng = np.random.default_rng(2025)

    rows = []
    print(f"{'pair':>4} {'k':>2} {'rule':>12} {'exact':>8} {'MC':>8} {'SE':>7} {'z':>6} {'chi2 p':>7}")
    pairs = []
    for p in range(n_pairs):
        V = 8 if p % 2 == 0 else 4
        t, d = rng.dirichlet(np.full(V, 0.7)), rng.dirichlet(np.full(V, 0.7))
        pairs.append({"target": t.tolist(), "draft": d.tolist()})
        for k in range(1, K + 1):
            exact = {
                "rrs": rrs_acceptance(t, d, k),
                "kseq": kseq_acceptance(t, d, k),
                "optimal": optimal_multidraft_acceptance(t, d, k),
            }
            sims = {
                "rrs": rrs_verify(t, d, k, n_runs, rng=rng),
                "kseq": kseq_verify(t, d, k, n_runs, rng=rng),
            }
            if k <= V:
                exact["rrs_wo"] = rrs_acceptance(t, d, k, replacement=False)
                exact["optimal_wo"] = optimal_multidraft_acceptance(t, d, k, replacement=False)
                sims["rrs_wo"] = rrs_verify(t, d, k, n_runs, rng=rng, replacement=False)
            if V**k <= 4096:
                cp = optimal_coupling_lp(t, d, k)
                acc, tok = optimal_verify(t, d, k, n_runs, rng=rng, coupling=cp)
                sims["optimal"] = (np.where(acc, 0, -1), tok)
                if k <= V:
                    cp = optimal_coupling_lp(t, d, k, replacement=False)
                    acc, tok = optimal_verify(t, d, k, n_runs, rng=rng, replacement=False, coupling=cp)
                    sims["optimal_wo"] = (np.where(acc, 0, -1), tok)
            for name, ex in exact.items():
                row = {"pair": p, "V": V, "k": k, "rule": name, "exact": ex}
                if name in sims:
                    idx, tok = sims[name]
                    m = float((idx >= 0).mean())
                    se = float(np.sqrt(max(ex * (1 - ex), 1e-12) / n_runs))
                    row.update(mc=m, se=se, z=(m - ex) / se, chi2_p=chi2_pvalue(tok, t))
                    print(
                        f"{p:4d} {k:2d} {name:>12} {ex:8.4f} {m:8.4f} {se:7.4f} {row['z']:6.2f} {row['chi2_p']:7.3f}"
                    )
                else:
                    print(f"{p:4d} {k:2d} {name:>12} {ex:8.4f}")
                rows.append(row)

    # K-SEQ / optimum ratio against the SpecTr guarantee, over many random pairs
    ratios = []
    for _ in range(200 if not args.quick else 40):
        V = int(rng.integers(2, 12))
        t, d = rng.dirichlet(np.full(V, 0.5)), rng.dirichlet(np.full(V, 0.5))
        for k in (2, 4, 8):
            opt = optimal_multidraft_acceptance(t, d, k)
            ratios.append({"k": k, "ratio": kseq_acceptance(t, d, k) / opt, "bound": 1 - (1 - 1 / k) ** k})
    worst = {k: min(r["ratio"] for r in ratios if r["k"] == k) for k in (2, 4, 8)}
    print(
        "\nworst K-SEQ / optimum over random pairs:",
        ", ".join(f"k={k}: {v:.4f} (bound {1 - (1 - 1 / k) ** k:.4f})" for k, v in worst.items()),
    )

    zs = [abs(r["z"]) for r in rows if "z" in r]
    ps = [r["chi2_p"] for r in rows if "chi2_p" in r]
    k4 = [r for r in rows if r["pair"] == 0 and r["k"] == min(4, K)]
    data = {
        "n_runs": n_runs,
        "pairs": pairs,
        "rows": rows,
        "kseq_worst_ratio": worst,
        "max_abs_z": max(zs),
        "min_chi2_p": min(ps),
    }
    path = write_results(
        __file__,
        data,
        args.out,
        argv,
        [
            headline(
                f"multi-draft acceptance, V=8 pair, k={min(4, K)}: "
                + ", ".join(f"{r['rule']} {r['exact']:.3f}" for r in k4),
                k4[0]["exact"],
            ),
            headline("worst K-SEQ/optimal ratio at k=4 over random pairs (bound 0.684)", worst[4]),
            headline("multi-draft exact vs Monte Carlo, max |z|", max(zs)),
        ],
    )
    print(f"wrote {path}")
    print(f"max |z| = {max(zs):.2f}; min chi-square p = {min(ps):.3g}")
    assert max(zs) < 5, "exact and Monte Carlo disagree beyond 5 SE"
    assert all(v >= 1 - (1 - 1 / k) ** k - 1e-12 for k, v in worst.items())


if __name__ == "__main__":
    main()

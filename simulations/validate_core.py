"""Exact theory against Monte Carlo on the core chains (the interim main job).

For a random homogeneous chain, the non-stationary 7-state chain of Yin et al.'s simulation
(T = 50) and an order-2 n-gram chain, for gamma in {1, 3, 8} and both bonus settings, prints
the exact expectation (spectheory.exact.expectations), the Monte Carlo mean, its standard error and
the z-score of target calls, rejections, draft tokens and accepted drafts, plus the p-value
of a chi-square (Hotelling) test of the accepted-count histogram. Agreement means |z| < 5
and p > 1e-6. Writes validate_core.json into --out (default results/).

Usage: python simulations/validate_core.py [--quick] [--runs N] [--out DIR]
"""

from __future__ import annotations

import sys
import time

import numpy as np
from scipy import stats

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.montecarlo import simulate

STATS = ("target_calls", "rejections", "draft_tokens", "accepted")
Z_MAX, P_MIN = 5.0, 1e-6


def core_chains():
    """The chains of the validation: name -> (chain, horizon)."""
    g = np.random.default_rng(13)
    tc = g.integers(0, 6, (3, 3, 3)).astype(float)
    dc = tc + g.integers(0, 4, (3, 3, 3))
    return {
        "homogeneous V=8": (st.DecodingChain.random(8, concentration=0.5, rng=11), 30),
        "Yin et al. 7-state, T=50": (st.DecodingChain.random(7, horizon=50, concentration=1.0, rng=12), 50),
        "order-2 n-gram V=3": (st.DecodingChain.ngram(tc, dc, smoothing=0.5), 25),
    }


def exact_values(chain, T, gamma, bonus):
    res = chain.protocol(T, gamma, bonus=bonus)
    counts = np.asarray(res.accepted_count_law) * res.target_calls
    return {
        "target_calls": res.target_calls,
        "rejections": res.rejections,
        "draft_tokens": res.draft_tokens,
        "accepted": float(counts @ np.arange(gamma + 1)),
        "counts": counts,
    }


def hotelling_pvalue(per_run_counts, expected_counts):
    """p-value of N dbar' Cov^+ dbar ~ chi2(rank) for i.i.d. per-run count vectors."""
    d = np.asarray(per_run_counts, dtype=float) - expected_counts
    N = d.shape[0]
    dbar = d.mean(0)
    w, U = np.linalg.eigh(np.cov(d, rowvar=False) / N)
    keep = w > 1e-10 * max(w.max(), 1e-300)
    if np.any(np.abs(U[:, ~keep].T @ dbar) > 1e-8):
        return 0.0
    return float(stats.chi2.sf(np.sum((U[:, keep].T @ dbar) ** 2 / w[keep]), keep.sum()))


def run(n_runs, gammas=(1, 3, 8), seed=0, progress=None):
    rows = []
    for ci, (name, (chain, T)) in enumerate(core_chains().items()):
        for gamma in gammas:
            for bonus in (True, False):
                ex = exact_values(chain, T, gamma, bonus)
                res = simulate(
                    chain, T, gamma, n_runs, rng=[seed, ci, gamma, bonus], bonus=bonus, progress=progress
                )
                row = {"chain": name, "horizon": T, "gamma": gamma, "bonus": bonus, "n_runs": n_runs}
                for key in STATS:
                    m, se = res.mean_se(key)
                    row[key] = {
                        "exact": float(ex[key]),
                        "mc": m,
                        "se": se,
                        "z": (m - ex[key]) / se if se > 0 else 0.0,
                    }
                row["hist_p"] = hotelling_pvalue(res.accepted_counts, ex["counts"])
                row["ok"] = bool(all(abs(row[k]["z"]) < Z_MAX for k in STATS) and row["hist_p"] > P_MIN)
                rows.append(row)
    return rows


def format_table(rows):
    head = f"{'chain':<26s} {'g':>2s} {'bonus':>5s} | {'statistic':<12s} {'exact':>10s} {'MC mean':>10s} {'SE':>8s} {'z':>6s}"
    lines = [head, "-" * len(head)]
    for r in rows:
        for i, key in enumerate(STATS):
            v = r[key]
            lead = f"{r['chain']:<26s} {r['gamma']:>2d} {str(r['bonus']):>5s}" if i == 0 else " " * 35
            lines.append(
                f"{lead} | {key:<12s} {v['exact']:10.4f} {v['mc']:10.4f} {v['se']:8.4f} {v['z']:6.2f}"
            )
        lines.append(
            f"{' ' * 35} | accepted-count histogram chi-square p = {r['hist_p']:.3f}"
            f"   {'OK' if r['ok'] else 'DISAGREE'}"
        )
    return "\n".join(lines)


def main(argv=None):
    ap = script_parser(__doc__)
    ap.add_argument("--runs", type=int, default=None, help="runs per setting (default 20,000)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    n_runs = args.runs or (2000 if args.quick else 20000)
    t0 = time.perf_counter()
    rows = run(n_runs, seed=args.seed)
    elapsed = time.perf_counter() - t0
    print(format_table(rows))
    n_ok = sum(r["ok"] for r in rows)
    zs = np.array([r[k]["z"] for r in rows for k in STATS])
    print(
        f"\n{n_ok}/{len(rows)} settings agree (|z| < {Z_MAX:g}, histogram p > {P_MIN:g}); "
        f"max |z| = {np.abs(zs).max():.2f}; {n_runs} runs per setting; {elapsed:.1f} s"
    )
    data = {
        "n_runs": n_runs,
        "seconds": elapsed,
        "z_max": Z_MAX,
        "p_min": P_MIN,
        "all_ok": n_ok == len(rows),
        "max_abs_z": float(np.abs(zs).max()),
        "rows": rows,
    }
    path = write_results(
        __file__,
        data,
        args.out,
        argv,
        [
            headline(
                f"core chains: exact vs Monte Carlo settings agreeing (|z| < {Z_MAX:g}, {n_runs} runs each)",
                f"{n_ok}/{len(rows)}",
            ),
            headline("core chains: exact vs Monte Carlo, max |z|", float(np.abs(zs).max())),
        ],
    )
    print(f"wrote {path}")
    return 0 if n_ok == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The exact sequence-level quality/speed front (a linear program) and how far the per-step
lossy heuristics are from it (issue 15; bonus off, fixed start state).

For one random chain with V = 3, T = 4 it prints every heuristic of the biased-acceptance
module (additive, ratio, lenience, Medusa's typical acceptance, each with the optimal and
the naive rejection law, and the per-step optimal mixtures of Yin et al.'s Theorems 4-5):
its exact expected rejections R and sequence TV (the emitted sequence law enumerated), the
least rejections R* any rule pays at that TV (the LP), and R / R*. Then, across a family of
random chains and horizons, the median and largest ratio per family. Finally it simulates
the optimal rule (standard speculative sampling against the LP's law O) at a few budgets
and compares with the front (z = (MC - exact) / SE). Writes ``sequence_front.json``
into ``--out`` (default ``results/``).

Usage: python simulations/sequence_front.py [--quick] [--out DIR]
"""

import numpy as np

import spectheory as st
from spectheory.analysis.sequence_front import optimal_rule_chain, optimal_sequence_front
from spectheory.analysis.sequence_front_gaps import front_gaps, heuristic_rules
from spectheory.app.results import headline, script_parser, write_results
from spectheory.montecarlo import mean_and_se

HEADLINE_CHAIN = {"vocab_size": 3, "rng": 1, "horizon": 4, "start_state": 0}
SHOWN = [
    ("additive/optimal", 0.1),
    ("lenience/optimal", 0.8),
    ("typical/target", "0.09/0.3"),
    ("mixture/optimal", 0.5),
]
HEADLINE_FAMILIES = ("additive/optimal", "lenience/optimal", "typical/target", "mixture/optimal")


def headline_table(quick):
    hc = HEADLINE_CHAIN
    chain = st.DecodingChain.random(hc["vocab_size"], rng=hc["rng"])
    gaps, grid = front_gaps(
        chain,
        hc["horizon"],
        heuristic_rules(quick),
        start_state=hc["start_state"],
        eps_grid=np.linspace(0, 1, 6),
    )
    print(
        f"chain: DecodingChain.random(3, rng={hc['rng']}), T = {hc['horizon']}, start state "
        f"{hc['start_state']}; Theorem 1 sum {grid.theorem1:.4f}, TV(draft law, target law) {grid.max_tv:.4f}"
    )
    print(f"{'rule':>40} {'seq TV':>7} {'R':>7} {'R*':>7} {'R/R*':>6}")
    for g in gaps:
        print(f"{g.name:>40} {g.sequence_tv:7.3f} {g.rejections:7.3f} {g.optimum:7.3f} {g.ratio:6.2f}")
    return chain, gaps, grid


def family_table(quick):
    combos = [(2, 4), (3, 3), (3, 4)] if quick else [(2, 4), (2, 6), (3, 3), (3, 4), (3, 5), (4, 3), (4, 4)]
    seeds = range(2) if quick else range(8)
    rules = heuristic_rules(quick=True)
    rows = []
    for V, T in combos:
        for seed in seeds:
            chain = st.DecodingChain.random(V, rng=1000 * V + 10 * T + seed)
            gaps, _ = front_gaps(chain, T, rules, start_state=0)
            rows += [dict(g.as_dict(), V=V, T=T, seed=seed) for g in gaps]
    fams = sorted({r["family"] for r in rows})
    summary = []
    print(
        f"\nacross {len(combos) * len(seeds)} random chains (V, T in {combos}, start state 0): "
        f"R / R* at the heuristic's own sequence TV"
    )
    print(f"{'family':>18} {'points':>6} {'median':>7} {'p90':>7} {'max':>7} {'median excess':>14}")
    for f in fams:
        sel = [r for r in rows if r["family"] == f and np.isfinite(r["ratio"]) and r["optimum"] > 1e-6]
        ratio = np.array([r["ratio"] for r in sel])
        exc = np.array([r["excess"] for r in sel])
        s = {
            "family": f,
            "points": len(sel),
            "median_ratio": float(np.median(ratio)),
            "p90_ratio": float(np.quantile(ratio, 0.9)),
            "max_ratio": float(ratio.max()),
            "median_excess": float(np.median(exc)),
        }
        summary.append(s)
        print(
            f"{f:>18} {s['points']:6d} {s['median_ratio']:7.2f} {s['p90_ratio']:7.2f} "
            f"{s['max_ratio']:7.2f} {s['median_excess']:14.3f}"
        )
    return rows, summary


def monte_carlo(chain, quick):
    hc = HEADLINE_CHAIN
    T = hc["horizon"]
    eps = [0.05, 0.15, 0.3]
    n_runs = 20_000 if quick else 200_000
    front = optimal_sequence_front(chain, T, eps, start_state=hc["start_state"])
    pt = front.forest.target_mass[-1]
    rng = np.random.default_rng(1515)
    out = []
    print(f"\noptimal rule, Monte Carlo ({n_runs} runs) against the front")
    for j, e in enumerate(eps):
        co, law = optimal_rule_chain(front, j)
        res = st.simulate(co, T, T, n_runs, rng=rng, bonus=False, return_tokens=True)
        r, r_se = mean_and_se(res.rejections)
        idx = res.tokens @ (chain.vocab_size ** np.arange(T - 1, -1, -1))
        tv, tv_se = mean_and_se(np.maximum(1.0 - pt[idx] / law[idx], 0.0))
        row = {
            "eps": e,
            "rejections": float(front.rejections[j]),
            "mc_rejections": r,
            "rejections_se": r_se,
            "sequence_tv": float(front.sequence_tv[j]),
            "mc_sequence_tv": tv,
            "sequence_tv_se": tv_se,
            "z_rejections": (r - front.rejections[j]) / r_se,
            "z_sequence_tv": (tv - front.sequence_tv[j]) / tv_se,
        }
        out.append(row)
        print(
            f"eps {e:.2f}: R* {row['rejections']:.4f} MC {r:.4f} +- {r_se:.4f} (z {row['z_rejections']:+.2f}); "
            f"TV {row['sequence_tv']:.4f} MC {tv:.4f} +- {tv_se:.4f} (z {row['z_sequence_tv']:+.2f})"
        )
    return out


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    chain, gaps, grid = headline_table(args.quick)
    rows, summary = family_table(args.quick)
    mc = monte_carlo(chain, args.quick)
    shown = {(g.family, g.param): g for g in gaps}
    heads = []
    for fam, param in SHOWN:
        g = shown.get((fam, param))
        if g is not None:
            heads.append(
                headline(
                    f"{g.name} on random V=3 chain, T=4: rejections at sequence TV "
                    f"{g.sequence_tv:.3f} vs the optimum",
                    f"{g.rejections:.3f} vs {g.optimum:.3f}",
                )
            )
    n_chains = len({(r["V"], r["T"], r["seed"]) for r in rows})
    for s in summary:
        if s["family"] in HEADLINE_FAMILIES:
            heads.append(
                headline(
                    f"{s['family']}: median (90th percentile) ratio of rejections to the optimum "
                    f"at the same sequence TV, {n_chains} random chains",
                    f"{s['median_ratio']:.2f} ({s['p90_ratio']:.2f})",
                )
            )
    zmax = max(max(abs(m["z_rejections"]), abs(m["z_sequence_tv"])) for m in mc)
    heads.append(
        headline("optimal sequence rule, Monte Carlo vs LP front (rejections and sequence TV), max |z|", zmax)
    )
    data = {
        "headline_chain": HEADLINE_CHAIN,
        "theorem1": grid.theorem1,
        "max_tv": grid.max_tv,
        "headline_rows": [g.as_dict() for g in gaps],
        "front_grid": {"eps": grid.eps, "rejections": grid.rejections},
        "family_rows": rows,
        "family_summary": summary,
        "monte_carlo": mc,
    }
    path = write_results(__file__, data, args.out, argv, heads)
    print(f"wrote {path}")
    assert all(r["optimum"] <= r["rejections"] + 1e-9 for r in rows), "a heuristic beat the LP optimum"
    assert zmax < 5, "Monte Carlo and the front disagree beyond 5 SE"


if __name__ == "__main__":
    main()

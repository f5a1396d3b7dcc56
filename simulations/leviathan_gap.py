"""How far Leviathan et al.'s i.i.d. formula is from the exact chain value when acceptance depends on context.

For easy/hard chains (spectheory.chain.examples.easy_hard_chain: acceptance 0.95 / 0.3, average 0.625 at
every position, stretches lasting longer as `stay` grows) and random first-order Dirichlet chains,
prints per gamma: the average acceptance alpha, the exact T / E[calls] on the chain, the same protocol
on a one-state chain with acceptance alpha (iid_exact: same T, so the difference to `exact` is the
effect of context alone), Leviathan's formula, and formula / exact - 1. Then, at cost ratio c, the
optimal gamma by the formula against the exact optimum on the chain and the speedup lost by trusting
the formula. All numbers are exact (no sampling).

    python simulations/leviathan_gap.py [--quick] [--c 0.05] [--out DIR]
"""

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.chain.examples import easy_hard_chain
from spectheory.exact.iid_gap import leviathan_gap


def families(quick):
    V = 20 if quick else 50
    out = [(f"easy/hard stay={s}", easy_hard_chain(s)) for s in (0.5, 0.8, 0.95, 0.99)]
    out += [
        (f"random V={V} conc={c}", st.DecodingChain.random(V, concentration=c, similarity=0.5, rng=0))
        for c in (0.05, 0.3, 2.0)
    ]
    return out


def main(argv=None):
    parser = script_parser(__doc__)
    parser.add_argument("--c", type=float, default=0.05, help="cost ratio t_draft / t_target")
    args = parser.parse_args(argv)
    T = 300 if args.quick else 2000
    gammas = range(1, (6 if args.quick else 12) + 1)
    rows, optima = [], []
    print(f"T = {T}, bonus = True, c = {args.c}")
    print(
        f"{'chain':28s} {'gamma':>5s} {'alpha':>7s} {'exact':>8s} {'iid_exact':>9s} {'formula':>8s} {'rel.err':>8s}"
    )
    for name, chain in families(args.quick):
        best = []
        for g in gammas:
            gap = leviathan_gap(chain, T, g, c=args.c)
            rows.append(
                dict(
                    chain=name,
                    gamma=g,
                    alpha=gap.alpha,
                    exact=gap.exact,
                    iid_exact=gap.iid_exact,
                    formula=gap.formula,
                    relative_error=gap.relative_error,
                    exact_speedup=gap.exact_speedup,
                    formula_speedup=gap.formula_speedup,
                )
            )
            best.append(gap.exact_speedup)
            print(
                f"{name:28s} {g:5d} {gap.alpha:7.4f} {gap.exact:8.4f} {gap.iid_exact:9.4f} "
                f"{gap.formula:8.4f} {gap.relative_error:+8.4f}"
            )
        alpha = rows[-1]["alpha"]
        g_formula = st.iid_optimal_gamma(alpha, args.c, max_gamma=max(gammas))
        g_exact = int(np.argmax(best)) + 1
        s_formula = chain.predicted_speedup(T, g_formula, args.c)
        optima.append(
            dict(
                chain=name,
                alpha=alpha,
                gamma_formula=g_formula,
                gamma_exact=g_exact,
                speedup_exact_opt=max(best),
                speedup_at_formula_gamma=s_formula,
                speedup_promised=float(st.iid_speedup(alpha, g_formula, args.c)),
            )
        )
        print(
            f"  optimal gamma at c={args.c}: formula {g_formula}, exact {g_exact}; exact speedup "
            f"{max(best):.4f} vs {s_formula:.4f} at the formula's gamma "
            f"(formula promised {st.iid_speedup(alpha, g_formula, args.c):.4f})"
        )
    worst = max(rows, key=lambda r: abs(r["relative_error"]))
    path = write_results(
        __file__,
        {"horizon": T, "c": args.c, "rows": rows, "optima": optima},
        args.out,
        argv,
        [
            headline(
                "Leviathan i.i.d. formula vs exact chain: worst relative error in tokens per call",
                worst["relative_error"],
                note=f"{worst['chain']}, gamma={worst['gamma']}, T={T}",
            ),
        ],
    )
    print(f"wrote {path}")
    return rows


if __name__ == "__main__":
    main()

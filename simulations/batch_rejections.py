"""Batch speculative decoding (Yin et al. 2024): exact expected rejections against M, and Monte Carlo.

On a non-stationary 7-state chain, T = 50, whose draft misses one token in some states
(so the limit M -> infinity keeps a rejection mass), for gamma = None (drafts to the end)
and gamma = 4: exact expected rejections = Theorem 1 term - batch improvement, against
Monte Carlo (``st.simulate`` with ``BatchRound(M, gamma)``); then the per-step closed forms for Bernoulli and uniform instances
against the scale recursion. Writes ``batch_rejections.json`` into ``--out``.

Usage: python simulations/batch_rejections.py [--quick] [--out DIR]
"""

import numpy as np

import spectheory as st
from spectheory.analysis import (
    batch_expected_rejections,
    bernoulli_batch_rejection,
    uniform_batch_rejection,
    uniform_instance,
)
from spectheory.app.results import headline, script_parser, write_results
from spectheory.chain.examples import holey_chain
from spectheory.trees import BatchRound
from spectheory.verifiers.batch_step import batch_rejection_probability


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    n_runs = 1000 if args.quick else 10000
    Ms = [1, 2, 4, 8] if args.quick else [1, 2, 4, 8, 16, 32]
    chain, T = holey_chain(), 50
    rng = np.random.default_rng(3)
    rows = []
    print(f"7-state chain, T = {T}, bonus off, {n_runs} runs per cell")
    print(f"{'gamma':>5} {'M':>4} {'Thm1':>8} {'improv.':>8} {'exact':>8} {'MC':>8} {'SE':>6} {'z':>6}")
    for gamma in (None, 4):
        for M in Ms + [np.inf]:
            ex = batch_expected_rejections(chain, T, M, gamma=gamma, bonus=False)
            row = {
                "gamma": gamma,
                "M": None if np.isinf(M) else M,
                "theorem1": ex.theorem1,
                "improvement": ex.improvement,
                "exact": ex.total,
            }
            if np.isinf(M):
                mc = ""
            else:
                sim = st.simulate(
                    chain, T, BatchRound(M, gamma), n_runs, rng=rng, bonus=False, progress=False
                )
                row.update(mc_mean=sim.mean("rejections"), mc_se=sim.se("rejections"))
                row["z"] = (row["mc_mean"] - ex.total) / row["mc_se"]
                mc = f"{row['mc_mean']:8.3f} {row['mc_se']:6.3f} {row['z']:6.2f}"
            rows.append(row)
            print(
                f"{str(gamma):>5} {str(row['M'] or 'inf'):>4} {ex.theorem1:8.3f} {abs(ex.improvement) if abs(ex.improvement) < 1e-12 else ex.improvement:8.3f} "
                f"{ex.total:8.3f} {mc}"
            )
    closed = []
    for a, b in ((0.7, 0.4), (0.2, 0.9), (0.9, 0.0)):
        for M in (1, 2, 4, 8):
            closed.append(
                {
                    "instance": f"bernoulli({a},{b})",
                    "M": M,
                    "closed_form": float(bernoulli_batch_rejection(a, b, M)),
                    "recursion": float(batch_rejection_probability([1 - a, a], [1 - b, b], M)),
                }
            )
    for na, nb, k in ((4, 8, 3), (8, 4, 3), (5, 5, 4)):
        t, d = uniform_instance(na, nb, k)
        for M in (1, 2, 4, 8):
            closed.append(
                {
                    "instance": f"uniform(a={na},b={nb},k={k})",
                    "M": M,
                    "closed_form": float(uniform_batch_rejection(na, nb, k, M)),
                    "recursion": float(batch_rejection_probability(t, d, M)),
                }
            )
    err = max(abs(c["closed_form"] - c["recursion"]) for c in closed)
    print(f"\nper-step closed forms (Bernoulli, uniform) vs recursion: max |diff| = {err:.2e}")
    lim = [r for r in rows if r["M"] is None and r["gamma"] is None][0]
    data = {"chain": {"states": 7, "horizon": T, "n_runs": n_runs}, "rows": rows, "closed_forms": closed}
    path = write_results(
        __file__,
        data,
        args.out,
        argv,
        [
            headline(
                "batch SD limit M->inf expected rejections (7-state chain, T=50)",
                lim["exact"],
                note=f"Theorem 1 term {lim['theorem1']:.3f}",
            ),
            headline("batch closed forms vs recursion, max abs diff", err),
        ],
    )
    print(f"wrote {path}")
    assert all(abs(r.get("z", 0)) < 5 for r in rows), "exact and Monte Carlo disagree beyond 5 SE"


if __name__ == "__main__":
    main()

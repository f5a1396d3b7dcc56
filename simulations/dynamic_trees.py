"""Dynamic draft trees and engines' controllers on one axis, exactly, on chains.

Time per token divided by the exact path optimum (the best single-path drafter with at most
``D`` drafts, docs/stopping.md §4), on two built-in chains at draft step costs c = 0.05 and 0.2
(t = 1): EAGLE-2's confidence tree and OPT-Tree's rule (docs/trees.md, "Dynamic trees"), the
exact per-state optimal top-k tree, two static top-k trees, Leviathan's gamma and SGLang's
adaptive steps (Monte Carlo), the state optimum and the hindsight oracle. Trees have at most
``budget`` nodes (top-k children, ``tree_topk``); a value below 1 beats every single-path
drafter. Also checks the dynamic-tree engine against Monte Carlo (max |z|). Writes
``dynamic_trees.json`` (read by fig25).

Usage: python simulations/dynamic_trees.py [--quick] [--out DIR]
"""

from __future__ import annotations

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.chain.examples import easy_hard_chain
from spectheory.stopping import EMASteps, evaluate_policy, leviathan_policy, optimal_policy, oracle_value
from spectheory.trees import DraftTree, Eagle2Tree, OptimalTree, OptTree, tree_protocol


def chains():
    return [
        ("easy/hard 0.9", easy_hard_chain(0.9, group_size=2)),
        ("random (a)", st.DecodingChain.random(4, concentration=0.3, similarity=0.3, rng=100)),
    ]


def tree_rules(budget, c):
    return {
        "EAGLE-2 tree": Eagle2Tree(budget, top_k=2, depth=4),
        "OPT-Tree": OptTree(budget, threshold=0.1, max_depth=4),
        "optimal tree (per state)": OptimalTree(budget, cost=c),
    }


def cell_rows(label, chain, T, c, D, budget, n_runs, rng):
    path = optimal_policy(chain, T, c, "path", D).time_per_token()
    rows = []

    def row(name, kind, tpt, se, how):
        rows.append(
            {
                "chain": label,
                "c": c,
                "name": name,
                "kind": kind,
                "scored": how,
                "time_per_token": tpt,
                "se": se,
                "ratio": tpt / path,
                "ratio_se": se / path,
            }
        )

    for name, rnd in tree_rules(budget, c).items():
        row(name, "dynamic tree", chain.protocol(T, rnd).time_per_token(c), 0.0, "exact")
    for name, tree in (("static greedy path", [1] * D), ("static tree [2, 1, 1]", [2, 1, 1])):
        res = tree_protocol(chain, T, DraftTree.from_branching(tree), "tree_topk")
        row(name, "static tree", res.time_per_token(c), 0.0, "exact")
    lev = leviathan_policy(chain, T, c, max_depth=D)
    row("Leviathan gamma", "controller", evaluate_policy(chain, lev, T, c).time_per_token(), 0.0, "exact")
    sim = st.simulate(chain, T, EMASteps((1, 2, 4)), n_runs, rng=rng, cost=c, progress=False)
    t = sim.time() / T
    row(
        "SGLang adaptive steps",
        "controller",
        float(t.mean()),
        float(t.std(ddof=1) / np.sqrt(t.size)),
        "Monte Carlo",
    )
    row("optimum (state)", "optimum", optimal_policy(chain, T, c, "state", D).time_per_token(), 0.0, "exact")
    row("optimum (path)", "optimum", path, 0.0, "exact")
    row("hindsight oracle", "oracle", oracle_value(chain, T, c, D).time_per_token(), 0.0, "exact")
    # the dynamic-tree engine against Monte Carlo: z of the mean time
    rnd = tree_rules(budget, c)["EAGLE-2 tree"]
    sim = st.simulate(chain, T, rnd, n_runs, rng=rng, cost=c, progress=False)
    t = sim.time()
    z = (t.mean() - chain.protocol(T, rnd).time(c)) / (t.std(ddof=1) / np.sqrt(t.size))
    return rows, float(z)


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    T, D, budget, n_runs = (12, 4, 6, 100) if args.quick else (40, 4, 6, 1000)
    costs = [0.05, 0.2]
    rng = np.random.default_rng(2026)
    rows, zs = [], []
    for label, chain in chains():
        for c in costs:
            r, z = cell_rows(label, chain, T, c, D, budget, n_runs, rng)
            rows += r
            zs.append(z)
    names = list(dict.fromkeys(r["name"] for r in rows))
    cells = list(dict.fromkeys((r["chain"], r["c"]) for r in rows))
    print(f"time per token / path optimum, T={T}, paths <= {D} drafts, trees <= {budget} nodes")
    print(f"{'rule':28s}" + "".join(f" {ch:>13s} c={c:<4g}" for ch, c in cells))
    for name in names:
        vals = [next(x for x in rows if x["name"] == name and (x["chain"], x["c"]) == cell) for cell in cells]
        print(f"{name:28s}" + "".join(f" {r['ratio']:>20.4f}" for r in vals))
    print(f"\nMonte Carlo vs exact (EAGLE-2 tree): max |z| = {max(abs(z) for z in zs):.2f}")

    def mean_of(name):
        return float(np.mean([r["ratio"] for r in rows if r["name"] == name]))

    heads = [
        headline("EAGLE-2 tree: time / path optimum (mean over chains and costs)", mean_of("EAGLE-2 tree")),
        headline("OPT-Tree: time / path optimum (mean)", mean_of("OPT-Tree")),
        headline("optimal tree per state: time / path optimum (mean)", mean_of("optimal tree (per state)")),
        headline(
            "SGLang adaptive steps: time / path optimum (mean, Monte Carlo)", mean_of("SGLang adaptive steps")
        ),
        headline("hindsight oracle: time / path optimum (mean)", mean_of("hindsight oracle")),
        headline("Monte Carlo vs exact (EAGLE-2 tree): max |z|", max(abs(z) for z in zs)),
    ]
    data = {"T": T, "max_depth": D, "budget": budget, "costs": costs, "n_runs": n_runs, "rows": rows, "z": zs}
    write_results(__file__, data, args.out, argv, heads)


if __name__ == "__main__":
    main()

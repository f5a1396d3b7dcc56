"""Dynamic draft trees and engines' controllers on one axis, exactly, on chains.

Time per token divided by the exact path optimum (the best single-path drafter with at most
``D`` drafts, docs/stopping.md §4), on two built-in chains at draft step costs c = 0.05 and 0.2
(t = 1): EAGLE-2's confidence tree and OPT-Tree's rule (docs/trees.md, "Dynamic trees"), the
exact per-state optimal top-k tree, two static top-k trees, Leviathan's gamma and SGLang's
adaptive steps (Monte Carlo), the state optimum and the hindsight oracle. Trees have at most
``budget`` nodes (top-k children, ``tree_topk``); a value below 1 beats every single-path
drafter. Also checks the dynamic-tree engine against Monte Carlo (max |z|).

The long run (exact, renewal-reward over round starts; spectheory.trees.longrun): the
long-run optimal top-k tree per state (Dinkelbach over every tree shape of at most ``budget``
nodes), the finite-horizon programme's trees far from the horizon (OptimalTree at 128 tokens
to go), the best static tree, EAGLE-2, OPT-Tree and the static [2, 1, 1] tree against the
long-run single-path state optimum and the hindsight oracle, each as a ratio to the state
optimum; and the one round engine's Monte Carlo of the per-state optimal trees (from the
stationary round-start law) against their exact finite-horizon time (z) and the long run.
Writes ``dynamic_trees.json`` (read by fig25).

Usage: python simulations/dynamic_trees.py [--quick] [--out DIR]
"""

from __future__ import annotations

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.chain.examples import easy_hard_chain
from spectheory.stopping import (
    EMASteps,
    evaluate_policy,
    leviathan_policy,
    long_run_optimum,
    long_run_oracle,
    optimal_policy,
    oracle_value,
)
from spectheory.trees import (
    DraftTree,
    Eagle2Tree,
    OptimalTree,
    OptTree,
    StateTrees,
    long_run_tree_optimum,
    long_run_trees,
    tree_protocol,
)


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


def long_run_rows(label, chain, c, D, budget, n_runs, T_mc, rng):
    """Long-run times per token / the long-run state optimum; z of the engine's Monte Carlo."""
    opt = long_run_optimum(chain, c, D).time_per_token()
    best = long_run_tree_optimum(chain, budget, c)
    rules = {
        "optimal tree (per state, long run)": best,
        "optimal tree (per state, DP at 128 to go)": long_run_trees(
            chain, OptimalTree(budget, cost=c), c, horizon=128
        ),
        "optimal static tree (long run)": long_run_tree_optimum(chain, budget, c, per_state=False),
        "EAGLE-2 tree": long_run_trees(chain, tree_rules(budget, c)["EAGLE-2 tree"], c),
        "OPT-Tree": long_run_trees(chain, tree_rules(budget, c)["OPT-Tree"], c),
        "static tree [2, 1, 1]": long_run_trees(chain, DraftTree.from_branching([2, 1, 1]), c),
    }
    rows = [
        {
            "chain": label,
            "c": c,
            "name": name,
            "time_per_token": v.time_per_token(),
            "tokens_per_call": v.tokens_per_call,
            "ratio": v.time_per_token() / opt,
        }
        for name, v in rules.items()
    ]
    rows.append(
        {"chain": label, "c": c, "name": "optimum (state, single path)", "time_per_token": opt, "ratio": 1.0}
    )
    ora = long_run_oracle(chain, c, D).time_per_token()
    rows.append(
        {
            "chain": label,
            "c": c,
            "name": "hindsight oracle (single path)",
            "time_per_token": ora,
            "ratio": ora / opt,
        }
    )
    # the one round engine plays the per-state optimal trees from stationary round starts
    start = st.DecodingChain(chain.target, chain.draft, best.stationary, chain.next_state)
    rnd = StateTrees(best.trees)
    exact = start.protocol(T_mc, rnd, cost=c).time()
    sim = st.simulate(start, T_mc, rnd, n_runs, rng=rng, cost=c, progress=False)
    t = sim.time()
    se = float(t.std(ddof=1) / np.sqrt(t.size))
    check = {
        "chain": label,
        "c": c,
        "T": T_mc,
        "mc_time_per_token": float(t.mean() / T_mc),
        "se": se / T_mc,
        "exact_time_per_token": exact / T_mc,
        "long_run_time_per_token": best.time_per_token(),
        "z": float((t.mean() - exact) / se),
        "z_long_run": float((t.mean() / T_mc - best.time_per_token()) / (se / T_mc)),
    }
    return rows, check


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    T, D, budget, n_runs = (12, 4, 6, 100) if args.quick else (40, 4, 6, 1000)
    lr_budget, lr_runs, T_mc = (4, 100, 40) if args.quick else (6, 400, 200)
    costs = [0.05, 0.2]
    rng = np.random.default_rng(2026)
    rows, zs, long_run, checks = [], [], [], []
    for label, chain in chains():
        for c in costs:
            r, z = cell_rows(label, chain, T, c, D, budget, n_runs, rng)
            rows += r
            zs.append(z)
    lr_rng = np.random.default_rng(2027)  # its own stream: the finite-horizon rows keep their draws
    for label, chain in chains():
        for c in costs:
            r, check = long_run_rows(label, chain, c, D, lr_budget, lr_runs, T_mc, lr_rng)
            long_run += r
            checks.append(check)
    names = list(dict.fromkeys(r["name"] for r in rows))
    cells = list(dict.fromkeys((r["chain"], r["c"]) for r in rows))
    print(f"time per token / path optimum, T={T}, paths <= {D} drafts, trees <= {budget} nodes")
    print(f"{'rule':28s}" + "".join(f" {ch:>13s} c={c:<4g}" for ch, c in cells))
    for name in names:
        vals = [next(x for x in rows if x["name"] == name and (x["chain"], x["c"]) == cell) for cell in cells]
        print(f"{name:28s}" + "".join(f" {r['ratio']:>20.4f}" for r in vals))
    print(f"\nMonte Carlo vs exact (EAGLE-2 tree): max |z| = {max(abs(z) for z in zs):.2f}")
    print(
        f"\nlong run: time per token / single-path state optimum (<= {D} drafts), trees <= {lr_budget} nodes"
    )
    print(f"{'rule':42s}" + "".join(f" {ch:>13s} c={c:<4g}" for ch, c in cells))
    for name in dict.fromkeys(r["name"] for r in long_run):
        vals = [
            next(x for x in long_run if x["name"] == name and (x["chain"], x["c"]) == cell) for cell in cells
        ]
        print(f"{name:42s}" + "".join(f" {r['ratio']:>20.4f}" for r in vals))
    zl = max(abs(ch["z"]) for ch in checks)
    print(f"Monte Carlo of the per-state optimal trees (T={T_mc}) vs exact: max |z| = {zl:.2f}")

    def lr_mean(name):
        return float(np.mean([r["ratio"] for r in long_run if r["name"] == name]))

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
        headline(
            "long run: optimal tree per state, time / single-path state optimum (mean)",
            lr_mean("optimal tree (per state, long run)"),
        ),
        headline(
            "long run: optimal static tree, time / single-path state optimum (mean)",
            lr_mean("optimal static tree (long run)"),
        ),
        headline(
            "long run: hindsight oracle (single path), time / state optimum (mean)",
            lr_mean("hindsight oracle (single path)"),
        ),
        headline("long run: Monte Carlo of the per-state optimal trees vs exact, max |z|", zl),
    ]
    data = {
        "T": T,
        "max_depth": D,
        "budget": budget,
        "costs": costs,
        "n_runs": n_runs,
        "rows": rows,
        "z": zs,
        "long_run_budget": lr_budget,
        "long_run": long_run,
        "long_run_checks": checks,
    }
    write_results(__file__, data, args.out, argv, heads)


if __name__ == "__main__":
    main()

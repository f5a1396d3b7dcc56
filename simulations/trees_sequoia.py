"""Sequoia's positional acceptance assumption, audited exactly on chains.

For 8 random chains (V = 4 and 6, concentration 0.3 and 1, draft similarity 0 and 0.5) and
the verifiers ``tree_rrs_wo`` (Sequoia's sampling without replacement) and ``tree_rrs``: the
positional vector ``a`` measured the way Sequoia measures it (frequency of the accepted
child of a 4-wide node, averaged over the target's stationary state law; exact), Sequoia's
dynamic program for budgets of n drafts (predicted value F = expected tokens per call under
the assumption), the exact value of the DP's tree on the chain (one round from the same state
law: accepted + 1), and the truly optimal tree of n drafts by exhaustive search over all
ordered trees (small n). Reports the assumption's error (F - exact) and the DP tree's loss
against the optimum. Writes ``trees_sequoia.json`` into ``--out``.

Usage: python simulations/trees_sequoia.py [--quick] [--out DIR]
"""

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.trees import exact_tree_value, optimal_tree_search, positional_vector, sequoia_positional_dp


def chain_family(quick):
    specs = [(V, c, s) for V in (4, 6) for c in (0.3, 1.0) for s in (0.0, 0.5)]
    if quick:
        specs = specs[:2]
    return [
        (f"V={V}, conc={c}, sim={s}", st.DecodingChain.random(V, concentration=c, similarity=s, rng=100 + i))
        for i, (V, c, s) in enumerate(specs)
    ]


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    budgets = [1, 2, 3, 4, 5] if args.quick else [1, 2, 3, 4, 5, 6, 7, 8, 12, 16]
    search_max = 4 if args.quick else 6
    K = 4
    rows = []
    print(
        f"{'chain':>24} {'verifier':>12} {'n':>3} {'predicted':>9} {'exact':>8} {'error':>8} {'optimum':>8}"
    )
    for cname, chain in chain_family(args.quick):
        for ver in ("tree_rrs_wo", "tree_rrs"):
            a = positional_vector(chain, K, verifier=ver)
            for n in budgets:
                pred, tree = sequoia_positional_dp(a, tree_size=n + 1)
                exact = exact_tree_value(chain, tree, ver)
                row = {
                    "chain": cname,
                    "verifier": ver,
                    "n": n,
                    "a": a,
                    "predicted": pred,
                    "exact": exact,
                    "error": pred - exact,
                    "rel_error": (pred - exact) / exact,
                    "tree": tree.parents,
                    "depth": tree.max_depth,
                }
                opt = ""
                if n <= search_max:
                    best, btree = optimal_tree_search(chain, n, ver)
                    row.update(optimum=best, optimal_tree=btree.parents, dp_loss=best - exact)
                    opt = f"{best:8.4f}"
                rows.append(row)
                print(f"{cname:>24} {ver:>12} {n:3d} {pred:9.4f} {exact:8.4f} {pred - exact:8.4f} {opt}")
    worst = max(rows, key=lambda r: abs(r["rel_error"]))
    searched = [r for r in rows if "optimum" in r]
    loss = max(searched, key=lambda r: r["dp_loss"] / r["optimum"])
    mean_abs = float(np.mean([abs(r["rel_error"]) for r in rows]))
    data = {
        "K": K,
        "budgets": budgets,
        "search_max": search_max,
        "rows": rows,
        "max_abs_rel_error": abs(worst["rel_error"]),
        "mean_abs_rel_error": mean_abs,
        "max_rel_dp_loss": loss["dp_loss"] / loss["optimum"],
    }
    print(
        f"\nlargest |F - exact| / exact = {abs(worst['rel_error']):.3%} ({worst['chain']}, {worst['verifier']}, "
        f"n = {worst['n']}); mean {mean_abs:.3%}; DP tree vs optimum: largest loss "
        f"{loss['dp_loss'] / loss['optimum']:.3%} ({loss['chain']}, n = {loss['n']})"
    )
    path = write_results(
        __file__,
        data,
        args.out,
        argv,
        [
            headline(
                "Sequoia positional assumption: largest |predicted - exact| / exact",
                abs(worst["rel_error"]),
                note=f"{worst['chain']}, {worst['verifier']}, n={worst['n']}",
            ),
            headline("Sequoia positional assumption: mean |predicted - exact| / exact", mean_abs),
            headline(
                f"Sequoia DP tree vs exhaustive optimum (n <= {search_max}): largest relative loss",
                loss["dp_loss"] / loss["optimum"],
            ),
        ],
    )
    print(f"wrote {path}")
    assert all(r["dp_loss"] >= -1e-12 for r in searched)
    assert all(abs(r["error"]) < 1e-12 for r in rows if r["n"] == 1)


if __name__ == "__main__":
    main()

"""Sequoia's positional acceptance assumption against the exact answer. (a) Predicted value
F (expected tokens per target call under the assumption that the k-th child is accepted
with a context-free probability a_k, measured on the chain as Sequoia measures it) against
the exact value of the same tree on the chain, for Sequoia's DP tree at budgets of 1-16
drafts on 8 random chains (V = 4, 6), verifiers tree_rrs_wo (filled) and tree_rrs (open);
the diagonal is a correct assumption. (b) One chain (V = 4, concentration 0.3, draft
similarity 0.5, tree_rrs_wo): predicted F of the DP tree, its exact value, and the exact
value of the truly optimal tree of n drafts found by exhaustive search (n <= 6). The
assumption is exact for stars (depth 1) and drifts with depth because a child's acceptance
depends on its parent's token.
"""

import numpy as np

import spectheory as st
from spectheory.app.plotting import PALETTE, figure, figure_args, save_figure
from spectheory.trees import exact_tree_value, optimal_tree_search, positional_vector, sequoia_positional_dp


def main(argv=None):
    args = figure_args(__doc__, argv)
    budgets = [1, 2, 4, 8] if args.quick else [1, 2, 3, 4, 6, 8, 12, 16]
    specs = [(V, c, s) for V in (4, 6) for c in (0.3, 1.0) for s in (0.0, 0.5)]
    if args.quick:
        specs = specs[:2]
    fig, (ax, bx) = figure(ncols=2)
    data = {"budgets": budgets, "points": [], "panel_b": {}}
    lo, hi = np.inf, -np.inf
    for i, (V, c, s) in enumerate(specs):
        chain = st.DecodingChain.random(V, concentration=c, similarity=s, rng=100 + i)
        for ver, fill in (("tree_rrs_wo", True), ("tree_rrs", False)):
            a = positional_vector(chain, 4, verifier=ver)
            pred, exact = [], []
            for n in budgets:
                p, tree = sequoia_positional_dp(a, tree_size=n + 1)
                pred.append(p)
                exact.append(exact_tree_value(chain, tree, ver))
            color = PALETTE[i % len(PALETTE)]
            ax.plot(exact, pred, "o", ms=3, color=color, mfc=color if fill else "none", mew=0.8)
            lo, hi = min(lo, min(pred), min(exact)), max(hi, max(pred), max(exact))
            data["points"].append(
                {
                    "V": V,
                    "concentration": c,
                    "similarity": s,
                    "verifier": ver,
                    "predicted": pred,
                    "exact": exact,
                }
            )
    ax.plot([lo, hi], [lo, hi], "k--", lw=0.8)
    ax.set_xlabel("exact tokens per call (DP tree, chain)")
    ax.set_ylabel("predicted F (positional assumption)")
    ax.set_title("(a) predicted vs exact, 8 chains")

    chain = st.DecodingChain.random(4, concentration=0.3, similarity=0.5, rng=101)
    a = positional_vector(chain, 4, verifier="tree_rrs_wo")
    ns = np.arange(1, 9 if args.quick else 13)
    pred, exact = [], []
    for n in ns:
        p, tree = sequoia_positional_dp(a, tree_size=int(n) + 1)
        pred.append(p)
        exact.append(exact_tree_value(chain, tree, "tree_rrs_wo"))
    ns_opt = np.arange(1, 5 if args.quick else 7)
    opt = [optimal_tree_search(chain, int(n), "tree_rrs_wo")[0] for n in ns_opt]
    bx.plot(ns, pred, "--", color=PALETTE[1], label="predicted F (DP tree)")
    bx.plot(ns, exact, "-", color=PALETTE[0], label="exact (DP tree)")
    bx.plot(ns_opt, opt, "s", ms=3, color=PALETTE[3], label="exact optimum (search)")
    bx.set_xlabel("drafted nodes n")
    bx.set_ylabel("expected tokens per target call")
    bx.set_title("(b) one chain, tree_rrs_wo")
    bx.legend(loc="lower right", fontsize=6)
    data["panel_b"] = {"n": ns, "predicted": pred, "exact": exact, "n_opt": ns_opt, "optimum": opt, "a": a}
    save_figure(fig, "fig12_sequoia", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

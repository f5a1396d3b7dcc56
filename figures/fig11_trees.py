"""Token trees on chains, exactly: expected tokens per target call (one round from the
target's stationary state law: accepted drafts + 1) against the number of drafted nodes,
averaged over 3 random chains (V = 4, Dirichlet concentration 0.5, draft similarity 0.3),
for four tree shapes -- a single path, the binary tree filled level by level, Sequoia's DP
tree (positional vector measured on each chain for that verifier) and the truly optimal tree
found by exhaustive search over all ordered trees (small sizes) -- under each tree verifier:
recursive rejection with i.i.d. children (SpecInfer), without replacement (Sequoia), the
deterministic top-k rule (Medusa/EAGLE) and traversal verification (exact by enumeration).
"""

import numpy as np

import spectheory as st
from spectheory.app.plotting import PALETTE, figure, figure_args, save_figure
from spectheory.trees import (
    DraftTree,
    exact_tree_value,
    optimal_tree_search,
    positional_vector,
    sequoia_positional_dp,
)
from spectheory.verifiers import get_verifier

VERIFIERS = [
    ("tree_rrs", "(a) recursive rejection, i.i.d. (SpecInfer)"),
    ("tree_rrs_wo", "(b) without replacement (Sequoia)"),
    ("tree_topk", "(c) deterministic top-k (Medusa/EAGLE)"),
    ("traversal", "(d) traversal verification"),
]


def kary(n, k=2):
    """The k-ary tree filled level by level with n drafted nodes."""
    return DraftTree([-1] + [(i - 1) // k for i in range(1, n + 1)])


def main(argv=None):
    args = figure_args(__doc__, argv)
    sizes = np.arange(1, 5 if args.quick else 9)
    search_max = {"traversal": 3 if args.quick else 5}
    default_search = 3 if args.quick else 6
    chains = [
        st.DecodingChain.random(4, concentration=0.5, similarity=0.3, rng=40 + i)
        for i in range(2 if args.quick else 3)
    ]
    fig, axes = figure(ncols=2, nrows=2, height=2.4)
    data = {"sizes": sizes, "n_chains": len(chains), "panels": {}}
    for ax, (ver, title) in zip(np.ravel(axes), VERIFIERS):
        # Sequoia measures recursive rejection's acceptance (a node-local rule)
        vec_ver = ver if get_verifier(ver).node_local else "tree_rrs_wo"
        vecs = [positional_vector(c, 4, verifier=vec_ver) for c in chains]
        shapes = {
            "path": lambda n, i: DraftTree.from_branching([1] * n),
            "binary": lambda n, i: kary(n, 2),
            "Sequoia DP": lambda n, i, vecs=vecs: sequoia_positional_dp(vecs[i], tree_size=n + 1)[1],
        }
        panel = {}
        for j, (sname, make) in enumerate(shapes.items()):
            vals = [
                np.mean([exact_tree_value(c, make(int(n), i), ver) for i, c in enumerate(chains)])
                for n in sizes
            ]
            ax.plot(sizes, vals, "-o", ms=2.5, color=PALETTE[j], label=sname)
            panel[sname] = vals
        n_opt = sizes[sizes <= search_max.get(ver, default_search)]
        opt = [np.mean([optimal_tree_search(c, int(n), ver)[0] for c in chains]) for n in n_opt]
        ax.plot(n_opt, opt, "s", ms=4, mfc="none", color=PALETTE[3], label="optimal (search)")
        panel["optimal"] = {"n": n_opt, "value": opt}
        ax.set_title(title, fontsize=7)
        ax.set_xticks(sizes)
        ax.set_xlabel("drafted nodes")
        ax.set_ylabel("tokens per target call")
        data["panels"][ver] = panel
    np.ravel(axes)[0].legend(loc="upper left", fontsize=6)
    save_figure(fig, "fig11_trees", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

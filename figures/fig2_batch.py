"""Batch speculative decoding with M draft sequences per round, two readings. (a) Exact
expected rejections over T = 50 tokens of a non-stationary 7-state chain whose draft misses
one token in half of the states, against M, for drafts to the end of the horizon and for
gamma = 4: the first-token construction (solid; recursive rejection over the M first tokens,
then plain checks along the accepted draft; "derived, consistent with Yin et al.'s Theorem
3") and the tree reading (dash-dot; recursive rejection at every position over all drafts
that agree with the accepted prefix), with Monte Carlo means (markers, 95% error bars), the
Theorem 1 term (dotted, M = 1) and both limits M -> infinity (dashed: first-token; thin
dotted: tree reading = the target mass the draft cannot propose). Under the first-token
construction rejections saturate, because only round starts improve; under the tree reading
they keep falling towards the mass outside the draft's support. (b) Per-step improvement of
the first-token construction TV - P(all M first tokens rejected) for Bernoulli and uniform
instances: closed forms (lines) and the scale recursion (markers); it saturates at TV minus
the target mass outside the draft's support, and is zero for uniform laws with |A| >= |B|.
"""

import numpy as np

import spectheory as st
from spectheory.analysis import (
    batch_expected_rejections,
    bernoulli_batch_rejection,
    uniform_batch_rejection,
    uniform_instance,
)
from spectheory.app.plotting import PALETTE, figure, figure_args, save_figure
from spectheory.chain.examples import holey_chain
from spectheory.kinds.batch.exact import batch_tree_expected
from spectheory.trees import BatchRound
from spectheory.verifiers.batch_step import batch_rejection_probability


def main(argv=None):
    args = figure_args(__doc__, argv)
    chain, T = holey_chain(), 50
    Ms = [1, 2, 4, 8, 16, 32, 64]
    n_runs = 500 if args.quick else 5000
    mc_Ms = [1, 4, 16] if args.quick else [1, 2, 4, 8, 16, 32]
    rng = np.random.default_rng(5)
    fig, (ax, bx) = figure(ncols=2)
    data = {"horizon": T, "M": Ms, "panel_a": {}, "panel_b": {}}
    for j, gamma in enumerate((None, 4)):
        label = "to the end" if gamma is None else f"$\\gamma$ = {gamma}"
        exact = [batch_expected_rejections(chain, T, M, gamma=gamma, bonus=False) for M in Ms]
        lim = batch_expected_rejections(chain, T, np.inf, gamma=gamma, bonus=False).total
        ax.plot(Ms, [e.total for e in exact], "-", color=PALETTE[j], label=label)
        ax.axhline(lim, color=PALETTE[j], ls="--", lw=1, label=f"{label}, M $\\to \\infty$")
        mc = [st.simulate(chain, T, BatchRound(M, gamma), n_runs, rng=rng, bonus=False) for M in mc_Ms]
        means = [m.mean("rejections") for m in mc]
        ses = [m.se("rejections") for m in mc]
        ax.errorbar(mc_Ms, means, yerr=1.96 * np.array(ses), fmt="o", color=PALETTE[j], ms=3, capsize=2)
        tree = [batch_tree_expected(chain, T, M, gamma=gamma, bonus=False).rejections for M in Ms]
        tree_lim = batch_tree_expected(chain, T, np.inf, gamma=gamma, bonus=False).rejections
        ax.plot(Ms, tree, "-.", color=PALETTE[j], label=f"{label}, tree reading")
        ax.axhline(tree_lim, color=PALETTE[j], ls=":", lw=0.8, label=f"{label}, tree, M $\\to \\infty$")
        tree_mc = [
            st.simulate(
                chain, T, BatchRound(M, gamma, reading="tree"), n_runs, rng=rng, bonus=False
            ).rejections
            for M in mc_Ms
        ]
        t_means = [float(x.mean()) for x in tree_mc]
        t_ses = [float(x.std(ddof=1) / np.sqrt(x.size)) for x in tree_mc]
        ax.errorbar(
            mc_Ms,
            t_means,
            yerr=1.96 * np.array(t_ses),
            fmt="s",
            color=PALETTE[j],
            ms=3,
            capsize=2,
            mfc="none",
        )
        data["panel_a"]["to the end" if gamma is None else f"gamma = {gamma}"] = {
            "exact": [e.total for e in exact],
            "improvement": [e.improvement for e in exact],
            "limit": lim,
            "mc_M": mc_Ms,
            "mc_mean": means,
            "mc_se": ses,
            "tree_exact": tree,
            "tree_limit": tree_lim,
            "tree_mc_mean": t_means,
            "tree_mc_se": t_ses,
        }
    theorem1 = exact[0].theorem1
    ax.axhline(theorem1, color="0.4", ls=":", lw=1, label="Theorem 1 term")
    data["panel_a"]["theorem1"] = theorem1
    ax.set_xscale("log", base=2)
    ax.set_xlabel("draft sequences per round M")
    ax.set_ylabel("expected rejections (T = 50)")
    ax.set_title("(a) first-token (solid) vs tree reading (dash-dot)")
    # below the panel: inside, its nine entries hid the curves at small M
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3, fontsize=5.5, frameon=False)

    Mg = np.arange(1, 17)
    inst = [
        ("Bernoulli t=0.7, d=0.4", lambda M: bernoulli_batch_rejection(0.7, 0.4, M), [0.3, 0.7], [0.6, 0.4]),
        ("Bernoulli t=0.2, d=0.9", lambda M: bernoulli_batch_rejection(0.2, 0.9, M), [0.8, 0.2], [0.1, 0.9]),
    ]
    for a, b, k in ((4, 8, 3), (6, 3, 3)):
        tt, dd = uniform_instance(a, b, k)
        inst.append(
            (
                f"uniform |A|={a}, |B|={b}, overlap {k}",
                lambda M, a=a, b=b, k=k: uniform_batch_rejection(a, b, k, M),
                tt,
                dd,
            )
        )
    for j, (name, closed, tt, dd) in enumerate(inst):
        tv = float(st.tv(tt, dd))
        imp_cf = [tv - float(closed(int(M))) for M in Mg]
        imp_rec = [tv - float(batch_rejection_probability(tt, dd, int(M))) for M in Mg]
        bx.plot(Mg, imp_cf, "-", color=PALETTE[j + 2], label=name)
        bx.plot(Mg, imp_rec, "o", color=PALETTE[j + 2], ms=2.5, mfc="none")
        data["panel_b"][name] = {
            "tv": tv,
            "closed_form": imp_cf,
            "recursion": imp_rec,
            "limit": tv - float(closed(np.inf)),
        }
    bx.set_xticks([1, 4, 8, 12, 16])
    bx.set_xlabel("draft sequences per round M")
    bx.set_ylabel("per-step improvement TV - P(all rejected)")
    bx.set_title("(b) closed forms (lines) vs recursion (o)")
    bx.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=2, fontsize=5.5, frameon=False)
    data["panel_b"]["M"] = Mg
    save_figure(fig, "fig2_batch", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

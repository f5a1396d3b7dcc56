"""Leviathan's i.i.d. formula against the exact chain value when acceptance depends on context.

(a) Exact tokens per target call T / E[calls] (solid) on easy/hard chains (spectheory.chain.examples.easy_hard_chain:
acceptance 0.95 in easy states, 0.3 in hard ones, average alpha = 0.625 at every position) whose stretches
of easy and hard tokens last longer as the stay probability grows, and Leviathan's formula with
alpha = average acceptance (dashed; the same for every chain). (b) Relative error formula / exact - 1
against gamma for the easy/hard chains (solid) and for random first-order Dirichlet chains with
draft similarity 0.5 and target concentration 0.05-2 (dashed). Rounds pool like a harmonic mean, so the
formula overestimates when hard stretches are long; random chains forget their context after one token
and the formula is then accurate (the small remaining error is the end-of-horizon truncation). (c) The
curves of (b) that lie near 0, magnified (units of 1e-3): the easy/hard chain with stay = 0.5 forgets
its state after one token, like the random chains, and differs from the formula only by the
end-of-horizon truncation.
Data: fig5_iid_formula_gap.json.
"""

import numpy as np
from matplotlib.ticker import MaxNLocator

import spectheory as st
from spectheory.app.plotting import PALETTE, figure, figure_args, save_figure
from spectheory.chain.examples import easy_hard_chain
from spectheory.exact.iid_gap import leviathan_gap


def main(argv=None):
    args = figure_args(__doc__, argv)
    T = 300 if args.quick else 2000
    gammas = np.arange(1, (6 if args.quick else 12) + 1)
    stays = [0.5, 0.8, 0.95, 0.99]
    concs = [0.05, 0.3, 2.0]
    V = 20 if args.quick else 50
    fig, axes = figure(ncols=3, width=3.1)
    data = {"horizon": T, "gammas": gammas, "easy_hard": {}, "random": {}, "random_vocab": V}
    formula = None
    for color, stay in zip(PALETTE, stays):
        gaps = [leviathan_gap(easy_hard_chain(stay), T, int(g)) for g in gammas]
        exact = np.array([g.exact for g in gaps])
        formula = np.array([g.formula for g in gaps])
        rel = np.array([g.relative_error for g in gaps])
        axes[0].plot(gammas, exact, "-o", color=color, label=f"stay={stay}")
        axes[1].plot(gammas, rel, "-o", color=color, label=f"easy/hard, stay={stay}")
        if stay == 0.5:
            axes[2].plot(gammas, 1e3 * rel, "-o", color=color, ms=4)
        data["easy_hard"][stay] = {
            "alpha": gaps[0].alpha,
            "exact": exact,
            "formula": formula,
            "iid_exact": [g.iid_exact for g in gaps],
            "relative_error": rel,
        }
    axes[0].plot(gammas, formula, "--", color="k", label="formula, $\\alpha$=0.625")
    for color, conc in zip([PALETTE[4], PALETTE[5], PALETTE[7]], concs):
        chain = st.DecodingChain.random(V, concentration=conc, similarity=0.5, rng=0)
        gaps = [leviathan_gap(chain, T, int(g)) for g in gammas]
        rel = np.array([g.relative_error for g in gaps])
        axes[1].plot(
            gammas,
            rel,
            "--s",
            color=color,
            ms=3,
            label=f"random, conc={conc} ($\\alpha$={gaps[0].alpha:.2f})",
        )
        axes[2].plot(gammas, 1e3 * rel, "--s", color=color, ms=3)
        data["random"][conc] = {
            "alpha": gaps[0].alpha,
            "exact": [g.exact for g in gaps],
            "formula": [g.formula for g in gaps],
            "iid_exact": [g.iid_exact for g in gaps],
            "relative_error": rel,
        }
    axes[0].set(
        xlabel="draft length $\\gamma$",
        ylabel="tokens per target call",
        title="(a) easy/hard chains, exact vs formula",
    )
    axes[1].set(
        xlabel="draft length $\\gamma$",
        ylabel="formula / exact $-$ 1",
        title="(b) relative error of the formula",
    )
    axes[1].axhline(0.0, color="k", lw=0.6)
    axes[2].set(
        xlabel="draft length $\\gamma$",
        ylabel="formula / exact $-$ 1  ($\\times 10^{-3}$)",
        title="(c) the curves near 0 in (b), magnified",
    )
    axes[2].axhline(0.0, color="k", lw=0.6)
    axes[0].legend(frameon=False)
    fig.legend(
        *axes[1].get_legend_handles_labels(), frameon=False, fontsize=6.5, loc="outside lower center", ncol=4
    )
    for ax in axes:
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return save_figure(fig, "fig5_iid_formula_gap", data=data, out_dir=args.out)


if __name__ == "__main__":
    for p in main():
        print(p)

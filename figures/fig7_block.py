"""Block verification (Sun et al. 2024) against token verification: expected tokens per
target call over a generation of T = 32 tokens, against the draft length gamma (bonus token
on). Lines are exact (round recursion with the exact block round transition; token
verification by the phase recursion); open markers, set slightly to the side of each gamma so
as not to hide the lines, are Monte Carlo estimates of the simulator with +- 2 SE error bars. (a) The paper's binary instance, target (1/3, 2/3) and draft (2/3, 1/3) at every
position; (b) a random first-order chain over V = 3 tokens. Block verification is never
below token verification and the gap grows with gamma.
"""

import numpy as np

import spectheory as st
from spectheory.app.plotting import PALETTE, figure, figure_args, save_figure
from spectheory.montecarlo import simulate


def main(argv=None):
    args = figure_args(__doc__, argv)
    T = 32
    gammas = np.arange(1, 5 if args.quick else 8)
    n_runs = 1000 if args.quick else 20_000
    rng = np.random.default_rng(7)
    chains = {
        "(a) paper's binary instance": st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3]),
        "(b) random chain, V = 3": st.DecodingChain.random(3, concentration=0.6, similarity=0.3, rng=17),
    }
    fig, axes = figure(ncols=2)
    data = {"T": T, "gamma": gammas, "n_runs": n_runs, "panels": {}}
    for ax, (title, chain) in zip(axes, chains.items()):
        panel = {}
        for (verifier, color, marker), dx in zip(
            (("token", PALETTE[0], "o"), ("block", PALETTE[3], "s")), (-0.12, 0.12)
        ):
            exact = np.array([chain.expected_tokens_per_call(T, int(g), verifier=verifier) for g in gammas])
            mc = np.array(
                [
                    simulate(chain, T, int(g), n_runs, rng=rng, verifier=verifier).summary()[
                        "tokens_per_call"
                    ]
                    for g in gammas
                ]
            )
            means = np.array([m["mean"] for m in mc])
            ses = np.array([m["se"] for m in mc])
            ax.plot(gammas, exact, color=color, lw=1.2, zorder=2, label=f"{verifier} verification (exact)")
            ax.errorbar(
                gammas + dx,
                means,
                yerr=2 * ses,
                fmt=marker,
                color=color,
                mfc="white",
                ms=3.5,
                lw=0.9,
                capsize=2,
                zorder=3,
                label=f"{verifier}, Monte Carlo $\\pm$ 2 SE",
            )
            panel[verifier] = {"exact": exact, "mc_mean": means, "mc_se": ses}
        ax.set_title(title)
        ax.set_xlabel("draft length $\\gamma$")
        ax.set_xticks(gammas)
        ax.set_ylabel("expected tokens per target call")
        data["panels"][title] = panel
    axes[0].legend(loc="upper left", fontsize=6.5)
    save_figure(fig, "fig7_block", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

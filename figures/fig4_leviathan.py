"""Leviathan et al.'s i.i.d. model: expected tokens per target call (a) and walltime speedup (b, c) against the draft length gamma.

(a) E[tokens per call] = (1 - alpha**(gamma+1)) / (1 - alpha) for several acceptance rates alpha
(lines), with the exact value on a one-state DecodingChain of T tokens (dots; equal up to the
end-of-horizon truncation). (b) speedup (1 - alpha**(gamma+1)) / ((1 - alpha)(gamma c + 1)) at cost
ratio c = t_draft / t_target = 0.05; (c) at alpha = 0.8 for several c. Stars mark the optimal integer
gamma (spectheory.iid_optimal_gamma). Data: fig4_leviathan.json.
"""

import numpy as np
from matplotlib.ticker import MaxNLocator

import spectheory as st
from spectheory.app.plotting import PALETTE, figure, figure_args, save_figure


def speedup_curve(ax, gammas, alpha, c, color, label):
    """Plot the speedup against gamma with a star at the optimal gamma (if in range)."""
    s = np.array([st.iid_speedup(alpha, g, c) for g in gammas])
    g_opt = st.iid_optimal_gamma(alpha, c, max_gamma=1000)
    ax.plot(gammas, s, color=color, label=label)
    if g_opt <= gammas[-1]:
        ax.plot(g_opt, st.iid_speedup(alpha, g_opt, c), "*", color=color, ms=9, mec="k", mew=0.5)
    return s, g_opt


def main(argv=None):
    args = figure_args(__doc__, argv)
    gmax = 10 if args.quick else 16
    T = 400 if args.quick else 2000
    gammas = np.arange(1, gmax + 1)
    alphas = [0.5, 0.6, 0.7, 0.8, 0.9]
    c_fixed, alpha_fixed = 0.05, 0.8
    costs = [0.01, 0.05, 0.1, 0.2, 0.5]
    fig, axes = figure(ncols=3)
    data = {
        "gammas": gammas,
        "horizon": T,
        "c_fixed": c_fixed,
        "alpha_fixed": alpha_fixed,
        "tokens_per_call": {},
        "chain_tokens_per_call": {},
        "speedup_c_fixed": {},
        "optimal_gamma_c_fixed": {},
        "speedup_alpha_fixed": {},
        "optimal_gamma_alpha_fixed": {},
    }
    for color, a in zip(PALETTE, alphas):
        e = np.array([st.iid_tokens_per_call(a, g) for g in gammas])
        chain = st.DecodingChain.iid([1.0, 0.0], [a, 1.0 - a])
        exact = np.array([chain.expected_tokens_per_call(T, int(g)) for g in gammas])
        axes[0].plot(gammas, e, color=color, label=f"$\\alpha$={a}")
        axes[0].plot(gammas, exact, "o", color=color, ms=2.5)
        s, g_opt = speedup_curve(axes[1], gammas, a, c_fixed, color, f"$\\alpha$={a}")
        data["tokens_per_call"][a] = e
        data["chain_tokens_per_call"][a] = exact
        data["speedup_c_fixed"][a] = s
        data["optimal_gamma_c_fixed"][a] = g_opt
    for color, c in zip(PALETTE, costs):
        s, g_opt = speedup_curve(axes[2], gammas, alpha_fixed, c, color, f"c={c}")
        data["speedup_alpha_fixed"][c] = s
        data["optimal_gamma_alpha_fixed"][c] = g_opt
    axes[0].set(
        xlabel="draft length $\\gamma$", ylabel="E[tokens per target call]", title="(a) tokens per call"
    )
    axes[1].set(
        xlabel="draft length $\\gamma$", ylabel="walltime speedup", title=f"(b) speedup, c = {c_fixed}"
    )
    axes[2].set(
        xlabel="draft length $\\gamma$",
        ylabel="walltime speedup",
        title=f"(c) speedup, $\\alpha$ = {alpha_fixed}",
    )
    for ax in axes:  # below each panel: inside, (b) and (c) covered curves
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=3, frameon=False, fontsize=7)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    return save_figure(fig, "fig4_leviathan", data=data, out_dir=args.out)


if __name__ == "__main__":
    for p in main():
        print(p)

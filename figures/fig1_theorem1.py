"""Theorem 1 (Yin et al. 2024): Monte Carlo converges to the exact expected rejections.

Non-stationary chain with 7 states (a fresh random kernel per position, as in Yin et al.'s
simulation), horizon T = 50, bonus tokens off, so every token comes from a draft check.
Lines: running mean of the number of rejections per generation over the first N simulated
generations, for gamma = 1, 4 and 8 (independent runs), with 95% bands (+- 1.96 standard
errors). Dashed: the exact value sum_{n=1}^{T} E[TV(p_n, q_n)] (target prefixes), which
does not depend on gamma.
"""

from __future__ import annotations

import numpy as np

import spectheory as st
from spectheory.app.plotting import PALETTE, band, figure, figure_args, save_figure
from spectheory.montecarlo import simulate

NAME = "fig1_theorem1"


def main(argv=None):
    args = figure_args(__doc__, argv)
    T, n_runs = 50, (2000 if args.quick else 50000)
    chain = st.DecodingChain.random(7, horizon=T, concentration=1.0, rng=12)
    exact = float(chain.tv_profile(T).sum())
    fig, ax = figure()
    data = {
        "horizon": T,
        "n_runs": n_runs,
        "exact": exact,
        "chain": "DecodingChain.random(7, horizon=50, concentration=1.0, rng=12)",
        "series": {},
    }
    N = np.arange(1, n_runs + 1)
    grid = np.unique(np.geomspace(20, n_runs, 200).astype(int))
    for color, gamma in zip(PALETTE, (1, 4, 8)):
        res = simulate(chain, T, gamma, n_runs, rng=gamma, bonus=False)
        r = res.rejections.astype(float)
        mean = np.cumsum(r) / N
        var = (np.cumsum(r**2) - N * mean**2) / np.maximum(N - 1, 1)
        se = np.sqrt(np.maximum(var, 0) / N)
        band(ax, grid, mean[grid - 1], se[grid - 1], color=color, label=f"Monte Carlo, $\\gamma$={gamma}")
        m, s = res.mean_se("rejections")
        data["series"][f"gamma={gamma}"] = {
            "n": grid,
            "running_mean": mean[grid - 1],
            "se": se[grid - 1],
            "final_mean": m,
            "final_se": s,
            "final_z": (m - exact) / s,
        }
    ax.axhline(
        exact, color="black", ls="--", lw=1.2, label=f"exact $\\sum_n E[\\mathrm{{TV}}_n]$ = {exact:.3f}"
    )
    ax.set_xscale("log")
    ax.set_xlabel("generations simulated, N")
    ax.set_ylabel("mean rejections per generation")
    ax.set_title(f"Theorem 1: 7-state non-stationary chain, T = {T}")
    ax.legend(loc="lower right")
    lo = min(
        np.min(v["running_mean"][v["n"] >= 30] - 3 * v["se"][v["n"] >= 30]) for v in data["series"].values()
    )
    hi = max(
        np.max(v["running_mean"][v["n"] >= 30] + 3 * v["se"][v["n"] >= 30]) for v in data["series"].values()
    )
    ax.set_ylim(min(lo, exact - 0.1) - 0.8, max(hi, exact + 0.1))  # room for the legend
    paths = save_figure(fig, NAME, data=data, out_dir=args.out)
    for p in paths:
        print(f"wrote {p}")
    for k, v in data["series"].items():
        print(
            f"{k}: {v['final_mean']:.4f} +- {v['final_se']:.4f} vs exact {exact:.4f} (z = {v['final_z']:.2f})"
        )


if __name__ == "__main__":
    main()

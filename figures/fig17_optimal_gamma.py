"""The best draft length falls with the batch size, and a constant c cannot see it: (a) the exact best gamma (solid, 1..12) at each batch size B for four named cost models on the docs' default chain (random, V = 16, T = 128 tokens): Llama-2-7B / Llama-68M rooflines on an H200 and an H100 (datasheet peak and bandwidth, context 0, no launch overhead) and the batch-1 constants of Chinchilla 70B / 4B (Chen et al. 2023) and T5-XXL / T5-small (Leviathan et al. 2023), with the gamma Leviathan's constant-c model recommends (dashed; c measured at batch 1, target calls of cost 1 at every batch); (b) the constant-c error, its predicted speedup over what its gamma achieves under the cost model (1 = right). The constant models are constant-c models, so their best gamma and error do not move; under a roofline the target call turns compute-bound once B (gamma + 1) passes the ridge and the constant-c prediction overstates the speedup several-fold (docs/cost.md).

The numbers are those of simulations/cost_batch.py, read from ``--results DIR`` (default: the results folder beside the figures folder when
it exists, else the checkout's results/) (computed here at small sizes when that file is absent).

Usage: python figures/fig17_optimal_gamma.py [--quick] [--out DIR] [--results DIR]
"""

from __future__ import annotations

import numpy as np

from spectheory.app.plotting import PALETTE, figure, figure_args, load_results, save_figure

MODELS = ("llama2-7b/68m-h200", "llama2-7b/68m-h100", "chinchilla-70b/4b", "t5-xxl/t5-small-leviathan")


def _compute_small():
    import spectheory as st
    from spectheory.cost import named_cost, optimal_gamma

    chain = st.DecodingChain.random(8, concentration=0.5, similarity=0.6, rng=0)
    gammas, batches = list(range(1, 7)), [1, 16, 256, 4096]
    models = {}
    for name in MODELS:
        opt = optimal_gamma(chain, named_cost(name), batches, gammas=gammas, horizon=64)
        models[name] = {
            "best_gamma": opt.best_gamma,
            "constant_c_gamma": opt.constant_c_gamma,
            "constant_c_error": opt.constant_c_error,
            "crossover": opt.crossover,
        }
    return {
        "gammas": gammas,
        "batches": batches,
        "T": 64,
        "models": models,
        "command": "computed by fig17 (small)",
    }


def main(argv=None):
    args = figure_args(__doc__, argv)
    try:
        res = load_results("cost_batch", args.out, args.results)
    except FileNotFoundError:
        res = _compute_small()
    batches = np.asarray(res["batches"])
    fig, (ax, bx) = figure(ncols=2, width=3.0, height=2.6)
    data = {
        "T": res["T"],
        "gammas": res["gammas"],
        "batches": batches,
        "source": res.get("command"),
        "models": {},
    }
    heads = []
    for i, name in enumerate(m for m in MODELS if m in res["models"]):
        m = res["models"][name]
        color = PALETTE[i]
        best = np.asarray(m["best_gamma"])
        err = np.asarray(m["constant_c_error"], dtype=np.float64)
        ax.plot(batches, best + 0.08 * (i - 1.5), marker="o", ms=3, color=color, label=name)
        ax.axhline(m["constant_c_gamma"] + 0.08 * (i - 1.5), color=color, ls="--", lw=0.9)
        bx.plot(batches, err, marker="o", ms=3, color=color, label=name)
        data["models"][name] = {
            "best_gamma": best,
            "constant_c_gamma": m["constant_c_gamma"],
            "constant_c_error": err,
        }
        heads.append(
            {"name": f"fig17 {name}: constant-c error at B = {int(batches[-1])}", "value": float(err[-1])}
        )
    for a in (ax, bx):
        a.set_xscale("log", base=2)
        a.set_xlabel("batch size B")
    ax.set_ylabel("best gamma (dashed: constant-c)")
    ax.set_title("(a) best draft length")
    bx.set_yscale("log")
    bx.axhline(1.0, color="0.5", lw=0.8)
    bx.set_ylabel("constant-c predicted / achieved")
    bx.set_title("(b) constant-c error")
    handles, labels = ax.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=2, fontsize=6.5)
    data["headline"] = heads
    save_figure(fig, "fig17_optimal_gamma", data=data, out_dir=args.out)


if __name__ == "__main__":
    main()

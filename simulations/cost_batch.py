"""What speculation gains at every batch size, exactly, under named cost models (spectheory.cost).

On a default chain (random, V = 16, concentration 0.5, similarity 0.6; T = 128 tokens): the exact
speedup over plain decoding at the same batch size of every draft length gamma = 1..12 at batch
sizes B = 1..4096 under the Llama-2-7B / Llama-68M roofline on an H200 (context 0), its best gamma
and crossover (the batch size beyond which every gamma loses); for four named cost models
(H200 and H100 rooflines, Chinchilla 70B/4B and T5-XXL/T5-small constants) the best gamma per
batch size beside the constant-c prediction (c measured at batch 1, target calls of cost 1) and
the constant-c error (its predicted speedup over what its gamma achieves); the long-run optimal
round-start policy per batch size in lockstep (docs/cost.md); and Monte Carlo of the best gamma
at B = 64 against the exact time (z = (MC - exact) / SE). Writes ``cost_batch.json``.

Usage: python simulations/cost_batch.py [--quick] [--out DIR]
"""

from __future__ import annotations

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.cost import named_cost, optimal_gamma
from spectheory.stopping.lockstep import optimal_policy_by_batch

HEATMAP_MODEL = "llama2-7b/68m-h200"
MODELS = ("llama2-7b/68m-h200", "llama2-7b/68m-h100", "chinchilla-70b/4b", "t5-xxl/t5-small-leviathan")


def default_chain(quick: bool) -> st.DecodingChain:
    """The chain of the figures: the docs' example chain (V = 8 in quick mode)."""
    return st.DecodingChain.random(8 if quick else 16, concentration=0.5, similarity=0.6, rng=0)


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    quick = args.quick
    chain = default_chain(quick)
    T = 64 if quick else 128
    gammas = list(range(1, 7 if quick else 13))
    batches = [1, 16, 256, 4096] if quick else [2**i for i in range(13)]
    models = {}
    for name in MODELS:
        opt = optimal_gamma(chain, named_cost(name), batches, gammas=gammas, horizon=T)
        models[name] = {
            "source": named_cost(name).source,
            "best_gamma": opt.best_gamma,
            "best_speedup": opt.best_speedup,
            "crossover": opt.crossover,
            "constant_c": opt.constant_c,
            "constant_c_gamma": opt.constant_c_gamma,
            "constant_c_speedup": opt.constant_c_speedup,
            "constant_c_error": opt.constant_c_error,
            "speedup": opt.speedup,
        }
    heat = models[HEATMAP_MODEL]
    speedup = np.asarray(heat["speedup"])
    losing = [next((b for b, s in zip(batches, speedup[:, j]) if s < 1), None) for j in range(len(gammas))]
    model = named_cost(HEATMAP_MODEL)
    policy = optimal_policy_by_batch(chain, model, batches[:: 2 if quick else 3], max_depth=6 if quick else 8)
    # Monte Carlo of the best gamma at B = 64 under the model's cost at that batch
    B_mc = 16 if quick else 64
    g_mc = int(heat["best_gamma"][batches.index(B_mc)])
    sim = st.simulate(chain, T, g_mc, n_runs=2000 if quick else 20_000, rng=1, cost=model.at(B_mc))
    times = sim.time()
    se = float(times.std(ddof=1) / np.sqrt(times.size))
    exact = chain.protocol(T, g_mc).time(model, batch=B_mc)
    z = (float(times.mean()) - exact) / se
    heads = [
        headline(f"{HEATMAP_MODEL}: crossover batch size (every gamma loses beyond)", heat["crossover"]),
        headline(f"{HEATMAP_MODEL}: best gamma at B = 1", int(heat["best_gamma"][0])),
        headline(f"{HEATMAP_MODEL}: best speedup at B = 1", float(heat["best_speedup"][0])),
        headline(
            f"{HEATMAP_MODEL}: constant-c predicted / achieved speedup at B = {batches[-1]}",
            float(heat["constant_c_error"][-1]),
            note=f"the constant-c model recommends gamma = {heat['constant_c_gamma']} at every batch",
        ),
        headline("llama2-7b/68m-h100: crossover batch size", models["llama2-7b/68m-h100"]["crossover"]),
        headline(f"cost-model time exact vs Monte Carlo at B = {B_mc}, z", z),
    ]
    data = {
        "chain": repr(chain),
        "T": T,
        "gammas": gammas,
        "batches": batches,
        "heatmap_model": HEATMAP_MODEL,
        "losing_batch_per_gamma": losing,
        "models": models,
        "policy_by_batch": policy,
        "monte_carlo": {
            "batch": B_mc,
            "gamma": g_mc,
            "exact": exact,
            "mean": float(times.mean()),
            "se": se,
            "z": z,
        },
    }
    path = write_results(__file__, data, args.out, argv, heads)
    print(f"wrote {path}")
    assert abs(z) < 5, "exact and Monte Carlo times disagree beyond 5 SE"


if __name__ == "__main__":
    main()

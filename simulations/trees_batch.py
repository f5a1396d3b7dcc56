"""Batch decoding with M drafts, both readings, exactly and by Monte Carlo.

The first-token construction (spectheory.verifiers.batch_*: recursive rejection over the M
first tokens, then plain checks; "derived, consistent with Yin et al.'s Theorem 3") and the
tree reading (recursive rejection at every position over all drafts that agree with the
accepted prefix; spectheory.kinds.batch.exact), on the 7-state non-stationary ``holey_chain``
(T = 50, drafts to the end, bonus off) and on 100 small random chains: exact expected
rejections against M (both readings, the tree reading also by Monte Carlo with real draft
sequences), both limits M -> infinity, and the largest value of tree - first-token over the
random chains (never positive). Writes ``trees_batch.json`` into ``--out``.

Usage: python simulations/trees_batch.py [--quick] [--out DIR]
"""

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.chain.examples import holey_chain
from spectheory.kinds.batch.exact import batch_readings, batch_tree_limit_mass
from spectheory.trees import BatchRound


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    T = 20 if args.quick else 50
    Ms = [1, 2, 6, 16] if args.quick else [1, 2, 4, 6, 8, 16, 32, 64]
    n_runs = 300 if args.quick else 3000
    mc_Ms = [2, 6] if args.quick else [2, 6, 16]
    n_chains = 20 if args.quick else 100
    chain = holey_chain(horizon=T)
    res = batch_readings(chain, T, Ms + [np.inf], bonus=False)
    rng = np.random.default_rng(11)
    mc = {}
    print(f"holey_chain (7 states), T = {T}, drafts to the end, bonus off")
    print(f"{'M':>5} {'first-token':>12} {'tree':>9} {'tree MC':>9} {'SE':>6} {'z':>6}")
    for M, f, t in zip(res["M"], res["first_token"], res["tree"]):
        line = f"{str(M):>5} {f:12.4f} {t:9.4f}"
        if M in mc_Ms:
            rnd = BatchRound(M, None, reading="tree")
            sim = st.simulate(chain, T, rnd, n_runs, rng=rng, bonus=False, progress=False).rejections
            m, se = sim.mean(), sim.std(ddof=1) / np.sqrt(sim.size)
            mc[M] = {"mean": m, "se": se, "z": (m - t) / se}
            line += f" {m:9.4f} {se:6.4f} {(m - t) / se:6.2f}"
        print(line)
    limit_mass = batch_tree_limit_mass(chain, T)
    print(
        f"tree reading's limit = target mass the draft cannot propose: {limit_mass:.4f}; "
        f"first-token limit {res['first_token'][-1]:.4f}"
    )

    worst, examples = -np.inf, []
    for seed in range(n_chains):
        small = st.DecodingChain.random(3, horizon=6, concentration=0.5, rng=seed)
        for gamma in (None, 2):
            r = batch_readings(small, 6, [2, 6], gamma=gamma, bonus=False)
            for M, f, t in zip(r["M"], r["first_token"], r["tree"]):
                worst = max(worst, t - f)
                examples.append({"seed": seed, "gamma": gamma, "M": M, "first_token": f, "tree": t})
    print(
        f"{n_chains} random chains (V=3, T=6), M in (2, 6), gamma in (None, 2): "
        f"max(tree - first-token) = {worst:.2e}"
    )
    rows = [
        {"M": None if np.isinf(M) else M, "first_token": f, "tree": t}
        for M, f, t in zip(res["M"], res["first_token"], res["tree"])
    ]
    i6 = res["M"].index(6)
    data = {
        "holey_chain": {
            "T": T,
            "rows": rows,
            "mc": mc,
            "tree_limit": res["tree"][-1],
            "first_token_limit": res["first_token"][-1],
            "limit_mass": limit_mass,
        },
        "random_chains": {"n": n_chains, "max_tree_minus_first": worst, "rows": examples},
    }
    path = write_results(
        __file__,
        data,
        args.out,
        argv,
        [
            headline(
                f"holey_chain T={T}, M=6: expected rejections, first-token vs tree reading",
                f"{res['first_token'][i6]:.4f} vs {res['tree'][i6]:.4f}",
            ),
            headline(
                f"holey_chain T={T}, M -> inf: first-token limit vs tree-reading limit",
                f"{res['first_token'][-1]:.4f} vs {res['tree'][-1]:.4f}",
            ),
            headline(f"{n_chains} random chains: max(tree reading - first-token) expected rejections", worst),
            headline("tree reading exact vs Monte Carlo, max |z|", max(abs(v["z"]) for v in mc.values())),
        ],
    )
    print(f"wrote {path}")
    assert worst <= 1e-12
    assert abs(res["tree"][-1] - limit_mass) < 1e-10
    assert max(abs(v["z"]) for v in mc.values()) < 5, "exact and Monte Carlo disagree beyond 5 SE"


if __name__ == "__main__":
    main()

"""Block drafters: what a parallel or Markov head accepts at each depth, exactly, against an autoregressive draft.

On random first-order chains (and one chain shown in full), exact long-run tokens per target
call at draft length K = 1..D and the conditional acceptance at each depth of: the chain's own
autoregressive draft (a path round), the cross-entropy parallel head of the draft (its k-step
marginals), the oracle parallel head (the target's k-step marginals, the best cross-entropy
head), the acceptance-LP head (each depth's law maximising that depth's acceptance given the
earlier depths, an LP; spectheory.objectives.block_drafts) and the Markov heads of the draft and
of the target (the target's Markov head is the target itself: every draft accepted). Each block
head also drafts DDTree-style trees (spectheory.kinds.block.head_tree: the n rank paths of
largest product of the head's own per-depth rank probabilities; children sampled and checked by
recursive rejection sampling, and for the oracle head also top-k children), valued exactly
at T = 128 for n = 1..12 nodes. Each block round's exact value is checked against Monte Carlo (st.simulate) at the stated multiple of the
SE, and the round-start drafter whose AL(K) falls (4 at K = 3, 19/6 at K = 4; the monotonicity
theorem of docs/acceptance_length.md covers prefix-only drafters only) is evaluated exactly.

    python simulations/block_drafters.py [--quick] [--out DIR]
"""

from fractions import Fraction

import numpy as np
from tqdm.auto import tqdm

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.kinds.block import BlockDrafter, BlockRound, BlockTreeRound
from spectheory.objectives.block_drafts import acceptance_lp_drafter, block_long_run
from spectheory.stopping.al_curves import acceptance_length_curve

Z_MAX = 5.0
TREE_HORIZON = 128


def heads(chain, depth):
    """The block drafters compared, by name."""
    return {
        "parallel head (draft marginals)": BlockDrafter.marginals(chain, depth, of="draft"),
        "oracle parallel head (target marginals)": BlockDrafter.marginals(chain, depth),
        "acceptance-LP parallel head": acceptance_lp_drafter(chain, depth),
        "Markov head (draft)": BlockDrafter.markov_head(chain, depth, of="draft"),
    }


def autoregressive(chain, ks):
    """Long-run tokens per call of the chain's own draft at each K (path rounds)."""
    return acceptance_length_curve(chain, ks).tolist()


def falling_example():
    """The two-token chain and round-start head of tests/kinds/test_block_round.py."""
    chain = st.DecodingChain([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]])
    head = BlockDrafter(
        [[0.0, 1.0], [0.3, 0.7]],
        [[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]],
    )
    return chain, head


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    depth = 4 if args.quick else 6
    ks = list(range(1, depth + 1))
    n_chains = 6 if args.quick else 40
    runs = 1500 if args.quick else 6000
    shown = st.DecodingChain.random(6, concentration=0.5, similarity=0.6, rng=3)

    curves = {"autoregressive draft": autoregressive(shown, ks)}
    conditional = {}
    for name, head in heads(shown, depth).items():
        lr = [block_long_run(shown, head, k) for k in ks]
        curves[name] = [r.tokens_per_call for r in lr]
        conditional[name] = lr[-1].conditional_acceptance.tolist()
    for name, c in curves.items():
        print(f"{name:42s}", " ".join(f"{v:.3f}" for v in c))

    sizes = [1, 2, 3, 4, 6, 8, 12] if not args.quick else [1, 2, 4]
    trees = {}
    for name, head in heads(shown, depth).items():
        for rule in ("tree_rrs", "tree_topk"):
            if head.markov or (rule == "tree_topk" and not name.startswith("oracle")):
                continue
            key = f"{name}, {rule}"
            trees[key] = [
                float(
                    shown.protocol(
                        TREE_HORIZON, BlockTreeRound(head, n_nodes=n, verifier=rule)
                    ).tokens_per_call
                )
                for n in tqdm(sizes, desc=f"head trees: {key}", leave=False)
            ]
            print(f"head trees ({key}), nodes {sizes}:", " ".join(f"{v:.3f}" for v in trees[key]))

    mc = []
    for name, head in tqdm(heads(shown, depth).items(), desc="Monte Carlo"):
        rnd = BlockRound(head, 3)
        exact = shown.protocol(48, rnd).target_calls
        mean, se = st.simulate(shown, 48, rnd, runs, rng=11).mean_se("target_calls")
        mc.append({"drafter": name, "exact": float(exact), "mc": float(mean), "se": float(se)})
        mc[-1]["z"] = (mean - exact) / se if se > 0 else 0.0
    worst_z = max(abs(m["z"]) for m in mc)
    print(f"exact vs Monte Carlo (K = 3, T = 48, {runs} runs): worst |z| = {worst_z:.2f}")

    rng = np.random.default_rng(0)
    wins = {
        "LP over cross-entropy (draft)": 0,
        "LP over oracle marginals": 0,
        "autoregressive over oracle": 0,
    }
    gaps = []
    for i in tqdm(range(n_chains), desc="chains"):
        chain = st.DecodingChain.random(
            int(rng.integers(3, 6)),
            concentration=float(rng.uniform(0.3, 1.2)),
            similarity=float(rng.uniform(0.3, 0.9)),
            rng=100 + i,
        )
        h = heads(chain, depth)
        tpc = {name: block_long_run(chain, d, depth).tokens_per_call for name, d in h.items()}
        ar = autoregressive(chain, [depth])[0]
        wins["LP over cross-entropy (draft)"] += (
            tpc["acceptance-LP parallel head"] > tpc["parallel head (draft marginals)"] + 1e-9
        )
        wins["LP over oracle marginals"] += (
            tpc["acceptance-LP parallel head"] > tpc["oracle parallel head (target marginals)"] + 1e-9
        )
        wins["autoregressive over oracle"] += ar > tpc["oracle parallel head (target marginals)"] + 1e-9
        gaps.append(tpc["acceptance-LP parallel head"] - tpc["oracle parallel head (target marginals)"])
    print(f"on {n_chains} random chains at K = {depth}:", wins)

    chain, head = falling_example()
    falling = [block_long_run(chain, head, k).tokens_per_call for k in (1, 2, 3, 4)]
    exact_fall = str(Fraction(falling[3]).limit_denominator(1000))
    print("round-start head on the alternating chain, AL(1..4):", np.round(falling, 4).tolist(), exact_fall)

    data = {
        "ks": ks,
        "shown_chain": {"vocab": 6, "concentration": 0.5, "similarity": 0.6, "seed": 3},
        "curves": curves,
        "conditional_acceptance": conditional,
        "tree_sizes": sizes,
        "tree_horizon": TREE_HORIZON,
        "head_trees": trees,
        "monte_carlo": mc,
        "n_chains": n_chains,
        "wins": wins,
        "lp_minus_oracle": {"min": float(min(gaps)), "max": float(max(gaps)), "mean": float(np.mean(gaps))},
        "falling_example": falling,
    }
    rows = [
        headline(
            f"block drafters: exact vs Monte Carlo, worst |z| over {len(mc)} heads (goal < {Z_MAX:g})",
            round(worst_z, 3),
        ),
        headline(
            f"acceptance-LP head beats the oracle marginal head (tokens/call, K = {depth})",
            f"{wins['LP over oracle marginals']} of {n_chains} chains",
            note="the target's marginals are not the parallel ceiling",
        ),
        headline(
            "round-start head AL(3), AL(4) on the alternating chain (exact: 4, 19/6)",
            f"{falling[2]:.4f}, {falling[3]:.4f}",
        ),
    ]
    path = write_results(__file__, data, args.out, argv, rows)
    print(f"wrote {path}")
    return data


if __name__ == "__main__":
    main()

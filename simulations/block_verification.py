"""Block verification (Sun et al., arXiv 2403.10444) against token verification: exact vs Monte Carlo.

Reproduces the paper's binary example (t = (1/3, 2/3), d = (2/3, 1/3), gamma = 2: expected
accepted drafts 10/9 for token and 11/9 for block verification, exact rationals), then on a
random first-order chain (V = 3) and on the paper's i.i.d. binary instance compares, for
gamma = 1..G, the exact expected target calls over T tokens (round recursion with the exact
block round transition) with the simulator (``verifier="block"``) and with token
verification. Prints the table (z = (MC - exact) / SE); writes ``block_verification.json``
into ``--out`` (default ``results/``).

Usage: python simulations/block_verification.py [--quick] [--out DIR]
"""

from fractions import Fraction as F

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.montecarlo import simulate
from spectheory.verifiers.block_exact import block_emission_law


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    n_runs = 3000 if args.quick else 30_000
    G = 4 if args.quick else 6
    T = 16 if args.quick else 32

    law = block_emission_law(lambda c: [F(1, 3), F(2, 3)], lambda c: [F(2, 3), F(1, 3)], 2, 2)
    block_acc = sum(p * (len(s) - 1) for s, p in law.items())
    token_acc = F(2, 3) + F(4, 9)
    print(
        f"paper's binary example, gamma = 2: expected accepted drafts token {token_acc} vs block {block_acc}"
    )

    chains = {
        "binary_iid": st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3]),
        "random_V3": st.DecodingChain.random(3, concentration=0.6, similarity=0.3, rng=17),
    }
    rng = np.random.default_rng(403)
    rows = []
    print(f"\nT = {T}, bonus on, {n_runs} runs; target calls (exact, MC +- SE, z) and tokens per call")
    print(
        f"{'chain':>10} {'gamma':>5} {'token':>8} {'block':>8} {'block MC':>9} {'SE':>6} {'z':>6} "
        f"{'tok/call tok':>12} {'tok/call blk':>12}"
    )
    for name, chain in chains.items():
        for gamma in range(1, G + 1):
            tok = chain.expected_target_calls(T, gamma)
            blk = chain.expected_target_calls(T, gamma, verifier="block")
            res = simulate(chain, T, gamma, n_runs, rng=rng, verifier="block")
            m, se = res.mean_se("target_calls")
            z = (m - blk) / se
            rows.append(
                {
                    "chain": name,
                    "gamma": gamma,
                    "token_calls": tok,
                    "block_calls": blk,
                    "block_mc": m,
                    "block_se": se,
                    "z": z,
                    "token_tokens_per_call": T / tok,
                    "block_tokens_per_call": T / blk,
                }
            )
            print(
                f"{name:>10} {gamma:5d} {tok:8.4f} {blk:8.4f} {m:9.4f} {se:6.4f} {z:6.2f} "
                f"{T / tok:12.4f} {T / blk:12.4f}"
            )
    best = max(rows, key=lambda r: r["block_tokens_per_call"] / r["token_tokens_per_call"])
    data = {
        "T": T,
        "n_runs": n_runs,
        "paper_example": {"token": str(token_acc), "block": str(block_acc)},
        "rows": rows,
        "max_abs_z": max(abs(r["z"]) for r in rows),
    }
    path = write_results(
        __file__,
        data,
        args.out,
        argv,
        [
            headline(
                "block verification, paper's binary example (gamma=2): accepted drafts token vs block",
                f"{token_acc} vs {block_acc}",
            ),
            headline(
                f"largest block/token tokens-per-call ratio ({best['chain']}, gamma={best['gamma']}, T={T})",
                best["block_tokens_per_call"] / best["token_tokens_per_call"],
            ),
            headline("block verification exact vs Monte Carlo target calls, max |z|", data["max_abs_z"]),
        ],
    )
    print(f"wrote {path}")
    assert block_acc == F(11, 9) and token_acc == F(10, 9)
    assert all(r["block_calls"] <= r["token_calls"] + 1e-12 for r in rows)
    assert max(abs(r["z"]) for r in rows) < 5, "exact and Monte Carlo disagree beyond 5 SE"


if __name__ == "__main__":
    main()

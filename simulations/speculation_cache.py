"""Speculation caches (SSD / Saguaro): exact hit probabilities of fan-out allocations, the optimal allocation, the paper's power-law assumption tested, and the cache-miss path's exact output law.

On random first-order chains (long-run round starts, K = 4 drafts), for fan-out budgets B:
the exact hit probability of the optimal allocation with the draft's own top tokens as guesses
(what a speculator can compute), of the same allocation with oracle guesses (the true
emitted-token law's top tokens), of the paper's geometric allocation F_k ~ P(A = k)^(1/(1+r))
with the fitted power-law exponent r, and of a uniform allocation; the worst relative error of
the power-law fit. Then the exact total variation, from the target, of the first N tokens that
SSD emits, for the correct engine and two mistakes on the cache-miss path (Fractions).

    python simulations/speculation_cache.py [--quick] [--out DIR]
"""

from fractions import Fraction

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.serving.speculation_cache import hit_probability, optimal_fanout, power_law_test
from spectheory.serving.ssd_law import VARIANTS, ssd_output_law, target_law


def rows_of(rng, v):
    out = []
    for _ in range(v):
        w = [Fraction(int(x)) for x in rng.integers(1, 6, size=v)]
        out.append([x / sum(w) for x in w])
    return out


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    k, vocab = 4, 8 if args.quick else 16
    budgets = [1, 2, 4, 8, 12, 16] if args.quick else [1, 2, 3, 4, 6, 8, 12, 16, 24, 32]
    n_chains = 4 if args.quick else 12
    curves, fits = [], []
    for seed in range(n_chains):
        chain = st.DecodingChain.random(vocab, concentration=0.5, similarity=0.6, rng=seed)
        row = {"seed": seed, "optimal": [], "oracle": [], "geometric": [], "uniform": []}
        for b in budgets:
            fan, best = optimal_fanout(chain, k, b)
            row["optimal"].append(best)
            row["oracle"].append(optimal_fanout(chain, k, b, guesses="oracle")[1])
            test = power_law_test(chain, k, b, max_fanout=min(vocab, 8))
            row["geometric"].append(test.geometric_hit)
            uni = [b // (k + 1) + (1 if i < b % (k + 1) else 0) for i in range(k + 1)]
            row["uniform"].append(hit_probability(chain, k, uni))
        fits.append(
            {
                "seed": seed,
                "pooled_r": test.pooled_exponent,
                "worst_relative_error": test.worst_relative_error,
            }
        )
        curves.append(row)
        print(
            f"chain {seed}: optimal hit at B = {budgets[-1]}: {row['optimal'][-1]:.4f}, geometric {row['geometric'][-1]:.4f}, "
            f"oracle {row['oracle'][-1]:.4f}; power-law r = {test.pooled_exponent:.3f}, worst fit error {test.worst_relative_error:.2f}"
        )
    gap = max(max(np.array(r["optimal"]) - np.array(r["geometric"])) for r in curves)
    rng = np.random.default_rng(0)
    p, q, backup = rows_of(rng, 2), rows_of(rng, 2), rows_of(rng, 2)
    n_tokens = 3 if args.quick else 4
    truth = target_law(p, n_tokens)
    tvs = {}
    for variant in VARIANTS:
        law = ssd_output_law(
            p, q, 2, n_tokens, [1, 0, 1], backup=backup, saguaro=(1, Fraction(1, 2)), variant=variant
        )
        tvs[variant] = sum(abs(law.get(x, 0) - truth.get(x, 0)) for x in set(law) | set(truth)) / 2
        print(
            f"SSD {variant:26s}: exact TV of the first {n_tokens} tokens {tvs[variant]} ({float(tvs[variant]):.4f})"
        )
    data = {
        "k": k,
        "vocab": vocab,
        "budgets": budgets,
        "curves": curves,
        "fits": fits,
        "ssd_tv": {v: str(t) for v, t in tvs.items()},
        "ssd_tv_float": {v: float(t) for v, t in tvs.items()},
        "n_tokens": n_tokens,
    }
    worst_fit = max(f["worst_relative_error"] for f in fits)
    rows = [
        headline(
            f"speculation cache: largest hit-probability gap, optimal - geometric allocation ({n_chains} chains)",
            gap,
            note=f"K = {k}, V = {vocab}",
        ),
        headline(
            "speculation cache: worst relative error of the power-law miss fit", worst_fit, note="F = 1..8"
        ),
        headline(
            "SSD output law: exact TV, correct / miss uses primary q / Saguaro uses original q",
            " / ".join(str(tvs[v]) for v in VARIANTS),
        ),
    ]
    path = write_results(__file__, data, args.out, argv, rows)
    print(f"wrote {path}")
    return data


if __name__ == "__main__":
    main()

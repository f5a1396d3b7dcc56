"""Different vocabularies: Token-Level Intersection (TLI, Timor et al. 2025) with a merged-token draft, acceptance vs overlap.

The target is a byte bigram fitted on one slice of the corpus (the shipped models' training
text); the draft is fitted on another slice after tokenising it with the ``k`` most frequent
byte pairs as merged tokens (``spectheory.laws.vocabularies``), for k = 0 (the same
vocabulary) up to a few hundred merges. TLI drafts from the draft's law restricted to the
shared tokens (the single bytes) and renormalised, then runs token verification. For each k:
the vocabulary overlap |V_d ∩ V_t| / |V_d|, the draft's mass on the shared tokens (weighted by
the corpus's byte frequencies), the exact per-position acceptance and, on the byte chain, the
exact expected accepted drafts and tokens per target call over T tokens (gamma = 4), with a
Monte Carlo check at 5 SE. Losslessness, exactly: on a tiny corpus with Fraction laws, the
total variation between TLI's first three output tokens and the target's is 0.
Writes ``vocabularies.json`` into ``--out`` (default ``results/``).

Usage: python simulations/vocabularies.py [--quick] [--out DIR]
"""

from fractions import Fraction as F

import numpy as np

import spectheory as st
from spectheory.analysis.verdicts import law_total_variation
from spectheory.app.results import headline, script_parser, write_results
from spectheory.chain.ngram import NGramChain
from spectheory.decoder.corpus import corpus_sha256, train_bytes
from spectheory.laws.vocabularies import (
    byte_targets,
    merged_token_counts,
    merged_token_draft,
    shared_mass,
    tli_draft_law,
    top_byte_pairs,
)
from spectheory.verifiers.round_laws import exact_round_law, generation_law, target_law

TINY = b"the cat sat on the mat; the hat that sat"


def tiny_fraction_tv(gamma=2, length=3):
    """Exact TV of TLI's first ``length`` tokens from the target on a tiny corpus (Fractions)."""
    data = np.frombuffer(TINY, np.uint8)
    alphabet = sorted(set(TINY))
    idx = {b: i for i, b in enumerate(alphabet)}
    V = len(alphabet)

    def laws(counts):  # rows of byte states in the alphabet, add-one smoothing, as Fractions
        return [[F(int(c) + 1, int(row.sum()) + row.size) for c in row] for row in counts]

    big = np.zeros((V, V), dtype=np.int64)
    for a, b in zip(data[:-1], data[1:]):
        big[idx[a], idx[b]] += 1
    target = laws(big)
    strings, counts = merged_token_counts(data, [b"th", b"at"])
    keep = [v for v, s in enumerate(strings) if len(s) > 1 or s[0] in idx]  # the draft's tokens
    qd = laws(counts[np.ix_(alphabet, keep)])
    to_target = [idx[strings[v][0]] if len(strings[v]) == 1 else -1 for v in keep]
    qi = tli_draft_law(np.array(qd, dtype=object), to_target, V).tolist()
    t_fn = lambda c: target[c[-1]] if c else target[idx[ord(" ")]]  # noqa: E731
    d_fn = lambda c: qi[c[-1]] if c else qi[idx[ord(" ")]]  # noqa: E731
    law = generation_law(lambda c, k: exact_round_law("token", t_fn, d_fn, V, k, c), gamma, length)
    return law_total_variation(law, target_law(t_fn, V, length))


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    n = 100_000 if args.quick else 400_000
    ks = (0, 8, 64) if args.quick else (0, 2, 8, 16, 32, 64, 128, 256, 512)
    T, gamma, n_runs = 64, 4, (500 if args.quick else 2000)
    data = train_bytes()
    A, B = data[:n], data[n : 2 * n]
    P = NGramChain.from_bytes(A, order=2, alpha=0.1).kernel()
    freq = np.bincount(B, minlength=256) / B.size  # state weights: the draft corpus's bytes
    rng = np.random.default_rng(2025)
    rows = []
    print(
        f"{'merges':>6} {'vocab overlap':>13} {'mass overlap':>12} {'acceptance':>10} {'E[acc]':>8} {'tok/call':>8}"
    )
    for k in ks:
        strings, q = merged_token_draft(B, top_byte_pairs(B, k), alpha=0.1)
        to_target = byte_targets(strings)
        qi = tli_draft_law(q, to_target, 256)
        chain = st.DecodingChain(P, qi, initial=np.eye(256)[10])
        exact = chain.protocol(T, gamma)
        row = {
            "merges": k,
            "draft_vocab": len(strings),
            "vocab_overlap": 256 / len(strings),
            "mass_overlap": float(freq @ shared_mass(q, to_target)),
            "acceptance": float(freq @ np.minimum(P, qi).sum(1)),
            "accepted": exact.accepted,
            "target_calls": exact.target_calls,
            "tokens_per_call": T / exact.target_calls,
        }
        if k in (0, ks[-1]):
            sim = st.simulate(chain, T, gamma, n_runs, rng=rng)
            m, se = sim.mean_se("accepted")
            row.update(mc_accepted=m, mc_se=se, z=(m - exact.accepted) / se)
        rows.append(row)
        print(
            f"{k:6d} {row['vocab_overlap']:13.3f} {row['mass_overlap']:12.3f} {row['acceptance']:10.4f} "
            f"{row['accepted']:8.3f} {row['tokens_per_call']:8.3f}"
        )
    tv = tiny_fraction_tv()
    print(f"tiny corpus, Fractions: TV of TLI's first 3 tokens from the target = {tv}")
    zs = [r["z"] for r in rows if "z" in r]
    data_out = {
        "corpus_sha256": corpus_sha256(),
        "T": T,
        "gamma": gamma,
        "corpus_bytes": n,
        "n_runs": n_runs,
        "rows": rows,
        "tiny_tv": str(tv),
    }
    first, last = rows[0], rows[-1]
    path = write_results(
        __file__,
        data_out,
        args.out,
        argv,
        [
            headline(
                f"TLI, byte target, merged-token draft: tokens per call, {first['merges']} vs {last['merges']} merges",
                f"{first['tokens_per_call']:.3f} vs {last['tokens_per_call']:.3f}",
                note=f"draft mass on shared tokens {first['mass_overlap']:.3f} vs {last['mass_overlap']:.3f}",
            ),
            headline("TLI exact TV from the target (tiny corpus, Fractions)", str(tv)),
            headline("TLI exact vs Monte Carlo accepted drafts, max |z|", max(abs(z) for z in zs)),
        ],
    )
    print(f"wrote {path}")
    assert tv == 0, "TLI must be lossless"
    assert max(abs(z) for z in zs) < 5, "exact and Monte Carlo disagree beyond 5 SE"


if __name__ == "__main__":
    main()

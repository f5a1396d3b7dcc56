"""Engines' draft-length controllers against the exact optimum and the hindsight oracle (issue 25).

On the package's built-in chains (the easy/hard chain at stay 0.9 and 0.5, two random chains over
V = 4; T = 40 tokens, at most 5 drafts per round, 1500 Monte Carlo runs) and draft step costs c, the time per token of: Leviathan's fixed gamma, HuggingFace's
confidence threshold (q(x) < 0.4) and its +2/-1 schedule with it, vLLM's adaptive K
(``AcceptanceRateK``; with a one-round window it is exact, with its default window of 10 rounds
Monte Carlo), HuggingFace's ROC-tuned threshold and a UCB bandit over draft lengths (both learn
online: Monte Carlo), the state and path optima and the hindsight oracle (exact), each as a
ratio to the path optimum, with the exact split of every controller's gap to the oracle into a
reducible part (controller - path optimum) and an irreducible one (path optimum - oracle). The
long run (exact, the controllers Markov in a finite memory) against the long-run state optimum
and the oracle's long-run rate. Writes ``adaptive_controllers.json`` (read by fig19).

Usage: python simulations/adaptive_controllers.py [--quick] [--out DIR]
"""

from __future__ import annotations

import numpy as np

import spectheory as st
from spectheory.app.results import headline, script_parser, write_results
from spectheory.chain.examples import easy_hard_chain
from spectheory.stopping import (
    AcceptanceRateK,
    ConfidenceThreshold,
    HFSchedule,
    ROCThreshold,
    UCBGamma,
    evaluate_policy,
    leviathan_policy,
    long_run_optimum,
    long_run_oracle,
    long_run_policy,
    optimal_policy,
    oracle_value,
)


def chains(quick):
    out = [("easy/hard 0.9", easy_hard_chain(0.9, group_size=2))]
    if not quick:
        out.append(("easy/hard 0.5", easy_hard_chain(0.5, group_size=2)))
    out.append(("random (a)", st.DecodingChain.random(4, concentration=0.3, similarity=0.3, rng=100)))
    if not quick:
        out.append(("random (b)", st.DecodingChain.random(4, concentration=1.0, similarity=0.7, rng=103)))
    return out


def exact_controllers(chain, T, c, D):
    return {
        "Leviathan gamma": leviathan_policy(chain, T, c, max_depth=D),
        "HF confidence 0.4": ConfidenceThreshold(0.4, max_depth=D, statistic="token"),
        "HF schedule + confidence": HFSchedule(min(5, D), max_depth=D, confidence=0.4),
        "vLLM adaptive K (1-round window)": AcceptanceRateK(max_depth=D, window=1, min_history=1),
    }


def online_controllers(c, D, T):
    return {  # a run records at most T (probability, accepted) samples: a window of T is HF's "all"
        "HF ROC-tuned threshold": ROCThreshold(0.4, max_depth=D, window=T),
        "vLLM adaptive K (10-round window)": AcceptanceRateK(max_depth=D),
        "UCB bandit over gamma": UCBGamma(tuple(range(1, D + 1)), cost=c),
    }


def finite_rows(label, chain, T, c, D, n_runs, rng):
    path = optimal_policy(chain, T, c, "path", D).time_per_token()
    state = optimal_policy(chain, T, c, "state", D).time_per_token()
    oracle = oracle_value(chain, T, c, D).time_per_token()
    rows = []

    def row(name, tpt, se, how):
        rows.append(
            {
                "chain": label,
                "c": c,
                "controller": name,
                "scored": how,
                "time_per_token": tpt,
                "se": se,
                "ratio": tpt / path,
                "ratio_se": se / path,
                "reducible": tpt - path,
                "irreducible": path - oracle,
                "irreducible_share": (path - oracle) / (tpt - oracle) if tpt > oracle else float("nan"),
            }
        )

    for name, pol in exact_controllers(chain, T, c, D).items():
        row(name, evaluate_policy(chain, pol, T, c).time_per_token(), 0.0, "exact")
    for name, pol in online_controllers(c, D, T).items():
        sim = st.simulate(chain, T, pol, n_runs, rng=rng, cost=c, progress=False)
        t = sim.time() / T
        row(name, float(t.mean()), float(t.std(ddof=1) / np.sqrt(t.size)), "Monte Carlo")
    row("optimum (state)", state, 0.0, "exact")
    row("optimum (path)", path, 0.0, "exact")
    row("hindsight oracle", oracle, 0.0, "exact")
    # one exact controller by Monte Carlo as well: z of the engine against the exact value
    pol = AcceptanceRateK(max_depth=D, window=1, min_history=1)
    sim = st.simulate(chain, T, pol, n_runs, rng=rng, cost=c, progress=False)
    m, se = sim.mean_se("time")
    z = (m - evaluate_policy(chain, pol, T, c).time()) / se
    return rows, float(z)


def long_run_rows(label, chain, c, D):
    opt = long_run_optimum(chain, c, D).time_per_token()
    ora = long_run_oracle(chain, c, D).time_per_token()
    out = []
    for name, pol in exact_controllers(chain, 64, c, D).items():
        tpt = long_run_policy(chain, pol, c).time_per_token()
        out.append(
            {
                "chain": label,
                "c": c,
                "controller": name,
                "time_per_token": tpt,
                "ratio": tpt / opt,
                "reducible": tpt - opt,
                "irreducible": opt - ora,
                "irreducible_share": (opt - ora) / (tpt - ora),
            }
        )
    out.append({"chain": label, "c": c, "controller": "optimum (state)", "time_per_token": opt, "ratio": 1.0})
    out.append(
        {"chain": label, "c": c, "controller": "hindsight oracle", "time_per_token": ora, "ratio": ora / opt}
    )
    return out


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    T, D, n_runs = (16, 4, 400) if args.quick else (40, 5, 1500)
    costs = [0.05, 0.2]
    rng = np.random.default_rng(2025)
    rows, long_run, zs = [], [], []
    for label, chain in chains(args.quick):
        for c in costs:
            r, z = finite_rows(label, chain, T, c, D, n_runs, rng)
            rows += r
            zs.append(z)
            long_run += long_run_rows(label, chain, c, D)
    names = list(dict.fromkeys(r["controller"] for r in rows))
    cells = list(dict.fromkeys((r["chain"], r["c"]) for r in rows))
    print(f"time per token / path optimum, T={T}, at most {D} drafts per round (MC: +- 1 SE)")
    print(f"{'controller':36s}" + "".join(f" {ch:>13s} c={c:<4g}" for ch, c in cells))
    for name in names:
        line = f"{name:36s}"
        for cell in cells:
            r = next(x for x in rows if x["controller"] == name and (x["chain"], x["c"]) == cell)
            line += f" {r['ratio']:>13.4f}" + (f"+-{r['ratio_se']:.3f}" if r["se"] else "       ")[:7]
        print(line)
    print(f"\nMonte Carlo of the exact adaptive K: max |z| = {max(abs(z) for z in zs):.2f}")

    def mean_of(key, name, source=rows):
        vals = [r[key] for r in source if r["controller"] == name and np.isfinite(r.get(key, np.nan))]
        return float(np.mean(vals))

    heads = [
        headline(
            "hindsight oracle: time / path optimum (mean over chains and costs)",
            mean_of("ratio", "hindsight oracle"),
        ),
        headline(
            "HF confidence 0.4: irreducible share of its gap to the oracle (mean)",
            mean_of("irreducible_share", "HF confidence 0.4"),
        ),
        headline(
            "HF ROC-tuned threshold: time / path optimum (mean, Monte Carlo)",
            mean_of("ratio", "HF ROC-tuned threshold"),
        ),
        headline(
            "UCB bandit over gamma: time / path optimum (mean, Monte Carlo)",
            mean_of("ratio", "UCB bandit over gamma"),
        ),
        headline(
            "long run: HF schedule + confidence, irreducible share of its gap (mean)",
            mean_of("irreducible_share", "HF schedule + confidence", long_run),
        ),
        headline("Monte Carlo vs exact (adaptive K, 1-round window): max |z|", max(abs(z) for z in zs)),
    ]
    data = {
        "T": T,
        "max_depth": D,
        "costs": costs,
        "n_runs": n_runs,
        "rows": rows,
        "long_run": long_run,
        "z": zs,
    }
    write_results(__file__, data, args.out, argv, heads)


if __name__ == "__main__":
    main()

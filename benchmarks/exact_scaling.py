"""Scaling of the exact recursions (spectheory.exact.expectations) in the vocabulary size V and horizon T.

Times one full exact analysis of a fresh random first-order chain (V = S): the protocol
recursion behind expected_target_calls / expected_rejections(bonus=True) /
expected_draft_tokens / accepted_count_law (computed once, then cached), plus tv_profile.
Sweeps V at fixed T and T at fixed V (gamma = 8), fits log-log slopes, and checks the
issue's budget: V = S = 1024, T = 512, gamma = 8 in under 10 s. Writes
``exact_scaling.json`` into ``--out`` (default ``results/``).

BLAS threads default to 1 (set before numpy is imported; override with the usual
OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS): on a shared 2-core machine,
multi-threaded BLAS oversubscribes the cores and made the V = 1024 case ~10x slower in
wall time.

Usage: python benchmarks/exact_scaling.py [--quick] [--out DIR]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402

import numpy as np  # noqa: E402

import spectheory as st  # noqa: E402
import spectheory.exact as analysis  # noqa: E402
from spectheory.app.results import headline, script_parser, write_results  # noqa: E402


def time_exact(V, T, gamma, seed=0):
    chain = st.DecodingChain.random(V, concentration=0.5, similarity=0.5, rng=seed)
    t0, c0 = time.perf_counter(), time.process_time()
    calls = chain.expected_target_calls(T, gamma, bonus=True)
    t_rec, c_rec = time.perf_counter() - t0, time.process_time() - c0
    t0 = time.perf_counter()
    chain.expected_rejections(T, gamma, bonus=True)
    chain.expected_draft_tokens(T, gamma, bonus=True)
    chain.accepted_count_law(T, gamma, bonus=True)
    t_cached = time.perf_counter() - t0
    t0 = time.perf_counter()
    tvs = analysis.tv_profile(st.DecodingChain(chain.target, chain.draft, chain.initial), T)
    t_tv = time.perf_counter() - t0
    return {
        "V": V,
        "T": T,
        "gamma": gamma,
        "seconds_recursion": t_rec,
        "cpu_seconds_recursion": c_rec,
        "seconds_cached_rest": t_cached,
        "seconds_tv_profile": t_tv,
        "expected_target_calls": calls,
        "tv_sum": float(tvs.sum()),
    }


def slope(xs, ys):
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    gamma = 8
    Vs = [64, 128, 256] if args.quick else [64, 128, 256, 512, 1024]
    Ts = [64, 128, 256] if args.quick else [64, 128, 256, 512, 1024]
    T_fix, V_fix = (128, 128) if args.quick else (512, 256)
    by_V = [time_exact(V, T_fix, gamma) for V in Vs]
    for r in by_V:
        print(
            f"V={r['V']:5d} T={r['T']:4d} gamma={gamma}: recursion {r['seconds_recursion']:.3f} s, "
            f"tv_profile {r['seconds_tv_profile']:.4f} s"
        )
    by_T = [time_exact(V_fix, T, gamma) for T in Ts]
    for r in by_T:
        print(
            f"V={r['V']:5d} T={r['T']:4d} gamma={gamma}: recursion {r['seconds_recursion']:.3f} s, "
            f"tv_profile {r['seconds_tv_profile']:.4f} s"
        )
    sV = slope(Vs, [r["seconds_recursion"] for r in by_V])
    sT = slope(Ts, [r["seconds_recursion"] for r in by_T])
    print("(wall seconds; cpu seconds are in the JSON)")
    print(f"log-log slope of recursion time: in V {sV:.2f}, in T {sT:.2f}")
    budget = None
    if not args.quick:
        budget = time_exact(1024, 512, 8)
        print(
            f"budget case V=S=1024, T=512, gamma=8: {budget['seconds_recursion']:.2f} s wall, "
            f"{budget['cpu_seconds_recursion']:.2f} s cpu "
            f"(requirement < 10 s: {'met' if budget['seconds_recursion'] < 10 else 'NOT met'})"
        )
    out = {
        "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
        "by_V": by_V,
        "by_T": by_T,
        "slope_V": sV,
        "slope_T": sT,
        "budget_case": budget,
    }
    rows = []
    if budget is not None:
        rows.append(
            headline(
                "exact recursion, budget case V=S=1024, T=512, gamma=8: wall seconds (requirement < 10)",
                budget["seconds_recursion"],
                note=f"{budget['cpu_seconds_recursion']:.2f} s cpu",
            )
        )
    else:
        big = by_V[-1]
        rows.append(
            headline(
                f"exact recursion, V=S={big['V']}, T={big['T']}, gamma={gamma}: wall seconds",
                big["seconds_recursion"],
                note="--quick: budget case not run",
            )
        )
    rows += [
        headline(f"exact recursion time, log-log slope in V (T={T_fix})", sV),
        headline(f"exact recursion time, log-log slope in T (V={V_fix})", sT),
    ]
    path = write_results(__file__, out, args.out, argv, rows)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

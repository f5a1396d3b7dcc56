"""Speed of the exact path engine on sparse kernels: ``chain.protocol(T=256, gamma=8)`` at a real
vocabulary (issue 38, item 3).

A random first-order :class:`~spectheory.chain.SparseDecodingChain` (state = last token, V = S =
49,152, SmolLM2's vocabulary; ``nnz`` stored tokens per row, the draft's support sharing 3/4 of
the target's, tails 1e-3) is built, then ``chain.protocol(T, gamma=8)`` (the dense chain's phase
recursion on sparse operators) and ``chain.truncation_bound(T, 8)`` are timed, for nnz in
{16, 32, 64}. Reported per case: wall seconds, cpu seconds of this single-threaded process (the
time on a free core; on a shared machine wall time is several times it), the load average, and
the exact tokens per call. Goal: under 10 s. The engine is single-threaded (scipy's sparse
products), so one and two cores give the same time; BLAS threads are set to 1. Writes
``sparse_chain_speed.json`` into ``--out`` (default ``results/``). ``--quick``: V = 4096, T = 64.

Usage: python benchmarks/sparse_chain_speed.py [--quick] [--out DIR]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402

from spectheory.app.results import headline, script_parser, write_results  # noqa: E402
from spectheory.chain import SparseDecodingChain  # noqa: E402

GOAL_SECONDS = 10.0


def time_case(V: int, nnz: int, T: int, gamma: int, seed: int = 0) -> dict:
    """Build one random sparse chain and time its protocol and its truncation bound."""
    t0 = time.perf_counter()
    chain = SparseDecodingChain.random(V, nnz, rng=seed)
    build = time.perf_counter() - t0
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    w0, c0 = time.perf_counter(), time.process_time()
    res = chain.protocol(T, gamma=gamma)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    w0, c0 = time.perf_counter(), time.process_time()
    bound = chain.truncation_bound(T, gamma)
    bound_wall, bound_cpu = time.perf_counter() - w0, time.process_time() - c0
    lo, hi = bound.tokens_per_call_interval
    return {
        "V": V,
        "S": chain.n_states,
        "nnz_per_row": chain.nnz_per_row,
        "T": T,
        "gamma": gamma,
        "seconds": wall,
        "cpu_seconds": cpu,
        "load_average_1min": load,
        "build_seconds": build,
        "bound_seconds": bound_wall,
        "bound_cpu_seconds": bound_cpu,
        "tokens_per_call": res.tokens_per_call,
        "tokens_per_call_interval": [lo, hi],
    }


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    V, T, gamma = (4096, 64, 8) if args.quick else (49_152, 256, 8)
    cases = []
    for nnz in (16, 32, 64):
        r = time_case(V, nnz, T, gamma)
        cases.append(r)
        print(
            f"V={V} nnz/row={r['nnz_per_row']:.0f} T={T} gamma={gamma}: protocol {r['seconds']:.2f} s wall, "
            f"{r['cpu_seconds']:.2f} s cpu (load {r['load_average_1min']}); bound {r['bound_cpu_seconds']:.2f} s cpu; "
            f"tokens/call {r['tokens_per_call']:.4f}"
        )
    main_case = next(r for r in cases if r["nnz_per_row"] == 32)
    rows = [
        headline(
            f"sparse protocol V={V}, 32 tokens/row, T={T}, gamma={gamma}: cpu seconds (goal < {GOAL_SECONDS:g})",
            main_case["cpu_seconds"],
            note=f"{main_case['seconds']:.2f} s wall at load {main_case['load_average_1min']}",
        )
    ]
    out = {"goal_seconds": GOAL_SECONDS, "quick": bool(args.quick), "cases": cases}
    path = write_results(__file__, out, args.out, argv, rows)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

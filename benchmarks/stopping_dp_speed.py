"""Speed of the exact optimal-stopping engines (spectheory.stopping): the (depth, state) dynamic programme and
the exact evaluation of the adaptive rules, on random first-order chains.

The issue's budget: the state-information optimum (``optimal_policy(..., information="state")``)
for S = V = 256, depth up to 16, horizon 256 in under 10 s on 2 cores. Also times the exact
evaluation of a confidence rule at the same size and of the HuggingFace schedule (one
backward recursion per memory state, so ``max_depth`` times the work; horizon T/4), the full-information
(drafted-path) optimum on a small chain, and the DP across V. Timings on a shared machine
are noisy: each is the best of ``repeats`` runs. Writes ``stopping_dp_speed.json``.

BLAS threads default to 1 (set before numpy is imported), as in exact_scaling.py.

Usage: python benchmarks/stopping_dp_speed.py [--quick] [--out DIR]
"""

from __future__ import annotations

import os

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import time  # noqa: E402

import spectheory as st  # noqa: E402
from spectheory.app.results import headline, script_parser, write_results  # noqa: E402
from spectheory.stopping import (  # noqa: E402
    ConfidenceThreshold,
    FixedGamma,
    HFSchedule,
    evaluate_policy,  # noqa: E402
    optimal_policy,
)

BUDGET_S = 10.0


def best_of(fn, repeats):
    best, out = float("inf"), None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main(argv=None):
    args = script_parser(__doc__).parse_args(argv)
    V, D, T = (64, 8, 64) if args.quick else (256, 16, 256)
    repeats = 1 if args.quick else 3
    c = 0.05
    chain = st.DecodingChain.random(V, concentration=0.3, similarity=0.6, rng=0)
    rows = []
    t_dp, opt = best_of(lambda: optimal_policy(chain, T, c, max_depth=D), repeats)
    rows.append(
        {
            "what": "state DP (optimal_policy)",
            "V": V,
            "S": V,
            "depth": D,
            "T": T,
            "seconds": t_dp,
            "time_per_token": opt.time_per_token(),
        }
    )
    print(f"state DP  S=V={V} depth={D} T={T}: {t_dp:.3f} s  (optimum time/token {opt.time_per_token():.4f})")
    T_hf = T // 4
    for name, policy, Th in (
        ("fixed gamma (phase engine)", FixedGamma(8), T),
        ("confidence rule (edge recursion)", ConfidenceThreshold(0.4, max_depth=D), T),
        ("HF schedule (memory x edge recursion)", HFSchedule(5, max_depth=D), T_hf),
    ):
        secs, v = best_of(lambda policy=policy, Th=Th: evaluate_policy(chain, policy, Th, c), 1)
        rows.append(
            {
                "what": name,
                "V": V,
                "S": V,
                "depth": D,
                "T": Th,
                "seconds": secs,
                "time_per_token": v.time_per_token(),
            }
        )
        print(f"{name:40s} T={Th:4d} {secs:7.3f} s  time/token {v.time_per_token():.4f}")
    small = st.DecodingChain.random(6, concentration=0.5, similarity=0.5, rng=1)
    Ds, Ts = (4, 16) if args.quick else (6, 32)
    t_path, full = best_of(lambda: optimal_policy(small, Ts, c, "path", max_depth=Ds), 1)
    rows.append(
        {
            "what": "path optimum (enumeration)",
            "V": 6,
            "S": 6,
            "depth": Ds,
            "T": Ts,
            "seconds": t_path,
            "time_per_token": full.time_per_token(),
        }
    )
    print(f"path optimum S=V=6 depth={Ds} T={Ts}: {t_path:.3f} s")
    sweep = []
    for Vs in [32, 64] if args.quick else [64, 128, 256, 512]:
        ch = st.DecodingChain.random(Vs, concentration=0.3, similarity=0.6, rng=2)
        secs, _ = best_of(lambda ch=ch: optimal_policy(ch, T, c, max_depth=D), 1)
        sweep.append({"V": Vs, "seconds": secs})
        print(f"state DP V={Vs}: {secs:.3f} s")
    data = {
        "c": c,
        "budget_seconds": BUDGET_S,
        "rows": rows,
        "sweep_V": sweep,
        "note": "best of repeats on a shared machine; timings are noisy",
    }
    path = write_results(
        __file__,
        data,
        args.out,
        argv,
        [
            headline(
                f"state-information optimal stopping DP, S=V={V}, depth {D}, T={T} (s)",
                t_dp,
                note=f"budget {BUDGET_S:g} s on 2 cores; noisy shared machine",
            ),
            headline(f"full-information (path) optimum by enumeration, V=6, depth {Ds}, T={Ts} (s)", t_path),
        ],
    )
    print(f"wrote {path}")
    if not args.quick:
        assert t_dp < BUDGET_S, f"state DP took {t_dp:.2f} s (budget {BUDGET_S} s)"


if __name__ == "__main__":
    main()

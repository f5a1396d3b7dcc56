"""``spectheory analyze`` and ``spectheory simulate``: a chain from a file or a random instance.

Both print a table, or with ``--json`` one object whose ``settings`` say exactly what was
run (chain options, horizon, gammas, cost, bonus; ``simulate`` adds the runs). Monte Carlo
runs are simulated in chunks (:data:`SIMULATE_CHUNK`), so any ``--runs`` fits in memory.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .chain_input import (
    CHAIN_DEFAULTS,  # noqa: F401  (re-exported)
    SIMULATE_CHUNK,
    CLIError,
    _load_checked,
    _settings,
    add_chain_args,
    check_request,
    load_chain,
)

if TYPE_CHECKING:
    from ..chain import DecodingChain

__all__ = [
    "CLIError",
    "load_chain",
    "analyze_table",
    "monte_carlo_rows",
    "cmd_analyze",
    "cmd_simulate",
    "add_chain_args",
    "SIMULATE_CHUNK",
    "check_request",
]


def analyze_table(
    chain: DecodingChain, horizon: int, gammas: Sequence[int], cost: float, bonus: bool
) -> dict:
    """Exact quantities of a chain as a JSON-ready dict (used by ``analyze`` and ``simulate``)."""
    profile = chain.tv_profile(horizon)
    rows: list[dict[str, Any]] = []
    for g in gammas:
        gap = chain.leviathan_gap(horizon, g, bonus=bonus)
        rows.append(
            {
                "gamma": g,
                "target_calls": float(chain.expected_target_calls(horizon, g, bonus=bonus)),
                "rejections": float(chain.expected_rejections(horizon, gamma=g, bonus=bonus)),
                "draft_tokens": float(chain.expected_draft_tokens(horizon, g, bonus=bonus)),
                "speedup": float(chain.predicted_speedup(horizon, g, cost, bonus=bonus)),
                "leviathan": gap if isinstance(gap, dict) else getattr(gap, "__dict__", str(gap)),
            }
        )
    best = max(rows, key=lambda r: r["speedup"])
    return {
        "chain": repr(chain),
        "horizon": horizon,
        "bonus": bonus,
        "cost": cost,
        "tv_profile_mean": float(profile.mean()),
        "tv_profile_first": [float(x) for x in profile[:8]],
        "rejections_theorem1": float(profile.sum()),
        "rejection_lower_bound": float(chain.rejection_lower_bound(horizon)),
        "per_gamma": rows,
        "optimal_gamma": best["gamma"],
    }


def _print_table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(str(h).rjust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(str(v).rjust(w) for v, w in zip(r, widths)))


def cmd_analyze(args: argparse.Namespace) -> int:
    settings = _settings(args)
    chain, _ = _load_checked(args)
    out = analyze_table(chain, args.horizon, args.gammas, args.cost, not args.no_bonus)
    if args.json:
        print(json.dumps({"settings": settings, **out}, indent=1, default=float))
        return 0
    print(f"{out['chain']}, T = {args.horizon}, bonus = {out['bonus']}, cost ratio c = {args.cost}")
    print(f"mean TV(target, draft) along target prefixes: {out['tv_profile_mean']:.4f}")
    print(
        f"E[rejections], Theorem 1 (no bonus): {out['rejections_theorem1']:.4f}  "
        f"(lower bound for any unbiased rejection verifier: {out['rejection_lower_bound']:.4f})"
    )
    _print_table(
        ["gamma", "E[calls]", "E[rejections]", "E[draft tokens]", "speedup(c)"],
        [
            [
                r["gamma"],
                f"{r['target_calls']:.4f}",
                f"{r['rejections']:.4f}",
                f"{r['draft_tokens']:.4f}",
                f"{r['speedup']:.4f}",
            ]
            for r in out["per_gamma"]
        ],
    )
    print(f"best gamma among {args.gammas} for c = {args.cost}: {out['optimal_gamma']}")
    return 0


def monte_carlo_rows(
    chain: DecodingChain,
    horizon: int,
    gamma: int,
    n_runs: int,
    seed: int,
    bonus: bool,
    chunk: int = SIMULATE_CHUNK,
    progress: Any = None,
) -> list[dict]:
    """Exact value, Monte Carlo mean, SE and z of each counter, over ``n_runs`` in chunks.

    The runs are simulated ``chunk`` at a time with one random stream
    (``default_rng([seed, gamma])``), and only per-counter sums and sums of squares are
    kept, so the memory is that of one chunk whatever ``n_runs`` is. ``progress`` is passed to
    :func:`~spectheory.simulate` (a bar given by the caller spans every chunk).
    """
    from .._progress import progress_bar
    from ..montecarlo.simulator import simulate
    from .tasks import COUNTERS, counter_rows, exact_counters

    rng = np.random.default_rng([seed, gamma])
    sums = {name: np.zeros(2) for name in COUNTERS}
    with progress_bar(
        n_runs * horizon, f"simulate gamma={gamma}", show=progress, unit="tok", unit_scale=True
    ) as bar:
        for start in range(0, n_runs, chunk):  # one bar over every chunk (or the caller's bar)
            n = min(chunk, n_runs - start)
            sim = simulate(chain, horizon, gamma, n, rng=rng, bonus=bonus, progress=bar)
            for name in COUNTERS:
                x = getattr(sim, name).astype(np.float64)
                sums[name] += (x.sum(), (x * x).sum())
    estimates = {}
    for name in COUNTERS:
        total, squares = sums[name]
        mean = total / n_runs
        var = max(squares - n_runs * mean * mean, 0.0) / (n_runs - 1) if n_runs > 1 else 0.0
        estimates[name] = (float(mean), float(np.sqrt(var / n_runs)))
    return counter_rows(exact_counters(chain, horizon, gamma, bonus), estimates)


def cmd_simulate(args: argparse.Namespace) -> int:
    from .._progress import progress_bar
    from .._sizes import PROGRESS_SECONDS

    settings = _settings(args)
    chain, est = _load_checked(args, runs=args.runs)
    bonus = not args.no_bonus
    total = args.runs * args.horizon * len(args.gammas)  # one bar, one total for the whole job
    show = True if est.seconds > PROGRESS_SECONDS else None
    with progress_bar(total, "simulate", show=show, unit="tok", unit_scale=True) as bar:
        records = [
            {"gamma": g, **row}
            for g in args.gammas
            for row in monte_carlo_rows(
                chain, args.horizon, g, args.runs, settings.get("seed", 0), bonus, progress=bar
            )
        ]
    if args.json:
        print(
            json.dumps(
                {
                    "settings": {**settings, "runs": args.runs},
                    "chain": repr(chain),
                    "runs": args.runs,
                    "rows": records,
                },
                indent=1,
            )
        )
        return 0
    print(f"{chain!r}, T = {args.horizon}, bonus = {bonus}, {args.runs} Monte Carlo runs")
    _print_table(
        ["gamma", "quantity", "exact", "MC mean", "MC SE", "z"],
        [
            [
                r["gamma"],
                r["quantity"],
                f"{r['exact']:.4f}",
                f"{r['mc_mean']:.4f}",
                f"{r['mc_se']:.4f}",
                f"{r['z']:+.2f}",
            ]
            for r in records
        ],
    )
    return 0

"""The sequential exercise of the conformance kit: false alarms on correct samplers and power on repeating randomness.

Drives samplers as an engine does (``spectheory.testing.sequential.check_sequential``: 64 calls
of 32 rows on each of the default 9 instances, and 256 calls on a tiny chain, the default
sizes) and counts

* the runs that flag a correct sampler over ``--seeds`` seeds (default 200; the level is
  alpha = 1e-4 per run, so the expected count is 0.02): the token Verifier's batched rule and
  the ragged reference sampler through ``ragged_as_verifier``;
* for each entry of ``spectheory.testing.gallery_sequential.SEQUENTIAL_BUGS`` (randomness
  that repeats across calls), the fewest calls in sequence (of 32 rows) at which every one of
  ``--repeats`` seeds flags it, the checks that flag it, and whether the one-call kit
  (``check_verifier`` at 2,000 samples per instance, every row in one call) flags it.

Writes ``testing_kit_sequential.json`` into ``--out``.

Usage: python simulations/testing_kit_sequential.py [--quick] [--seeds N] [--repeats R] [--out DIR]
"""

import sys
import time

from tqdm.auto import tqdm

from spectheory.app.results import headline, script_parser, write_results
from spectheory.testing import check_verifier
from spectheory.testing.gallery_sequential import SEQUENTIAL_BUGS
from spectheory.testing.ragged_format import reference_ragged_sampler
from spectheory.testing.sequential import BATCH, CHAIN_STEPS, STEPS, check_sequential, ragged_as_verifier

GRID = (2, 4, 8, 16, 32, 64)


def references():
    """The correct samplers: name -> a factory."""
    return {
        "token": lambda: "token",
        "ragged_reference": lambda: ragged_as_verifier(reference_ragged_sampler),
    }


def false_alarms(n_seeds: int, first_seed: int = 20_000) -> dict:
    out = {}
    for name, make in references().items():
        flagged, failed, t0 = [], {}, time.perf_counter()
        for s in tqdm(range(first_seed, first_seed + n_seeds), desc=f"false alarms ({name})"):
            report = check_sequential(make(), rng=s)
            if report.failed:
                flagged.append(s)
            for c in report.failed:
                failed[c] = failed.get(c, 0) + 1
        out[name] = {
            "n_seeds": n_seeds,
            "runs_flagged": len(flagged),
            "flagged_seeds": flagged,
            "failed_checks": failed,
            "expected_flags": n_seeds * 1e-4,
            "tests_per_run": report.n_tests,
            "seconds": round(time.perf_counter() - t0, 1),
        }
    return out


def power(repeats: int, grid=GRID) -> list:
    rows = []
    for name, (factory, desc, expected) in tqdm(SEQUENTIAL_BUGS.items(), desc="power"):
        smallest, flagged_by = None, {}
        for steps in grid:
            reports = [check_sequential(factory(), steps=steps, rng=1_000 + r) for r in range(repeats)]
            if all(rep.failed for rep in reports):
                smallest = steps
                for rep in reports:
                    for c in rep.failed:
                        flagged_by[c] = flagged_by.get(c, 0) + 1
                break
        one_call = check_verifier(factory(), n_samples=2000, rng=0, efficiency=False, progress=False)
        rows.append(
            {
                "name": name,
                "description": desc,
                "expected": list(expected),
                "smallest_steps": smallest,
                "batch": BATCH,
                "grid": list(grid),
                "flagged_by": sorted(flagged_by, key=lambda c: -flagged_by[c]),
                "one_call_kit_failed": one_call.failed,
            }
        )
    return rows


def main(argv=None):
    ap = script_parser(__doc__)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    seeds, repeats = (3, 2) if args.quick else (args.seeds, args.repeats)
    grid = (16, 64) if args.quick else GRID
    alarms = false_alarms(seeds)
    rows = power(repeats, grid)
    for name, r in alarms.items():
        print(
            f"{name}: {r['runs_flagged']} of {r['n_seeds']} runs flagged falsely (expected {r['expected_flags']:.3g})"
        )
    for r in rows:
        print(
            f"{r['name']}: flagged at {r['smallest_steps']} calls of {r['batch']} rows by {r['flagged_by']}"
        )
    out = {
        "defaults": {"steps": STEPS, "batch": BATCH, "chain_steps": CHAIN_STEPS, "alpha": 1e-4},
        "false_alarms": alarms,
        "runs_flagged": max(r["runs_flagged"] for r in alarms.values()),
        "n_seeds": seeds,
        "repeats": repeats,
        "rows": rows,
    }
    heads = [
        headline(
            f"conformance kit, sequential: runs falsely flagging {name}",
            f"{r['runs_flagged']}/{r['n_seeds']}",
            note=f"expected {r['expected_flags']:.3g}",
        )
        for name, r in alarms.items()
    ]
    caught = [r for r in rows if r["smallest_steps"] is not None]
    heads.append(
        headline(
            f"conformance kit, sequential: repeating-randomness bugs flagged in every seed at <= {grid[-1]} calls",
            f"{len(caught)}/{len(rows)}",
            note=f"of {BATCH} rows; the most calls needed: {max((r['smallest_steps'] for r in caught), default=None)}",
        )
    )
    write_results(__file__, out, args.out, argv, heads)
    return out


if __name__ == "__main__":
    sys.exit(0 if main()["runs_flagged"] <= 1 else 1)

"""Import time of spectheory against numpy and scipy, each in a fresh interpreter.

``import spectheory`` should cost little more than the two libraries it is built on: it loads
numpy and the one-position laws; the chain, the engines, scipy.sparse and scipy.stats load on
first use. Measured here, each time in a new ``python`` process (so nothing is cached in
``sys.modules``), as the wall time of the import statement alone (interpreter start-up
excluded), median over ``--runs`` runs, the cases interleaved so that load on the machine
affects all of them alike:

- ``baseline``: ``import numpy, scipy``;
- ``spectheory``: ``import spectheory`` (goal: at most 1.5x the baseline);
- ``first_use``: ``import spectheory; spectheory.DecodingChain; spectheory.simulate`` (what the
  first chain and simulation add: the engines and scipy.sparse), for the record.

Also records the modules each case leaves in ``sys.modules``. Writes ``import_time.json`` into
``--out`` (default ``results/``).

Usage: python benchmarks/import_time.py [--quick] [--runs N] [--out DIR]
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

from spectheory.app.results import headline, script_parser, write_results

ROOT = Path(__file__).resolve().parent.parent

CASES = {
    "baseline": "import numpy, scipy",
    "spectheory": "import spectheory",
    "first_use": "import spectheory; spectheory.DecodingChain; spectheory.simulate",
}

#: The libraries ``import spectheory`` must not load.
HEAVY = ("torch", "scipy.stats", "scipy.sparse", "matplotlib", "sympy")

PROBE = """
import sys, time, json
t0 = time.perf_counter()
{stmt}
dt = time.perf_counter() - t0
print(json.dumps({{"seconds": dt, "modules": len(sys.modules),
                  "spectheory_modules": sum(m.split('.')[0] == 'spectheory' for m in sys.modules),
                  "heavy": [m for m in {heavy!r} if m in sys.modules]}}))
"""


def measure(stmt: str) -> dict:
    """One fresh interpreter: seconds of ``stmt`` and what it left in ``sys.modules``."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    code = PROBE.format(stmt=stmt, heavy=HEAVY)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout)


def main(argv=None):
    parser = script_parser(__doc__)
    parser.add_argument("--runs", type=int, default=None, help="fresh interpreters per case (default 21)")
    args = parser.parse_args(argv)
    runs = args.runs or (5 if args.quick else 21)
    if runs < 1:
        parser.error(f"--runs: expected a positive integer, got {runs}")
    for stmt in CASES.values():  # warm the file-system cache once
        measure(stmt)
    samples = {name: [] for name in CASES}
    last = {}
    for _ in range(runs):
        for name, stmt in CASES.items():
            res = measure(stmt)
            samples[name].append(res["seconds"])
            last[name] = res
    cases = {
        name: {
            "statement": CASES[name],
            "median_seconds": statistics.median(samples[name]),
            "seconds": samples[name],
            "modules": last[name]["modules"],
            "spectheory_modules": last[name]["spectheory_modules"],
            "heavy_loaded": last[name]["heavy"],
        }
        for name in CASES
    }
    base = cases["baseline"]["median_seconds"]
    ratio = cases["spectheory"]["median_seconds"] / base
    first_use = cases["first_use"]["median_seconds"] / base
    for name, case in cases.items():
        print(
            f"{name:>10}: {case['median_seconds'] * 1e3:7.1f} ms median of {runs}  "
            f"({case['spectheory_modules']} spectheory modules; heavy loaded: {case['heavy_loaded'] or 'none'})"
        )
    print(f"import spectheory / import numpy, scipy = {ratio:.2f} (goal <= 1.5); first use: {first_use:.2f}")
    data = {
        "runs": runs,
        "goal_ratio": 1.5,
        "ratio": ratio,
        "first_use_ratio": first_use,
        "meets_goal": ratio <= 1.5,
        "cases": cases,
    }
    write_results(
        __file__,
        data,
        out=args.out,
        argv=argv,
        headlines=[
            headline(
                "import spectheory / import numpy, scipy (median wall time, fresh interpreters)",
                ratio,
                note="goal <= 1.5",
            ),
        ],
    )


if __name__ == "__main__":
    main()

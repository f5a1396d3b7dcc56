"""Compare the numbers of two results folders: did a change move any committed result?

Reruns selected experiment scripts into a fresh folder (or takes one already written) and
compares every numeric leaf of each JSON file with the committed ``results/`` copy. Provenance
(date, machine, command) and wall-clock timings are skipped; renamed keys can be mapped onto
their old names (``--alias new=old``). Exact values and Monte Carlo values of unchanged seeds
must agree to ``--rtol`` (default 1e-12 relative, 1e-12 absolute).

Usage::

    python scripts/compare_results.py --run trees multidraft       # rerun two scripts, compare
    python scripts/compare_results.py --new /tmp/out                # compare a folder already written

Exit status 0 when every compared number agrees, 1 otherwise (the differences are listed).
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: keys that record where and when, not what
PROVENANCE = {"date", "machine", "command", "python", "platform", "seconds"}
#: key fragments of wall-clock measurements (they move run to run)
TIMING = ("seconds", "wall", "_time_s", "elapsed", "time_s", "per_s", "tok_s", "ms")


def _is_timing(key: str) -> bool:
    k = key.lower()
    return k in PROVENANCE or any(t in k for t in TIMING)


def compare(old, new, path="", rtol=1e-12, atol=1e-12, aliases=None, out=None):
    """Append ``(path, old, new)`` for every numeric leaf that differs; returns the list."""
    out = [] if out is None else out
    aliases = aliases or {}
    if isinstance(old, dict) and isinstance(new, dict):
        new = {aliases.get(k, k): v for k, v in new.items()}
        for key, value in old.items():
            if _is_timing(str(key)):
                continue
            if key not in new:
                out.append((f"{path}/{key}", value, "<missing>"))
                continue
            compare(value, new[key], f"{path}/{key}", rtol, atol, aliases, out)
        return out
    if isinstance(old, list) and isinstance(new, list):
        if len(old) != len(new):
            out.append((path, f"list of {len(old)}", f"list of {len(new)}"))
            return out
        for i, (a, b) in enumerate(zip(old, new)):
            compare(a, b, f"{path}[{i}]", rtol, atol, aliases, out)
        return out
    if isinstance(old, bool) or isinstance(new, bool):
        if old != new:
            out.append((path, old, new))
        return out
    if isinstance(old, (int, float)) and isinstance(new, (int, float)):
        if not math.isclose(old, new, rel_tol=rtol, abs_tol=atol):
            out.append((path, old, new))
        return out
    if old != new:
        out.append((path, old, new))
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", nargs="*", default=[], help="simulations/ scripts to rerun (stems)")
    parser.add_argument("--new", default=None, help="folder with the new JSON files")
    parser.add_argument("--old", default=str(ROOT / "results"), help="committed results folder")
    parser.add_argument("--rtol", type=float, default=1e-12)
    parser.add_argument("--atol", type=float, default=1e-12)
    parser.add_argument("--alias", action="append", default=[], help="NEW=OLD key rename")
    args = parser.parse_args(argv)
    new_dir = Path(args.new or tempfile.mkdtemp(prefix="spectheory-compare-"))
    for stem in args.run:
        script = ROOT / "simulations" / f"{stem}.py"
        if not script.exists():
            parser.error(f"--run: no script simulations/{stem}.py")
        print(f"running {script.relative_to(ROOT)} -> {new_dir}", flush=True)
        subprocess.run([sys.executable, str(script), "--out", str(new_dir)], check=True, cwd=ROOT)
    aliases = dict(a.split("=", 1) for a in args.alias)
    bad = 0
    files = sorted(new_dir.glob("*.json"))
    if not files:
        parser.error(f"--new: no JSON files in {new_dir}")
    for path in files:
        old_path = Path(args.old) / path.name
        if not old_path.exists():
            print(f"{path.name}: no committed copy, skipped")
            continue
        diffs = compare(
            json.loads(old_path.read_text()), json.loads(path.read_text()), "", args.rtol, args.atol, aliases
        )
        diffs = [d for d in diffs if not d[0].startswith("/headline")] + [
            d for d in diffs if d[0].startswith("/headline")
        ]
        status = "same numbers" if not diffs else f"{len(diffs)} differences"
        print(f"{path.name}: {status}")
        for where, a, b in diffs[:20]:
            print(f"    {where}: {a!r} -> {b!r}")
        bad += bool(diffs)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

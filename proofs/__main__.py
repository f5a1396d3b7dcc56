"""``python -m proofs [NAME ...]``: run the symbolic proofs, one line per result."""

from __future__ import annotations

import argparse
import sys

from . import PROOFS, run_one


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m proofs",
        description="Run the sympy proofs of spectheory's results.",
        epilog="example: python -m proofs one_step_law kseq_residual",
    )
    parser.add_argument(
        "names", nargs="*", metavar="NAME", help=f"proofs to run (default: all): {', '.join(PROOFS)}"
    )
    parser.add_argument("--out", default=None, help="also write proofs.json (with headline rows) into DIR")
    parser.add_argument(
        "--quick", action="store_true", help="accepted for the main job; the proofs are always complete"
    )
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in PROOFS]
    if unknown:
        print(f"error: unknown proof {unknown[0]!r}; choose from {', '.join(PROOFS)}", file=sys.stderr)
        return 2
    failed, results = 0, []
    width = max(len(n) for n in PROOFS)
    for name in args.names or PROOFS:
        r = run_one(name)
        results.append(r)
        print(f"{'PASS' if r.ok else 'FAIL'}  {r.seconds:6.2f} s  {r.name:<{width}}  {r.title}", flush=True)
        if not r.ok:
            failed += 1
            print("      " + r.message.replace("\n", "\n      "), flush=True)
    if args.out:
        from spectheory.app.results import headline, write_results

        rows = [{"name": r.name, "title": r.title, "ok": r.ok, "seconds": r.seconds} for r in results]
        write_results(
            __file__,
            {"proofs": rows},
            args.out,
            argv,
            [headline("sympy proofs passing (python -m proofs)", f"{len(results) - failed}/{len(results)}")],
        )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m proofs [NAME ...]``: run the symbolic proofs, one line per result."""
from __future__ import annotations

import argparse
import sys

from . import PROOFS, run_one


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m proofs", description="Run the sympy proofs of spectheory's results.",
        epilog="example: python -m proofs one_step_law kseq_residual")
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"proofs to run (default: all): {', '.join(PROOFS)}")
    args = parser.parse_args(argv)
    unknown = [n for n in args.names if n not in PROOFS]
    if unknown:
        print(f"error: unknown proof {unknown[0]!r}; choose from {', '.join(PROOFS)}", file=sys.stderr)
        return 2
    failed = 0
    width = max(len(n) for n in PROOFS)
    for name in args.names or PROOFS:
        r = run_one(name)
        print(f"{'PASS' if r.ok else 'FAIL'}  {r.seconds:6.2f} s  {r.name:<{width}}  {r.title}", flush=True)
        if not r.ok:
            failed += 1
            print("      " + r.message.replace("\n", "\n      "), flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

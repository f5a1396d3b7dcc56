"""The ``spectheory`` command line.

Subcommands: ``reproduce`` (the main job), ``analyze``, ``simulate``, ``decode``, ``demo``,
``figures``, ``prove``. Bad arguments print one line and exit with status 2; errors inside
a command print one line and exit with status 1 (``--traceback`` shows the full trace).
"""
from __future__ import annotations

import argparse
import json
import sys

import numpy as np

EXAMPLES = {
    "reproduce": "spectheory reproduce --quick --out /tmp/st-out --jobs 2",
    "analyze": "spectheory analyze --vocab 16 --seed 0 --horizon 64 --gammas 1,2,4,8 --cost 0.05",
    "simulate": "spectheory simulate --vocab 16 --seed 0 --horizon 64 --gammas 2,4 --runs 5000",
    "decode": 'spectheory decode --prompt "def main(" --draft draft-small --gamma 4 --tokens 64',
    "demo": "spectheory demo --seed 0 --gamma 3 --auto",
    "figures": "spectheory figures fig4_leviathan --quick",
    "prove": "spectheory prove",
}


class CLIError(Exception):
    """An error to report in one line."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage block
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


def _gammas(text: str) -> list[int]:
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("gammas must be integers >= 1")
    return values


def _add_chain_args(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("chain (a file, or a random instance)")
    src.add_argument("--chain", help="JSON or NPZ file with arrays target, draft [, initial, next_state]")
    src.add_argument("--vocab", type=int, default=8, help="vocabulary size of a random chain (default 8)")
    src.add_argument("--states", type=int, default=None, help="number of states (default: vocab)")
    src.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    src.add_argument("--concentration", type=float, default=1.0, help="Dirichlet concentration (default 1)")
    src.add_argument("--similarity", type=float, default=0.0, help="draft = s*target + (1-s)*noise (default 0)")
    p.add_argument("--horizon", type=int, default=32, help="tokens generated, T (default 32)")
    p.add_argument("--gammas", type=_gammas, default=[1, 2, 4, 8], help="draft lengths (default 1,2,4,8)")
    p.add_argument("--cost", type=float, default=0.05, help="cost ratio c = t_draft / t_target (default 0.05)")
    p.add_argument("--no-bonus", action="store_true", help="count without bonus tokens (Yin et al.)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def load_chain(args):
    """Build the DecodingChain named by the command-line arguments."""
    from ..chain.core import DecodingChain

    if args.chain:
        path = args.chain
        try:
            if path.endswith(".npz"):
                with np.load(path) as z:
                    data = {k: z[k] for k in z.files}
            else:
                with open(path) as fh:
                    data = json.load(fh)
        except OSError as exc:
            raise CLIError(f"cannot read chain file {path!r}: {exc.strerror}") from None
        except (ValueError, KeyError) as exc:
            raise CLIError(f"cannot parse chain file {path!r}: {exc}") from None
        missing = {"target", "draft"} - set(data)
        if missing:
            raise CLIError(f"chain file {path!r} lacks {sorted(missing)}")
        return DecodingChain(data["target"], data["draft"], data.get("initial"), data.get("next_state"))
    return DecodingChain.random(args.vocab, n_states=args.states, concentration=args.concentration,
                                similarity=args.similarity, rng=args.seed)


def analyze_table(chain, horizon: int, gammas, cost: float, bonus: bool) -> dict:
    """Exact quantities of a chain as a JSON-ready dict (used by ``analyze`` and ``simulate``)."""
    profile = chain.tv_profile(horizon)
    rows = []
    for g in gammas:
        gap = chain.leviathan_gap(horizon, g, bonus=bonus)
        rows.append({
            "gamma": g,
            "target_calls": float(chain.expected_target_calls(horizon, g, bonus=bonus)),
            "rejections": float(chain.expected_rejections(horizon, gamma=g, bonus=bonus)),
            "draft_tokens": float(chain.expected_draft_tokens(horizon, g, bonus=bonus)),
            "speedup": float(chain.predicted_speedup(horizon, g, cost, bonus=bonus)),
            "leviathan": gap if isinstance(gap, dict) else getattr(gap, "__dict__", str(gap)),
        })
    best = max(rows, key=lambda r: r["speedup"])
    return {
        "chain": repr(chain), "horizon": horizon, "bonus": bonus, "cost": cost,
        "tv_profile_mean": float(profile.mean()),
        "tv_profile_first": [float(x) for x in profile[:8]],
        "rejections_theorem1": float(profile.sum()),
        "rejection_lower_bound": float(chain.rejection_lower_bound(horizon)),
        "per_gamma": rows, "optimal_gamma": best["gamma"],
    }


def _print_table(header, rows) -> None:
    widths = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(header)]
    print("  ".join(str(h).rjust(w) for h, w in zip(header, widths)))
    for r in rows:
        print("  ".join(str(v).rjust(w) for v, w in zip(r, widths)))


def cmd_analyze(args) -> int:
    chain = load_chain(args)
    out = analyze_table(chain, args.horizon, args.gammas, args.cost, not args.no_bonus)
    if args.json:
        print(json.dumps(out, indent=1, default=float))
        return 0
    print(f"{out['chain']}, T = {args.horizon}, bonus = {out['bonus']}, cost ratio c = {args.cost}")
    print(f"mean TV(target, draft) along target prefixes: {out['tv_profile_mean']:.4f}")
    print(f"E[rejections], Theorem 1 (no bonus): {out['rejections_theorem1']:.4f}  "
          f"(lower bound for any unbiased rejection verifier: {out['rejection_lower_bound']:.4f})")
    _print_table(["gamma", "E[calls]", "E[rejections]", "E[draft tokens]", "speedup(c)"],
                 [[r["gamma"], f"{r['target_calls']:.4f}", f"{r['rejections']:.4f}",
                   f"{r['draft_tokens']:.4f}", f"{r['speedup']:.4f}"] for r in out["per_gamma"]])
    print(f"best gamma among {args.gammas} for c = {args.cost}: {out['optimal_gamma']}")
    return 0


def cmd_simulate(args) -> int:
    from .tasks import exact_vs_monte_carlo

    chain = load_chain(args)
    bonus = not args.no_bonus
    records = [{"gamma": g, **row} for g in args.gammas
               for row in exact_vs_monte_carlo(chain, args.horizon, g, args.runs, rng=[args.seed, g], bonus=bonus)]
    if args.json:
        print(json.dumps({"chain": repr(chain), "runs": args.runs, "rows": records}, indent=1))
        return 0
    print(f"{chain!r}, T = {args.horizon}, bonus = {bonus}, {args.runs} Monte Carlo runs")
    _print_table(["gamma", "quantity", "exact", "MC mean", "MC SE", "z"],
                 [[r["gamma"], r["quantity"], f"{r['exact']:.4f}", f"{r['mc_mean']:.4f}", f"{r['mc_se']:.4f}",
                   f"{r['z']:+.2f}"] for r in records])
    return 0


def cmd_prove(args) -> int:
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)  # proofs/ sits beside the package
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        from proofs.__main__ import main as proofs_main
    except ImportError:
        raise CLIError("the proofs/ folder is not importable (use a checkout of the repository)") from None
    return proofs_main([])


def cmd_demo(args) -> int:
    from ..teaching.demo import main as demo_main
    argv = ["--seed", str(args.seed), "--gamma", str(args.gamma)]
    argv += ["--rounds", str(args.rounds)] if args.rounds is not None else []
    argv += ["--auto"] if args.auto else []
    argv += ["--save", args.save] if args.save else []
    return demo_main(argv) or 0


def cmd_figures(args) -> int:
    from .reproduce import run_figures
    return run_figures(args.names, quick=args.quick, out=args.out, jobs=args.jobs)


def cmd_decode(args) -> int:
    from .decode_cmd import run_decode
    return run_decode(args)


def cmd_reproduce(args) -> int:
    from .reproduce import reproduce
    return reproduce(out=args.out, quick=args.quick, jobs=args.jobs, scheduler=args.scheduler)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="spectheory", description=__doc__.splitlines()[0])
    parser.add_argument("--traceback", action="store_true", help="show full tracebacks on errors")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add(name, func, help_):
        p = sub.add_parser(name, help=help_, description=help_, epilog=f"example: {EXAMPLES[name]}",
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        p.set_defaults(func=func)
        return p

    p = add("reproduce", cmd_reproduce, "regenerate every result and figure (the main job)")
    p.add_argument("--quick", action="store_true", help="small sizes (a few minutes)")
    p.add_argument("--out", default=None,
                   help="output folder (default: the repository's own results/ and figures/)")
    p.add_argument("--jobs", type=int, default=1, help="local worker processes (default 1)")
    p.add_argument("--scheduler", default=None, help="dask.distributed scheduler address")

    p = add("analyze", cmd_analyze, "exact quantities of a chain (file or random instance)")
    _add_chain_args(p)

    p = add("simulate", cmd_simulate, "Monte Carlo of a chain, side by side with the exact values")
    _add_chain_args(p)
    p.add_argument("--runs", type=int, default=2000, help="Monte Carlo runs per gamma (default 2000)")

    p = add("decode", cmd_decode, "run the real decoder on the shipped models")
    p.add_argument("--prompt", default="def ", help="prompt text")
    p.add_argument("--draft", default="draft-small",
                   help="draft model: draft-small, draft-tiny or draft-ngram (spectheory.decoder.list_models())")
    p.add_argument("--gamma", type=int, default=4)
    p.add_argument("--tokens", type=int, default=64, help="new tokens (default 64)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--no-bonus", action="store_true", help="no bonus tokens (Yin et al.'s counting)")
    p.add_argument("--json", action="store_true")

    p = add("demo", cmd_demo, "step-by-step teaching demo in the terminal")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--gamma", type=int, default=3)
    p.add_argument("--rounds", type=int, default=None, help="rounds to play (default: the demo's own)")
    p.add_argument("--auto", action="store_true", help="no key presses (for tests and recordings)")
    p.add_argument("--save", default=None, metavar="DIR", help="write one figure per step into DIR")

    p = add("figures", cmd_figures, "regenerate some or all figures")
    p.add_argument("names", nargs="*", help="figure names (default: all)")
    p.add_argument("--quick", action="store_true")
    p.add_argument("--out", default=None, help="output folder (default figures/)")
    p.add_argument("--jobs", type=int, default=1)

    add("prove", cmd_prove, "run the symbolic proofs (sympy)")
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (CLIError, ValueError, NotImplementedError, FileNotFoundError) as exc:
        if args.traceback:
            raise
        sys.stderr.write(f"spectheory {args.command}: error: {exc}\n")
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

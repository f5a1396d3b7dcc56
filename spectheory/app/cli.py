"""The ``spectheory`` command line.

Subcommands: ``reproduce`` (the main job), ``analyze``, ``simulate``, ``decode``, ``demo``,
``figures``, ``prove``, ``tune``. A user mistake (a bad argument, an unreadable file, a request too big
for memory) prints one line naming the argument and exits with status 2, never a traceback;
``--traceback`` (before or after the subcommand) shows the full trace. An unexpected internal
error prints one line and exits with status 1. Output cut short by a closed pipe
(``spectheory analyze --json | head``) ends quietly.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from ..decoder.pretrained import MissingExtraError  # no torch: names only
from . import cli_args as A
from .chain_cmd import (
    SIMULATE_CHUNK,
    CLIError,
    add_chain_args,
    cmd_analyze,  # noqa: F401
    cmd_simulate,
)

EXAMPLES = {
    "reproduce": "spectheory reproduce --quick --out /tmp/st-out --jobs 2",
    "analyze": "spectheory analyze --vocab 16 --seed 0 --horizon 64 --gammas 1,2,4,8 --cost 0.05",
    "simulate": "spectheory simulate --vocab 16 --seed 0 --horizon 64 --gammas 2,4 --runs 5000",
    "decode": 'spectheory decode --prompt "def main(" --draft draft-small --gamma 4 --tokens 64  '
    '(a real LLM: --target smollm2-135m --chat --prompt "Name three colours.")',
    "demo": "spectheory demo --seed 0 --gamma 3 --auto",
    "figures": "spectheory figures fig4_leviathan --quick",
    "prove": "spectheory prove",
    "tune": "spectheory tune --batches 1,16 --gammas 1,2,4,8 --verify",
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"{self.prog}: error: {message}\n")
        raise SystemExit(2)


class _Help(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Defaults shown for every option; the description and example kept as written."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (
            "default" in text
            or any(action.default is d for d in (None, False, argparse.SUPPRESS))
            or not action.option_strings
        ):
            return text
        return text + " (default: %(default)s)"


def _root(args: argparse.Namespace) -> Path:
    """The repository checkout the command works on: ``--root`` or the one around the current
    directory (:func:`spectheory.app.repo.find_repository`)."""
    from .repo import find_repository, is_repository

    if args.root is None:
        return find_repository()
    if not is_repository(args.root):
        raise CLIError(f"--root {args.root}: not a spectheory checkout (no simulations/ and figures/ there)")
    return Path(args.root).resolve()


def cmd_prove(args: argparse.Namespace) -> int:
    import subprocess

    root = _root(args)
    if not (root / "proofs" / "__main__.py").exists():
        raise CLIError(f"--root {root}: has no proofs/ folder")
    return subprocess.run([sys.executable, "-m", "proofs"], cwd=root).returncode


def cmd_demo(args: argparse.Namespace) -> int:
    if args.target is not None:  # a real LLM: the models and prompt are the app's (model_args)
        from ..teaching.demo import run_demo
        from .model_args import demo_view

        options = {"seed": args.seed, "n_rounds": args.rounds}
        run_demo(
            gamma=args.gamma,
            auto=args.auto,
            save=args.save,
            models=demo_view(args),
            **{k: v for k, v in options.items() if v is not None},
        )
        return 0
    from ..teaching.demo import main as demo_main

    argv = ["--gamma", str(args.gamma)] + (["--seed", str(args.seed)] if args.seed is not None else [])
    argv += ["--rounds", str(args.rounds)] if args.rounds is not None else []
    argv += ["--auto"] if args.auto else []
    argv += ["--save", args.save] if args.save else []
    return demo_main(argv) or 0


def cmd_figures(args: argparse.Namespace) -> int:
    from .figures_job import run_figures

    return run_figures(
        _root(args), args.names, quick=args.quick, out=args.out, jobs=args.jobs, results=args.results
    )


def cmd_decode(args: argparse.Namespace) -> int:
    from .decode_cmd import run_decode

    return run_decode(args)


def cmd_tune(args: argparse.Namespace) -> int:
    from .tune_cmd import run_tune

    return run_tune(args)


def cmd_reproduce(args: argparse.Namespace) -> int:
    from .reproduce import reproduce

    options = ("out", "quick", "jobs", "scheduler", "only", "force")
    return reproduce(_root(args), **{k: getattr(args, k) for k in options})


def _names(text: str) -> list[str]:
    """A comma-separated list of names, none empty (``--only a,,b`` is refused)."""
    names = [n.strip() for n in text.split(",")]
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated names, got {text!r}")
    return names


def _version() -> str:
    """The running package's version (``spectheory.__version__``; an editable install's
    metadata keeps the version it was installed at)."""
    from .. import __version__

    return __version__


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="spectheory", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"spectheory {_version()}")
    parser.add_argument("--traceback", action="store_true", help="show full tracebacks on errors")
    common = _Parser(add_help=False)  # --traceback also after the subcommand
    common.add_argument(
        "--traceback", action="store_true", default=argparse.SUPPRESS, help="show full tracebacks on errors"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    def add(name, func, help_):
        p = sub.add_parser(
            name,
            help=help_,
            description=help_,
            epilog=f"example: {EXAMPLES[name]}",
            formatter_class=_Help,
            parents=[common],
        )
        p.set_defaults(func=func)
        return p

    def add_root(p):
        p.add_argument(
            "--root",
            default=None,
            metavar="PATH",
            help="repository checkout to work on (default: the one around the current directory)",
        )

    def add_dir(p, flag, help_, type_=None):
        """A folder option, ``DIR``, default none (``type_`` checks it, e.g. :func:`A.output_dir`)."""
        p.add_argument(flag, type=type_, default=None, metavar="DIR", help=help_)

    p = add("reproduce", cmd_reproduce, "regenerate every result and figure (the main job)")
    add_root(p)
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, a few minutes; never written into the checkout: without --out into a "
        "fresh temporary folder (default: full sizes)",
    )
    add_dir(
        p,
        "--out",
        "output folder (default: the repository's own results/ and figures/, or a fresh folder with --quick)",
        A.output_dir,
    )
    p.add_argument(
        "--only",
        type=_names,
        default=None,
        metavar="NAMES",
        help="comma-separated step names to run, e.g. proofs,fig1_theorem1; the README is then "
        "not updated (default: every step)",
    )
    p.add_argument("--jobs", type=A.positive_int, default=1, help="local worker processes")
    p.add_argument(
        "--scheduler", default=None, help="dask.distributed scheduler address (default: none, run locally)"
    )
    p.add_argument(
        "--force",
        nargs="?",
        const="all",
        default=None,
        metavar="STEP,...",
        help="rerun steps even if their script, imported sources, files read, options and outputs are "
        "unchanged (default: reuse those; --force alone: every step)",
    )

    p = add("analyze", cmd_analyze, "exact quantities of a chain (file or random instance)")
    add_chain_args(p)

    p = add("simulate", cmd_simulate, "Monte Carlo of a chain, side by side with the exact values")
    add_chain_args(p)
    p.add_argument(
        "--runs",
        type=A.positive_int,
        default=2000,
        help=f"Monte Carlo runs per gamma, simulated {SIMULATE_CHUNK:,} at a time",
    )

    from .model_args import add_model_args, add_prompt_args

    p = add("decode", cmd_decode, "run the real decoder next to the theory's along-path prediction")
    add_model_args(
        p, draft=None, draft_help=" (default: draft-small for target; any other target drafts for itself)"
    )
    add_prompt_args(p, "'def ' for the byte-level models, 'The capital of France is' with a tokenizer")
    p.add_argument(
        "--paths", type=A.positive_int, default=16, help="target paths per prompt for the prediction"
    )
    p.add_argument("--gamma", type=A.positive_int, default=4, help="draft tokens per round")
    p.add_argument("--tokens", type=A.positive_int, default=64, help="new tokens")
    p.add_argument(
        "--temperature", type=A.nonneg_float, default=1.0, help="sampling temperature (0 = greedy)"
    )
    p.add_argument("--seed", type=A.nonneg_int, default=0, help="random seed")
    p.add_argument(
        "--device", type=A.device_name, default="cpu", help="torch device: cpu, cuda, cuda:N or mps"
    )
    p.add_argument(
        "--no-bonus", action="store_true", help="no bonus tokens (Yin et al.'s counting; default: bonus)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output (default: text)")
    p.add_argument(
        "--tree",
        default=None,
        metavar="SHAPE",
        help="tree decoding: AxBxC (children per depth), pathN, or sparseN with --medusa (default: none)",
    )
    p.add_argument(
        "--verifier",
        default=None,
        metavar="NAME",
        help="tree verifier: tree_rrs, tree_rrs_wo, tree_topk, traversal, traversal_iid or typical "
        "(default: tree_rrs; tree_topk with --medusa)",
    )
    p.add_argument("--medusa", action="store_true", help="draft with the shipped Medusa heads (default: off)")
    p.add_argument(
        "--forward",
        default="eager",
        choices=A.FORWARD_CHOICES,
        help="the models' forwards: eager (default), static (fixed shapes, no host read), or "
        "torch.compile modes (default, reduce-overhead = CUDA graphs on CUDA, max-autotune; "
        "each shape compiles on first use: seconds to minutes)",
    )
    A.add_limit_args(p)

    p = add("demo", cmd_demo, "step-by-step teaching demo in the terminal")
    p.add_argument("--seed", type=A.nonneg_int, default=None, help="random seed (default: the demo's own)")
    p.add_argument("--gamma", type=A.positive_int, default=3, help="draft tokens per round")
    p.add_argument(
        "--rounds", type=A.positive_int, default=None, help="rounds to play (default: the demo's own)"
    )
    p.add_argument(
        "--auto", action="store_true", help="no key presses, for tests and recordings (default: off)"
    )
    add_dir(p, "--save", "write one figure per step into DIR (default: none)", A.writable_dir)
    p.add_argument(
        "--target",
        default=None,
        metavar="NAME",
        help="a real LLM on English text, e.g. smollm2-135m (the real extra) or hf:PATH "
        "(default: the toy word-level pair)",
    )
    p.add_argument(
        "--draft", default=None, metavar="NAME", help="its draft (default: the target itself, hotter)"
    )
    p.add_argument(
        "--prompt",
        action="append",
        default=None,
        metavar="TEXT",
        help="text to start from (default: 'The cat sat on the')",
    )
    p.add_argument(
        "--chat", action="store_true", help="wrap the prompt in the tokenizer's chat template (default: off)"
    )
    p.add_argument("--temperature", type=A.positive_float, default=1.0, help="the target's temperature")
    p.add_argument(
        "--draft-temperature",
        type=A.positive_float,
        default=None,
        help="the draft's temperature (default: 1.5 when the draft is the target itself, else --temperature)",
    )
    p.add_argument("--device", type=A.device_name, default="cpu", help="torch device")
    p.add_argument(
        "--dtype", default="float32", choices=("float32", "bfloat16"), help="weights and arithmetic"
    )

    p = add("figures", cmd_figures, "regenerate some or all figures")
    add_root(p)
    p.add_argument("names", nargs="*", help="figure names (default: all)")
    p.add_argument(
        "--quick",
        action="store_true",
        help="small sizes, marked QUICK in the image; without --out they go to a fresh "
        "temporary folder (default: full sizes)",
    )
    add_dir(p, "--out", "output folder (default: figures/, or a fresh folder with --quick)", A.output_dir)
    add_dir(
        p, "--results", "folder of the results/*.json the figures read (default: the checkout's results/)"
    )
    p.add_argument("--jobs", type=A.positive_int, default=1, help="figures made at once")

    add_root(add("prove", cmd_prove, "run the symbolic proofs (sympy)"))

    from .tune_cmd import add_tune_args

    add_tune_args(add("tune", cmd_tune, "rank gamma, trees and policies by predicted throughput"))
    return parser


def _quiet_broken_pipe() -> None:
    """Point stdout at /dev/null so that the interpreter's final flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # pragma: no cover - stdout without a file descriptor
        pass


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with A.size_limits_of(args):  # --max-seconds / --max-memory (analyze, simulate, decode)
            code = int(args.func(args) or 0)
        sys.stdout.flush()  # a closed pipe shows up here, not at interpreter exit
        return code
    except BrokenPipeError:
        _quiet_broken_pipe()
        return 0
    except KeyboardInterrupt:
        if args.traceback:
            raise
        sys.stderr.write(f"spectheory {args.command}: interrupted\n")
        return 130
    except MissingExtraError as exc:  # a real model without the real extra: what to install
        if args.traceback:
            raise
        sys.stderr.write(f"spectheory {args.command}: error: {exc}\n")
        return 2
    except (CLIError, ValueError, TypeError, OSError, MemoryError, NotImplementedError) as exc:
        if args.traceback:
            raise
        text = A.cli_message(exc, args.command)  # API argument names -> flags
        if isinstance(exc, MemoryError):
            text = f"out of memory ({text}); use smaller sizes"
        sys.stderr.write(f"spectheory {args.command}: error: {text}\n")
        return 2
    except Exception as exc:  # noqa: BLE001 - a bug: say so in one line, trace on request
        if args.traceback:
            raise
        sys.stderr.write(
            f"spectheory {args.command}: internal error: {type(exc).__name__}: {exc} "
            "(rerun with --traceback and report it)\n"
        )
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

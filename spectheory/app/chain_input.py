"""The chain a ``spectheory analyze`` / ``simulate`` command runs on, and the command's size check.

The chain comes from ``--chain FILE`` (JSON or NPZ) or is a random instance of the random-chain
options (:data:`CHAIN_DEFAULTS`); :func:`check_request` refuses, before anything big is built,
a command estimated above the limits. The commands themselves are in
:mod:`spectheory.app.chain_cmd`.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING

import numpy as np

from . import cli_args as A

if TYPE_CHECKING:
    from .._sizes import Estimate
    from ..chain import DecodingChain

__all__ = ["CLIError", "CHAIN_DEFAULTS", "SIMULATE_CHUNK", "add_chain_args", "load_chain", "check_request"]


class CLIError(Exception):
    """An error to report in one line."""


#: Defaults of the random-chain options (None in the parser, so that a given flag is detectable).
CHAIN_DEFAULTS = {"vocab": 8, "states": None, "seed": 0, "concentration": 1.0, "similarity": 0.0}


#: Monte Carlo runs per simulator call of ``spectheory simulate``: any ``--runs`` is simulated
#: in chunks of at most this many, so memory stays bounded (about 100 MB per chunk); the size
#: check (:func:`check_request`) estimates the memory of one chunk.
SIMULATE_CHUNK = 1_000_000


def add_chain_args(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("chain (a file, or a random instance)")
    src.add_argument(
        "--chain",
        metavar="FILE",
        help="JSON or NPZ file with arrays target, draft [, initial, next_state (int [S, V], "
        "or a stochastic law [S, V, S])] "
        "(then the random-chain options below are ignored; default: a random chain)",
    )
    src.add_argument(
        "--vocab", type=A.positive_int, default=None, help="vocabulary size of a random chain (default 8)"
    )
    src.add_argument("--states", type=A.positive_int, default=None, help="number of states (default: vocab)")
    src.add_argument("--seed", type=A.nonneg_int, default=None, help="random seed of the chain (default 0)")
    src.add_argument(
        "--concentration", type=A.positive_float, default=None, help="Dirichlet concentration (default 1)"
    )
    src.add_argument(
        "--similarity", type=A.finite_float, default=None, help="draft = s*target + (1-s)*noise (default 0)"
    )
    p.add_argument("--horizon", type=A.positive_int, default=32, help="tokens generated, T")
    p.add_argument("--gammas", type=A.gammas, default=[1, 2, 4, 8], help="draft lengths (default 1,2,4,8)")
    p.add_argument("--cost", type=A.nonneg_float, default=0.05, help="cost ratio c = t_draft / t_target")
    p.add_argument(
        "--no-bonus", action="store_true", help="count without bonus tokens (Yin et al.; default: bonus)"
    )
    p.add_argument("--json", action="store_true", help="machine-readable output (default: a table)")
    A.add_limit_args(p)


def _chain_settings(args: argparse.Namespace) -> dict:
    """The chain options in effect (for ``--json``), warning about ignored ones."""
    given = {k: getattr(args, k) for k in CHAIN_DEFAULTS if getattr(args, k) is not None}
    if args.chain:
        if given:
            flags = ", ".join(f"--{k}" for k in given)
            sys.stderr.write(
                f"spectheory {args.command}: note: {flags} ignored (the chain comes from --chain)\n"
            )
        return {"chain_file": args.chain}
    settings = {**CHAIN_DEFAULTS, **given}
    for k, v in settings.items():
        setattr(args, k, v)
    return settings


def _settings(args: argparse.Namespace) -> dict:
    return {
        **_chain_settings(args),
        "horizon": args.horizon,
        "gammas": args.gammas,
        "cost": args.cost,
        "bonus": not args.no_bonus,
    }


def _read_chain_file(path: str) -> dict:
    try:
        if path.endswith(".npz"):
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        with open(path) as fh:
            data = json.load(fh)
    except OSError as exc:
        raise CLIError(f"--chain: cannot read chain file {path!r}: {exc.strerror or exc}") from None
    except (ValueError, KeyError, EOFError) as exc:
        raise CLIError(f"--chain: cannot parse chain file {path!r} ({type(exc).__name__}: {exc})") from None
    if not isinstance(data, dict):
        raise CLIError(f"--chain: chain file {path!r} must hold an object with arrays target and draft")
    return data


def load_chain(args: argparse.Namespace) -> DecodingChain:
    """Build the DecodingChain named by the command-line arguments."""
    from ..chain.decoding_chain import DecodingChain

    if args.chain:
        path = args.chain
        data = _read_chain_file(path)
        missing = {"target", "draft"} - set(data)
        if missing:
            raise CLIError(f"--chain: chain file {path!r} lacks the array(s) {sorted(missing)}")
        arrays = {}
        for name in ("target", "draft", "initial", "next_state"):
            if data.get(name) is None:
                continue
            try:
                integer = name == "next_state" and np.ndim(data[name]) == 2  # a 3-d next_state is a law
                arrays[name] = np.asarray(data[name], dtype=np.int64 if integer else np.float64)
            except (ValueError, TypeError) as exc:
                raise CLIError(
                    f"--chain: chain file {path!r}: array {name!r} is not numeric (or ragged): {exc}"
                ) from None
        try:
            return DecodingChain(
                arrays["target"], arrays["draft"], arrays.get("initial"), arrays.get("next_state")
            )
        except ValueError as exc:
            raise CLIError(f"--chain: chain file {path!r}: {exc}") from None
    _chain_settings(args)
    return DecodingChain.random(
        args.vocab,
        n_states=args.states,
        concentration=args.concentration,
        similarity=args.similarity,
        rng=args.seed,
    )


def _states_flag(args: argparse.Namespace) -> str:
    if args.chain:
        return "--chain"
    return "--vocab" if args.states is None else "--states"


def check_request(args: argparse.Namespace, chain: DecodingChain | None = None, runs: int = 0) -> Estimate:
    """Refuse, before anything big is built, a command estimated above the limits.

    The estimate (:func:`spectheory._sizes.estimate`) adds up the random chain's construction,
    one exact recursion per draft length (plus one for the TV profile, and for ``analyze`` one of
    the i.i.d. chain of Leviathan's formula per draft length) and, for ``simulate``,
    ``runs`` Monte Carlo generations per draft length; memory is the largest part plus the
    chain. The message names the flag of the part that costs most. ``chain`` is the loaded
    chain (``--chain FILE``) or ``None`` (a random chain of ``--vocab`` / ``--states``).
    """
    from .._sizes import Estimate, check_estimate, estimate

    if chain is None:
        S, V = args.states or args.vocab, args.vocab
        dense = args.states is None or args.states == args.vocab
        build = estimate("chain", states=S, vocab=V)
    else:
        S, V, dense = chain.n_states, chain.vocab_size, chain.is_first_order
        build = Estimate(0.0, 0.0, "")
    T = args.horizon
    exact = [
        estimate("path_exact", horizon=T, states=S, vocab=V, gamma=min(g, T), dense=dense)
        for g in args.gammas
    ]
    exact.append(estimate("path_exact", horizon=T, states=S, vocab=V, gamma=1, dense=dense))  # TV profile
    if args.command == "analyze":  # leviathan_gap: the one-state i.i.d. chain per gamma (sparse)
        exact += [
            estimate("path_exact", horizon=T, states=1, vocab=2, gamma=min(g, T), dense=0)
            for g in args.gammas
        ]
    chunk = min(runs, SIMULATE_CHUNK)  # runs are simulated a chunk at a time: memory of one chunk
    mc = (
        [
            Estimate(
                estimate("simulate", runs=runs, horizon=T, gamma=min(g, T)).seconds,
                estimate("simulate", runs=chunk, horizon=T, gamma=min(g, T)).nbytes,
                "",
            )
            for g in args.gammas
        ]
        if runs
        else []
    )
    run_part = Estimate(sum(e.seconds for e in exact), max(e.nbytes for e in exact), "")
    items = [(_states_flag(args), build), ("--horizon" if S <= 4096 else _states_flag(args), run_part)]
    if mc:
        items.append(("--runs", Estimate(sum(e.seconds for e in mc), max(e.nbytes for e in mc), "")))
    parts: dict[str, Estimate] = {}
    for flag, e in items:  # the parts a flag sets, added up
        old = parts.get(flag, Estimate(0.0, 0.0, ""))
        parts[flag] = Estimate(old.seconds + e.seconds, old.nbytes + e.nbytes, "")
    what = f"{args.command} (T={T}, {S} states x {V} tokens, gammas {','.join(map(str, args.gammas))}"
    what += f", {runs} runs per gamma)" if runs else ")"
    total = Estimate(
        sum(e.seconds for _, e in items),
        build.nbytes + max(e.nbytes for _, e in items[1:]),
        what,
    )
    from .._limits import memory_limit

    if total.nbytes > memory_limit():
        name = max(parts, key=lambda k: parts[k].nbytes)
    else:
        name = max(parts, key=lambda k: (parts[k].seconds, parts[k].nbytes))
    return check_estimate(total, name)


def _load_checked(args: argparse.Namespace, runs: int = 0) -> tuple[DecodingChain, Estimate]:
    """The chain, with the whole command's size checked first (:func:`check_request`)."""
    if not args.chain:
        _chain_settings(args)
        est = check_request(args, runs=runs)
        return load_chain(args), est
    chain = load_chain(args)
    return chain, check_request(args, chain, runs=runs)

"""Argument types and checks of the ``spectheory`` command line (no torch, no heavy imports).

Every check runs while the arguments are parsed, before any model or array is touched, and
fails with a one-line message naming the option (``argparse`` turns it into exit status 2).

Examples
--------
>>> positive_int("3")
3
>>> positive_int("0")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: must be an integer >= 1, got '0'
>>> device_name("tpu")
Traceback (most recent call last):
...
argparse.ArgumentTypeError: expected cpu, cuda, cuda:N or mps, got 'tpu'
"""

from __future__ import annotations

import argparse
import math
import os
import re
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

__all__ = [
    "positive_int",
    "nonneg_int",
    "nonneg_float",
    "gammas",
    "comma_items",
    "finite_float",
    "positive_float",
    "max_seconds",
    "max_memory",
    "add_limit_args",
    "size_limits_of",
    "cli_message",
    "FLAGS",
    "device_name",
    "writable_dir",
    "output_dir",
    "check_device_available",
    "shipped_drafts",
]


def _int(text: str, minimum: int) -> int:
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or value < minimum:
        raise argparse.ArgumentTypeError(f"must be an integer >= {minimum}, got {text!r}")
    return value


def positive_int(text: str) -> int:
    """An integer >= 1."""
    return _int(text, 1)


def nonneg_int(text: str) -> int:
    """An integer >= 0 (seeds)."""
    return _int(text, 0)


def _float(text: str, ok: Callable[[float], bool], expected: str) -> float:
    """``float(text)`` when ``ok`` holds for it, else ``ArgumentTypeError("{expected}, got
    {text!r}")``; a text that is no number reads as nan (which no check accepts)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not ok(value):
        raise argparse.ArgumentTypeError(f"{expected}, got {text!r}")
    return value


def nonneg_float(text: str) -> float:
    """A finite float >= 0."""
    return _float(text, lambda v: 0 <= v < math.inf, "must be a finite number >= 0")


def comma_items(text: str) -> list[str]:
    """The items of a comma-separated list, refusing empty ones (``1,,2``, ``2,``, ``,``).

    Examples
    --------
    >>> comma_items("1, 2")
    ['1', '2']
    >>> comma_items("1,,2")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: empty item 2 in the comma-separated list '1,,2'
    """
    items = [x.strip() for x in str(text).split(",")]
    for i, x in enumerate(items):
        if not x:
            raise argparse.ArgumentTypeError(f"empty item {i + 1} in the comma-separated list {text!r}")
    return items


def gammas(text: str) -> list[int]:
    """Comma-separated draft lengths, each >= 1 (no empty items)."""
    items = comma_items(text)
    try:
        values = [int(x) for x in items]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if min(values) < 1:
        raise argparse.ArgumentTypeError(f"gammas must be integers >= 1, got {text!r}")
    return values


def finite_float(text: str) -> float:
    """A finite float (no nan, no inf)."""
    return _float(text, math.isfinite, "must be a finite number")


def positive_float(text: str) -> float:
    """A finite float > 0.

    Examples
    --------
    >>> positive_float("0.5")
    0.5
    >>> positive_float("inf")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: must be a finite number > 0, got 'inf'
    """
    return _float(text, lambda v: 0 < v < math.inf, "must be a finite number > 0")


def max_seconds(text: str) -> float:
    """Seconds > 0, or ``inf`` (no time limit)."""
    return _float(text, lambda v: v > 0, "expected a number of seconds > 0 (or inf)")


def max_memory(text: str) -> float:
    """A size such as ``8G``, ``500M``, ``2e9`` (bytes) or ``inf``."""
    from .._limits import parse_bytes

    try:
        return parse_bytes(text, "--max-memory")
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a size such as 8G, 500M or 2e9 (bytes), got {text!r}"
        ) from None


#: ``spectheory decode --forward`` choices: :data:`spectheory.decoder.compiled.FORWARD_MODES`,
#: spelled out so the command line starts without importing torch (a test keeps them equal).
FORWARD_CHOICES = ("eager", "static", "default", "reduce-overhead", "max-autotune")


def add_limit_args(p: argparse.ArgumentParser) -> None:
    """``--max-seconds`` and ``--max-memory``: the limits above which a request is refused up front."""
    from .._limits import DEFAULT_MAX_SECONDS

    p.add_argument(
        "--max-seconds",
        type=max_seconds,
        default=None,
        metavar="S",
        help="refuse a request estimated to take longer (default: $SPECTHEORY_MAX_SECONDS or "
        f"{DEFAULT_MAX_SECONDS:.0f}; inf: no limit)",
    )
    p.add_argument(
        "--max-memory",
        type=max_memory,
        default=None,
        metavar="SIZE",
        help="refuse a request estimated to need more memory, e.g. 8G (default: "
        "$SPECTHEORY_MAX_MEMORY or half this machine's memory)",
    )


def size_limits_of(args: argparse.Namespace) -> AbstractContextManager:
    """The :func:`spectheory._limits.size_limits` of ``--max-seconds`` / ``--max-memory``."""
    from .._limits import size_limits

    return size_limits(getattr(args, "max_seconds", None), getattr(args, "max_memory", None))


#: API argument names (as library errors name them) -> the command-line flag that sets them.
FLAGS = {
    "max_new_tokens": "--tokens",
    "n_runs": "--runs",
    "vocab_size": "--vocab",
    "n_states": "--states",
    "horizon": "--horizon",
    "gamma": "--gamma",
    "temperature": "--temperature",
    "tree": "--tree",
    "branching": "--tree",
    "verifier": "--verifier",
    "concentration": "--concentration",
    "similarity": "--similarity",
    "seed": "--seed",
    "seeds": "--seed",
    "device": "--device",
}

_PROMPTS = re.compile(r"\bprompts(\[\d+\])?")
_LEAD = re.compile(r"^(" + "|".join(sorted(FLAGS, key=len, reverse=True)) + r"):")
#: Names mapped anywhere in a message: only unmistakable identifiers (not "tree" or "gamma").
_NAMES = re.compile(
    r"(?<![-\w])(" + "|".join(sorted((k for k in FLAGS if "_" in k), key=len, reverse=True)) + r")\b"
)


def cli_message(exc: BaseException, command: str | None = None) -> str:
    """One line for a user error, with the library's argument names turned into flags.

    ``prompts[0]`` is ``--prompt``, ``max_new_tokens`` is ``--tokens`` and so on (:data:`FLAGS`);
    a :class:`~spectheory._sizes.SizeError` says to raise ``--max-seconds`` / ``--max-memory``.

    Examples
    --------
    >>> cli_message(ValueError("prompts[0]: empty prompt"), "decode")
    '--prompt: empty prompt'
    >>> cli_message(ValueError("max_new_tokens: prompt length 3 + max_new_tokens 300 exceeds 256"), "decode")
    '--tokens: prompt length 3 + --tokens 300 exceeds 256'
    """
    from .._sizes import SizeError

    if isinstance(exc, SizeError):
        name = FLAGS.get(exc.name, exc.name)
        return exc.message(
            name, "--max-seconds S / --max-memory SIZE, or SPECTHEORY_MAX_SECONDS / SPECTHEORY_MAX_MEMORY"
        )
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    if command == "decode":
        text = _PROMPTS.sub("--prompt", text)
    if command in ("decode", "analyze", "simulate"):
        text = _LEAD.sub(lambda m: FLAGS[m.group(1)] + ":", text)
        text = _NAMES.sub(lambda m: FLAGS[m.group(1)], text)
    return text


_DEVICE = re.compile(r"^(cpu|mps|cuda(:\d+)?)$")


def device_name(text: str) -> str:
    """A torch device name the decoder supports: ``cpu``, ``cuda``, ``cuda:N`` or ``mps``."""
    if not _DEVICE.match(text):
        raise argparse.ArgumentTypeError(f"expected cpu, cuda, cuda:N or mps, got {text!r}")
    return text


def writable_dir(text: str) -> str:
    """A folder that exists or can be created (created now, so later steps cannot fail on it)."""
    path = Path(text).expanduser()
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot create folder {text!r}: {exc.strerror or exc}") from None
    if not os.access(path, os.W_OK):
        raise argparse.ArgumentTypeError(f"folder {text!r} is not writable")
    return str(path)


def output_dir(text: str) -> str:
    """A folder that exists or could be created, checked without creating anything (the
    command creates it only once every other argument is known to be good).

    Examples
    --------
    >>> output_dir("/tmp/spectheory-not-created-yet/sub")
    '/tmp/spectheory-not-created-yet/sub'
    >>> import os
    >>> os.path.exists("/tmp/spectheory-not-created-yet")
    False
    """
    path = Path(text).expanduser()
    parent = path
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise argparse.ArgumentTypeError(f"cannot create folder {text!r}: {str(parent)!r} is not a folder")
    if not os.access(parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"folder {text!r} is not writable")
    return str(path)


def check_device_available(device: str) -> None:
    """Raise ``ValueError`` naming ``--device`` if this torch build cannot use ``device``."""
    import torch

    kind, _, index = device.partition(":")
    if kind == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"--device {device}: this torch ({torch.__version__}) has no usable CUDA device; "
                "use --device cpu (scripts/setup.sh says how to install a CUDA build)"
            )
        if index and int(index) >= torch.cuda.device_count():
            raise ValueError(f"--device {device}: only {torch.cuda.device_count()} CUDA device(s)")
    elif kind == "mps":
        mps = getattr(torch.backends, "mps", None)
        if mps is None or not mps.is_available():
            raise ValueError(f"--device {device}: MPS is not available here; use --device cpu")


def shipped_drafts() -> list[str]:
    """Names of the shipped draft models, read from the weights folder (without torch), then
    the registered distilled drafts (``spectheory.decoder.registry.DISTILLED_NAMES``)."""
    weights = Path(__file__).resolve().parent.parent / "decoder" / "weights"
    names = ("draft-small", "draft-tiny", "draft-ngram")
    shipped = [n for n in names if (weights / f"{n}.json").exists()] or list(names)
    distilled = Path(__file__).resolve().parent.parent / "objectives" / "weights"
    return shipped + [n for n in ("draft-small-tv",) if (distilled / f"{n}.json").exists()]

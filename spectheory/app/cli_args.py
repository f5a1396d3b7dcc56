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
import os
import re
from pathlib import Path

__all__ = [
    "positive_int",
    "nonneg_int",
    "nonneg_float",
    "gammas",
    "device_name",
    "writable_dir",
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


def nonneg_float(text: str) -> float:
    """A finite float >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"must be a finite number >= 0, got {text!r}")
    return value


def gammas(text: str) -> list[int]:
    """Comma-separated draft lengths, each >= 1."""
    try:
        values = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"gammas must be integers >= 1, got {text!r}")
    return values


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
    """Names of the shipped draft models, read from the weights folder (without torch)."""
    weights = Path(__file__).resolve().parent.parent / "decoder" / "weights"
    names = ("draft-small", "draft-tiny", "draft-ngram")
    return [n for n in names if (weights / f"{n}.json").exists()] or list(names)

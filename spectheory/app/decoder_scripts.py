"""Command-line plumbing shared by the decoder validation scripts: the model options and the
results file with the device it was measured on."""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch

__all__ = ["decoder_script_parser", "describe_device", "write_result"]


def decoder_script_parser(doc: str, device: str = "cpu", threads: int | None = 2) -> argparse.ArgumentParser:
    """:func:`spectheory.app.results.script_parser` plus the decoder scripts' model options:
    ``--target NAME``, ``--drafts a,b`` (default: every shipped draft), ``--device`` and
    ``--threads`` (torch CPU threads, default ``threads`` but at most ``$OMP_NUM_THREADS``;
    omitted when ``threads`` is None)."""
    from .results import script_parser

    ap = script_parser(doc)
    ap.add_argument("--target", default=None, help="target model (default: target)")
    ap.add_argument("--drafts", default=None, help="comma-separated draft models (default: all shipped)")
    ap.add_argument(
        "--device", default=device, help=f"torch device (default: {device or 'cuda if available'})"
    )
    if threads is not None:
        ap.add_argument(
            "--threads",
            type=int,
            default=_env_threads(threads),
            help=f"torch CPU threads (default {threads}, at most $OMP_NUM_THREADS if set)",
        )
    return ap


def _env_threads(default: int) -> int:
    """``default``, lowered to ``$OMP_NUM_THREADS`` where that is a smaller positive int: a step
    of a parallel ``spectheory reproduce`` gets 1 thread (2 threads per job on 2 cores run
    several times slower than 1: the threads wait on each other), and a benchmark that asks
    for 1 thread keeps 1."""
    import os

    value = os.environ.get("OMP_NUM_THREADS", "")
    return min(default, int(value)) if value.isdigit() and int(value) > 0 else default


def describe_device(device: str | torch.device) -> str:
    """``"cuda:0 (NVIDIA ...)"`` or ``"cpu (x86_64, 2 threads)"``: where a result was measured."""
    import platform

    import torch

    dev = str(device)
    if dev.startswith("cuda") and torch.cuda.is_available():
        return f"{dev} ({torch.cuda.get_device_name(0)})"
    return f"{dev} ({platform.processor() or platform.machine()}, {torch.get_num_threads()} threads)"


def write_result(
    out_dir: str | Path | None,
    name: str,
    data: dict,
    headline: Iterable[dict],
    argv: Sequence[str] | None = None,
    device: str | torch.device = "cpu",
) -> Path:
    """Write ``out_dir/name.json`` with ``data``, the device, and the provenance and ``headline``
    rows of :func:`spectheory.app.results.write_results`; return the path.

    ``argv`` is the full command line (default ``sys.argv``; its first entry is the script).
    """
    import sys

    import torch

    from .results import write_results

    argv = sys.argv if argv is None else argv
    return write_results(
        argv[0],
        {"device": describe_device(device), "torch": torch.__version__, **data},
        out_dir,
        list(argv[1:]),
        headline,
        name=name,
    )

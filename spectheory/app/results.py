"""Conventions shared by the experiment scripts in ``simulations/`` and ``benchmarks/``.

Each script takes ``--quick`` (small sizes, for CI) and ``--out DIR`` (default: ``results/``
beside the script's own folder, i.e. the repository's), and writes ``DIR/<script name>.json`` with its data plus the
provenance every result carries: date, machine, command, and a ``headline`` list of
``{"name", "value", "se" (optional), "note" (optional)}`` rows that ``spectheory reproduce``
gathers into ``summary.md``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

__all__ = ["script_parser", "machine_info", "write_results", "headline", "default_results_dir"]


def _repository_of(script: Path) -> Path:
    """The checkout a script belongs to: the parent of its folder (``simulations/x.py``,
    ``benchmarks/x.py``, ``proofs/__main__.py``)."""
    return script.resolve().parent.parent


def default_results_dir(script_file: str | Path) -> Path:
    """``results/`` of the repository the script sits in."""
    return _repository_of(Path(script_file)) / "results"


def script_parser(doc: str) -> argparse.ArgumentParser:
    """An argument parser with the standard ``--quick`` and ``--out`` options."""
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds; used by CI)")
    parser.add_argument("--out", default=None, help="output folder (default: the repository's results/)")
    return parser


def machine_info() -> dict:
    """Where a result was computed."""
    info = {
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    if "torch" in sys.modules:
        torch = sys.modules["torch"]
        info["torch"] = torch.__version__
        if torch.cuda.is_available():
            info["cuda_device"] = torch.cuda.get_device_name(0)
    return info


def headline(name: str, value: object, se: float | None = None, note: str | None = None) -> dict:
    """One row of the summary table."""
    row = {"name": name, "value": value}
    if se is not None:
        row["se"] = se
    if note:
        row["note"] = note
    return row


def _plain(obj):
    """JSON-ready copy: numpy arrays/scalars to Python, non-finite floats to None."""
    if isinstance(obj, dict):
        return {str(k): _plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_plain(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return _plain(obj.tolist())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float) and not np.isfinite(obj):
        return None
    return obj


def write_results(
    script_file: str,
    data: dict,
    out: str | Path | None = None,
    argv: Sequence[str] | None = None,
    headlines: Iterable[dict] = (),
    name: str | None = None,
) -> Path:
    """Write ``<out>/<script stem>.json`` with ``data`` plus date, machine, command and headline.

    Parameters
    ----------
    script_file : str
        ``__file__`` of the calling script (names the output and the command).
    data : dict
        JSON-ready data (numpy arrays and scalars are converted).
    out : path, optional
        Output folder (default: :func:`default_results_dir` of the script).
    argv : list of str, optional
        The script's arguments (default ``sys.argv[1:]``), recorded in ``command``.
    headlines : iterable of dict
        Rows made with :func:`headline`.
    name : str, optional
        Output file stem (default: the script's stem).
    """
    script = Path(script_file).resolve()
    args = list(sys.argv[1:] if argv is None else argv)
    if "--out" in args:  # where the output went is not part of what made it
        i = args.index("--out")
        del args[i : i + 2]
    args = [a for a in args if not a.startswith("--out=")]
    if script.stem == "__main__":
        shown = ["-m", script.parent.name]
    else:
        try:
            shown = [str(script.relative_to(_repository_of(script)))]
        except ValueError:
            shown = [script.name]
    record = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": machine_info(),
        "command": " ".join(["python", *shown, *args]),
        **data,
        "headline": list(headlines),
    }
    folder = Path(out) if out is not None else default_results_dir(script)
    folder.mkdir(parents=True, exist_ok=True)
    stem = script.parent.name if script.stem == "__main__" else script.stem  # python -m package
    path = folder / f"{name or stem}.json"
    path.write_text(json.dumps(_plain(record), indent=1))
    return path

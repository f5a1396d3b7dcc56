"""What every block reads: the results folder, the job's summary, JSON loading and cell formatting."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent


README = ROOT / "README.md"
#: The results folder the blocks read (``--results``; the checkout's results/ by default).
RESULTS = {"dir": ROOT / "results"}


def _results() -> Path:
    return RESULTS["dir"]


def _summary() -> dict | None:
    """The job's summary: in the results folder (a run into the checkout) or beside it
    (``spectheory reproduce --out DIR`` writes DIR/summary.json beside DIR/results/)."""
    return _load(_results() / "summary.json") or _load(_results().parent / "summary.json")


def _load(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _fmt(v, digits: int = 4) -> str:
    if isinstance(v, float):
        return f"{v:.{digits}g}"
    return str(v)


def _cell(v) -> str:
    return _fmt(v).replace("|", "\\|")


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"

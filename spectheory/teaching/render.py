"""Rendering for the teaching demo: aligned text bars for a terminal and one figure per step.

Figures are drawn on :class:`matplotlib.figure.Figure` objects with the Agg canvas directly,
so saving them never touches pyplot's global state or the user's interactive backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import numpy as np
from numpy.typing import ArrayLike

if TYPE_CHECKING:
    from .toy import StepRecord

__all__ = ["bar_char", "bar", "law_table", "quote", "save_step_figure", "save_bonus_figure"]

BAR_WIDTH = 24  # characters for probability 1


def quote(word: str) -> str:
    """A word or token as the demo prints it: in double quotes (``quote("cat") == '"cat"'``)."""
    return f'"{word}"'


def bar_char(out: TextIO | None) -> str:
    """A full block if ``out`` can print it, else ``#``."""
    enc = getattr(out, "encoding", None) or "utf-8"
    try:
        "█▶".encode(enc)
    except (UnicodeEncodeError, LookupError):
        return "#"
    return "█"


def bar(prob: float, char: str = "█", width: int = BAR_WIDTH) -> str:
    """A text bar of ``round(prob * width)`` characters, padded to ``width``.

    >>> bar(0.5, "#", 8)
    '####    '
    """
    n = int(round(float(prob) * width))
    if prob > 0 and n == 0:
        return ".".ljust(width)  # positive but below half a character
    return (char * n).ljust(width)


def law_table(
    words: Sequence[str],
    columns: Mapping[str, Sequence[float] | np.ndarray],
    mark: int | None = None,
    char: str = "█",
    indent: str = "    ",
) -> list[str]:
    """Rows ``word | p bar | q bar ...``: one column per named law, word ``mark`` flagged.

    >>> rows = law_table(["a", "b"], {"target": [0.25, 0.75]}, mark=1, char="#")
    >>> rows[2]
    '    b     >  0.750 ##################'
    """
    arrow = ">" if char == "#" else "▶"
    wlen = max(5, max(len(w) for w in words))
    head = indent + "word".ljust(wlen) + "    " + "".join(f"{name:<{BAR_WIDTH + 7}}" for name in columns)
    lines = [head.rstrip()]
    for i, w in enumerate(words):
        flag = f" {arrow}  " if i == mark else "    "
        cells = "".join(f"{float(law[i]):5.3f} {bar(law[i], char)} " for law in columns.values())
        lines.append((indent + w.ljust(wlen) + flag + cells).rstrip())
    return lines


def _panel(ax, words, law, title, color, mark=None):
    x = np.arange(len(words))
    colors = [color] * len(words)
    if mark is not None:
        colors[mark] = "#D55E00"
    ax.bar(x, law, color=colors, edgecolor="black", linewidth=0.4)
    ax.set_xticks(x)
    ax.set_xticklabels(words, rotation=45, ha="right", fontsize=8)
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=10)
    ax.set_ylabel("probability", fontsize=8)
    ax.grid(axis="y", alpha=0.3)


def _new_figure(ncols: int, width: float = 3.2, height: float = 2.8) -> tuple[Any, Any]:
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, height), constrained_layout=True)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(1, ncols, squeeze=False)[0]


def save_step_figure(path: str | Path, words: Sequence[str], step: StepRecord, headline: str) -> Path:
    """Four bar charts for one verification step: target, draft, min(target, draft) and the
    residual norm(max(target - draft, 0)); the proposed word is highlighted. Writes a PNG."""
    from ..laws.distributions import residual

    fig, axes = _new_figure(4)
    t, d = step.target, step.draft
    res = step.residual if step.residual is not None else residual(t, d)
    _panel(axes[0], words, t, "target p", "#0072B2", step.proposal)
    _panel(axes[1], words, d, "draft q", "#E69F00", step.proposal)
    _panel(
        axes[2],
        words,
        np.minimum(t, d),
        f"min(p, q): sum = {np.minimum(t, d).sum():.3f}",
        "#009E73",
        step.proposal,
    )
    _panel(
        axes[3],
        words,
        res,
        "residual norm(max(p - q, 0))",
        "#CC79A7",
        step.emitted if step.emitted is not None else None,
    )
    fig.suptitle(headline, fontsize=11)
    path = Path(path)
    fig.savefig(path, dpi=120)
    return path


def save_bonus_figure(
    path: str | Path, words: Sequence[str], law: ArrayLike, bonus: int, headline: str
) -> Path:
    """One bar chart: the target law the bonus word is drawn from, the drawn word highlighted."""
    fig, axes = _new_figure(1, width=4.0)
    _panel(axes[0], words, law, "target p (bonus word)", "#0072B2", bonus)
    fig.suptitle(headline, fontsize=10)
    path = Path(path)
    fig.savefig(path, dpi=120)
    return path

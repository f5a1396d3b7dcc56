"""Shared figure style and output for the scripts in ``figures/``.

Importing this module forces matplotlib's non-interactive ``Agg`` backend. Every
figure script does::

    from spectheory.app.plotting import figure, save_figure, PALETTE
    fig, ax = figure()
    ...
    save_figure(fig, "fig_name", data={...}, out_dir=...)

which writes ``fig_name.png``, ``fig_name.pdf`` and ``fig_name.json`` (the numbers the
figure shows) side by side.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import matplotlib
from numpy.typing import ArrayLike  # noqa: E402

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

matplotlib.use("Agg", force=True)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from cycler import cycler  # noqa: E402

from .results import _plain  # noqa: E402

#: Okabe-Ito colour-blind-safe palette.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]


#: Default folder of generated figures (``figures/`` at the repository root).
def _script_folder() -> Path:
    """The folder of the running figure script (``figures/`` of its checkout)."""
    import __main__

    main = getattr(__main__, "__file__", None)
    return Path(main).resolve().parent if main else Path.cwd()


STYLE: dict[str, Any] = {
    "figure.dpi": 150,
    "savefig.dpi": 200,
    "savefig.bbox": "tight",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 7.5,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.prop_cycle": cycler(color=PALETTE),
    "lines.linewidth": 1.5,
    "lines.markersize": 4,
    "pdf.fonttype": 42,
}


def figure(
    ncols: int = 1, nrows: int = 1, width: float = 3.4, height: float = 2.6, **kwargs: Any
) -> tuple[Figure, Any]:
    """A figure at single-column width (3.4 in per panel) in the project style."""
    plt.style.use(STYLE)
    return plt.subplots(
        nrows, ncols, figsize=(width * ncols, height * nrows), constrained_layout=True, **kwargs
    )


#: Set by :func:`figure_args` from ``--quick``: quick figures are stamped as such.
_QUICK = {"on": False}


def save_figure(
    fig: Figure, name: str, data: dict | None = None, out_dir: str | Path | None = None
) -> list[Path]:
    """Write ``name.png``, ``name.pdf`` and (if ``data``) ``name.json`` into ``out_dir``.

    Returns the written paths. The figure is closed afterwards.
    """
    out = Path(out_dir) if out_dir is not None else _script_folder()
    out.mkdir(parents=True, exist_ok=True)
    if _QUICK["on"]:  # a quick (CI-size) figure must not pass for the real one
        fig.text(
            0.99,
            1.0,
            "QUICK RUN (small sizes, not the published figure)",
            ha="right",
            va="bottom",
            fontsize=7,
            color="#D55E00",
            alpha=0.9,
        )  # above the panels: bbox "tight" keeps it
    paths = [out / f"{name}.png", out / f"{name}.pdf"]
    for p in paths:
        fig.savefig(p)
    plt.close(fig)
    if data is not None:
        jp = out / f"{name}.json"
        jp.write_text(json.dumps(_plain(data), indent=1))
        paths.append(jp)
    return paths


def figure_args(doc: str, argv: Sequence[str] | None = None) -> argparse.Namespace:
    """Standard command line of a figure script: ``--quick``, ``--out DIR`` and ``--results DIR``.

    ``--results`` is where the figure reads the ``*.json`` files the simulations wrote
    (:func:`results_dir` when absent).

    Examples
    --------
    >>> args = figure_args("A figure.", ["--out", "/tmp/f", "--results", "/tmp/r"])
    >>> (args.out, args.results, args.quick)
    ('/tmp/f', '/tmp/r', False)
    """
    parser = argparse.ArgumentParser(description=doc.strip().splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (for CI)")
    parser.add_argument(
        "--out", default=None, help="output folder (default: the script's own figures/ folder)"
    )
    parser.add_argument(
        "--results",
        default=None,
        metavar="DIR",
        help="folder of the results/*.json files the figure reads (default: the results/ beside "
        "--out when that exists, else the checkout's results/)",
    )
    args = parser.parse_args(argv)
    if args.out is None:
        args.out = str(_script_folder())
    _QUICK["on"] = bool(args.quick)
    return args


def results_dir(out: str | Path | None = None, results: str | Path | None = None) -> Path:
    """The folder a figure reads its results from.

    ``results`` when given; else the ``results/`` folder beside the figures folder ``out``
    (the layout of ``spectheory reproduce``: ``DIR/results`` beside ``DIR/figures``) when
    that folder exists; else the ``results/`` of the checkout the running figure script
    belongs to, so ``python figures/fig8_decoder.py --out /anywhere`` still finds the
    committed results.

    Examples
    --------
    >>> results_dir("/tmp/anything/figures", results="/tmp/r").as_posix()
    '/tmp/r'
    """
    if results is not None:
        return Path(results).resolve()
    beside = (Path(out) if out is not None else _script_folder()).resolve().parent / "results"
    if beside.is_dir():
        return beside
    return _script_folder().resolve().parent / "results"


def load_results(name: str, out: str | Path | None = None, results: str | Path | None = None) -> dict:
    """Read ``<results>/<name>.json`` written by ``simulations/<name>.py`` (or a benchmark).

    Figures whose data cost minutes to compute (the real decoder's) plot what the main job's
    simulations wrote, instead of computing it a second time. The folder is
    :func:`results_dir` of ``out`` and ``results``.
    """
    path = results_dir(out, results) / f"{name}.json"
    if not path.exists():
        raise FileNotFoundError(
            f"{path} is missing: run the script that writes {name}.json first "
            "(spectheory reproduce runs simulations before figures), or pass --results DIR"
        )
    return json.loads(path.read_text())


def band(ax: Axes, x: ArrayLike, mean: ArrayLike, se: ArrayLike, k: float = 1.96, **kwargs: Any) -> Line2D:
    """Plot ``mean`` with a shaded ``+- k * se`` band (a 95% band by default)."""
    x, mean, se = map(np.asarray, (x, mean, se))
    (line,) = ax.plot(x, mean, **kwargs)
    ax.fill_between(x, mean - k * se, mean + k * se, color=line.get_color(), alpha=0.2, lw=0)
    return line


def load_script(kind: str, name: str) -> Any:
    """Import the script ``<checkout>/<kind>/<name>.py`` (e.g. ``"simulations"``) as a module,
    for a figure that computes its numbers at small sizes when the results file is absent."""
    import importlib.util

    path = Path(__file__).resolve().parents[2] / kind / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"_{name}", path)
    if spec is None or spec.loader is None:
        raise FileNotFoundError(f"{kind}/{name}.py: not found beside the package")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def ratio_axis(
    ax: Axes,
    rows: Sequence[dict],
    style: dict[str, tuple[str, str]],
    name_key: str,
    xlabel: str = "time per token / path optimum",
) -> dict:
    """Rows of markers on one axis of ratios (fig19, fig25 and the like); returns the plotted numbers.

    ``rows`` are dicts with ``chain``, ``c``, ``ratio``, ``ratio_se``, ``scored`` (``"Monte
    Carlo"`` draws an open marker with 1 SE bars, anything else a filled one) and the entry's
    name under ``name_key``; ``style`` maps names to ``(colour, marker)`` in legend order. One
    line of markers per ``(chain, c)`` cell, a vertical line at 1. Returns
    ``{"chain, c=...": {name: [ratio, ratio_se]}}``.
    """
    cells = list(dict.fromkeys((r["chain"], r["c"]) for r in rows))
    out: dict[str, dict[str, list[float]]] = {}
    for y, cell in enumerate(cells):
        key = f"{cell[0]}, c={cell[1]}"
        out[key] = {}
        for name, (color, marker) in style.items():
            r = next((x for x in rows if x[name_key] == name and (x["chain"], x["c"]) == cell), None)
            if r is None:
                continue
            mc = r["scored"] == "Monte Carlo"
            ax.errorbar(
                r["ratio"],
                y,
                xerr=r["ratio_se"] if mc else None,
                color=color,
                marker=marker,
                ms=5,
                ls="none",
                mfc="none" if mc else color,
                label=name if y == 0 else None,
            )
            out[key][name] = [r["ratio"], r["ratio_se"]]
    ax.axvline(1.0, color="k", lw=0.8)
    ax.set_yticks(range(len(cells)), [f"{ch}, c={c:g}" for ch, c in cells])
    ax.invert_yaxis()
    ax.set_xlabel(xlabel)
    return out

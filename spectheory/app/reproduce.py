"""The main job: run every proof, simulation, decoder validation and figure; write a summary.

Each step is a script of the repository run as its own process with ``--out DIR`` (and
``--quick`` in quick mode), ``--jobs N`` at a time (or on a Dask scheduler), by
:func:`spectheory.app.step_runner.run_steps`. A step is reused while its script, the package
sources it imports, the files it reads (shipped weights, a figure's results), its options and
the outputs it wrote are unchanged (:mod:`spectheory.app.step_cache`), so an interrupted job
resumes and a job with nothing changed takes seconds; ``force`` reruns steps anyway.

Every JSON file a step writes may carry a ``"headline"`` list of
``{"name", "value", "se" (optional), "note" (optional)}`` entries; these become the rows of
``DIR/summary.md`` and ``DIR/summary.json``, each with the command that made it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .step_runner import run_steps


@dataclass(frozen=True)
class Step:
    """One script of the main job."""

    name: str
    script: str  # path relative to the repository root
    args: tuple = ()  # extra arguments (both modes)
    quick_args: tuple = ("--quick",)
    full_args: tuple = ()
    kind: str = "simulation"  # proof | simulation | decoder | benchmark | figure
    needs: tuple = field(default=())  # names of steps whose outputs it reads
    module: str | None = None  # run as ``python -m module`` (a package's __main__)

    def argv(self, out: Path, quick: bool) -> list[str]:
        extra = self.quick_args if quick else self.full_args
        run = ["-m", self.module] if self.module else [self.script]
        return [sys.executable, *run, "--out", str(out), *self.args, *extra]

    def sources(self, root: str | Path) -> list[Path]:
        """Files whose content keys the cache: the script, or the whole package of a module."""
        path = Path(root) / self.script
        return sorted(path.parent.rglob("*.py")) if self.module else [path]


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def discover_steps(root: str | Path, quick: bool = False) -> list[Step]:
    """Every proof, simulation and figure script of the repository, in dependency order.

    GPU scripts (``*_gpu.py``) run in full only where CUDA is available (their results are
    committed from a GPU machine and a CPU run must not replace them); on CPU only their
    ``--quick`` mode runs."""
    steps = []
    if (Path(root) / "proofs" / "__main__.py").exists():
        steps.append(Step("proofs", "proofs/__main__.py", kind="proof", module="proofs"))
    skip = {
        "train_models.py",
        "train_medusa.py",
    }  # training is not part of the main job: the weights are shipped
    gpu_ok = quick or _cuda_available()

    def runs_here(path):
        return not (
            path.name in skip or path.name.startswith("_") or (path.stem.endswith("_gpu") and not gpu_ok)
        )

    for path in sorted((Path(root) / "simulations").glob("*.py")):
        if runs_here(path):
            kind = "decoder" if path.name.startswith("decoder") else "simulation"
            steps.append(Step(path.stem, f"simulations/{path.name}", kind=kind))
    for path in sorted((Path(root) / "benchmarks").glob("*.py")):
        if runs_here(path):
            steps.append(Step(path.stem, f"benchmarks/{path.name}", kind="benchmark"))
    for path in sorted((Path(root) / "figures").glob("fig*.py")):
        steps.append(
            Step(
                path.stem,
                f"figures/{path.name}",
                kind="figure",
                needs=tuple(s.name for s in steps if s.kind != "figure"),
            )
        )
    return steps


@dataclass(frozen=True)
class Layout:
    """Where the main job writes: results (JSON), figures, logs, cache, and the summary."""

    results: Path
    figures: Path
    logs: Path
    cache: Path

    @classmethod
    def at(cls, root: str | Path, out: str | Path | None = None) -> Layout:
        """``out=None``: the repository ``root`` itself (results/, figures/); else everything under ``out``."""
        if out is None:
            root = Path(root)
            return cls(
                root / "results", root / "figures", root / "results" / "logs", root / ".cache" / "reproduce"
            )
        out = Path(out).resolve()
        return cls(out / "results", out / "figures", out / "logs", out / ".cache")


def collect_headlines(out: Path) -> list[dict]:
    """Every ``headline`` entry of every JSON file directly in ``out`` (sorted by file)."""
    rows = []
    for path in sorted(out.glob("*.json")):
        if path.name.startswith("summary"):
            continue
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict) and isinstance(data.get("headline"), list):
            for row in data["headline"]:
                rows.append({**row, "source": str(path.relative_to(out)), "command": data.get("command", "")})
    return rows


def _cell(v: object) -> str:
    """A markdown table cell: 4 significant digits for floats, pipes escaped."""
    text = f"{v:.4g}" if isinstance(v, float) else str(v)
    return text.replace("|", "\\|")


def write_summary(out: Path, results: Path, statuses: list[dict], quick: bool) -> dict:
    """Write ``summary.json`` and ``summary.md`` into ``out`` from the JSON files in ``results``.

    ``statuses`` are :func:`run_steps`'s: the step table says of each step whether it ran (and
    why) or was reused, with its own wall time (for a reused step, that of its last run)."""
    out.mkdir(parents=True, exist_ok=True)
    headlines = collect_headlines(results)
    commands = {st["name"]: st["command"] for st in statuses}
    for h in headlines:  # scripts that do not record their command: the one reproduce ran
        h["command"] = h.get("command") or commands.get(Path(h["source"]).stem, "")
    summary = {
        "quick": quick,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "python": sys.version.split()[0],
        "steps": statuses,
        "headline": headlines,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=1))
    lines = [
        f"# spectheory reproduce{' --quick' if quick else ''}",
        "",
        f"Run on {summary['date']} (Python {summary['python']}).",
        "",
        "| quantity | value | SE | source |",
        "|---|---|---|---|",
    ]
    for h in headlines:
        se = h.get("se")
        value = h.get("value")
        lines.append(
            f"| {_cell(h.get('name', '?'))} | {_cell(value)} | {_cell(se) if se is not None else ''} | "
            f"`{h.get('command') or h['source']}` |"
        )
    reused = [s for s in statuses if s.get("reused")]
    lines += [
        "",
        f"{len(statuses) - len(reused)} step(s) ran, {len(reused)} reused (inputs and outputs unchanged "
        "since the run whose time is shown).",
        "",
        "| step | status | seconds | note |",
        "|---|---|---|---|",
    ]
    for s in statuses:
        status = (
            "FAILED (rc " + str(s["rc"]) + ")" if s["rc"] != 0 else "reused" if s.get("reused") else "ran"
        )
        note = f"time of its run on {s.get('measured', '?')}" if s.get("reused") else s.get("reason", "")
        lines.append(f"| {s['name']} | {status} | {s['seconds']} | {_cell(note)} |")
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    return summary


def reproduce(
    root: str | Path,
    out: str | Path | None = None,
    quick: bool = False,
    jobs: int = 1,
    scheduler: str | None = None,
    only: Sequence[str] | None = None,
    force: bool | str | Sequence[str] | None = None,
) -> int:
    """Run the main job of the repository checkout ``root``; return 0 if every step succeeded, else 1.

    ``out=None`` regenerates the repository's own ``results/`` (with ``summary.md`` and
    ``summary.json``) and ``figures/``; ``out=DIR`` writes ``DIR/summary.md``,
    ``DIR/summary.json``, ``DIR/results/`` and ``DIR/figures/`` instead. Steps whose inputs
    and outputs are unchanged are reused; ``force`` (``True``, or step names) reruns them.
    """
    root = Path(root).resolve()
    from .._guards import check_int

    jobs = check_int(jobs, "jobs", 1)  # (0 divided the cores by zero)
    layout = Layout.at(root, out)
    summary_dir = layout.results if out is None else Path(out).resolve()
    steps = discover_steps(root, quick)
    if only:
        steps = [s for s in steps if s.name in set(only)]
    t0 = time.perf_counter()
    statuses = run_steps(steps, layout, quick, root, jobs=jobs, scheduler=scheduler, force=force)
    write_summary(summary_dir, layout.results, statuses, quick)
    failed = [s["name"] for s in statuses if s["rc"] != 0]
    if out is None and only is None and (root / "scripts" / "update_readme.py").exists():
        subprocess.run([sys.executable, str(root / "scripts" / "update_readme.py")], cwd=root, check=False)
    print(
        f"spectheory reproduce: {len(statuses) - len(failed)}/{len(statuses)} steps ok in "
        f"{time.perf_counter() - t0:.0f} s; summary in {summary_dir / 'summary.md'}"
    )
    if failed:
        print(f"failed steps (logs in {layout.logs}): {', '.join(failed)}")
    return 1 if failed else 0


def run_figures(
    root: str | Path,
    names: Sequence[str] | None = None,
    quick: bool = False,
    out: str | Path | None = None,
    jobs: int = 1,
) -> int:
    """Regenerate the named figures (default all) of the checkout ``root`` into ``out``
    (default ``root/figures/``)."""
    from .._guards import check_int

    check_int(jobs, "jobs", 1)
    root = Path(root).resolve()
    steps = [s for s in discover_steps(root) if s.kind == "figure"]
    known = {s.name for s in steps}
    unknown = set(names or ()) - known
    if unknown:
        raise ValueError(f"unknown figure(s) {sorted(unknown)}; known: {sorted(known)}")
    chosen = [s for s in steps if not names or s.name in names]
    target = Path(out).resolve() if out else root / "figures"
    failed = 0
    for i, s in enumerate(chosen, 1):
        print(f"[{i}/{len(chosen)}] {s.name} ...", flush=True)
        proc = subprocess.run(s.argv(target, quick), cwd=root)
        print(f"[{i}/{len(chosen)}] {s.name}: {'ok' if proc.returncode == 0 else 'FAILED'}", flush=True)
        failed += proc.returncode != 0
    return 1 if failed else 0

"""The main job: run every proof, simulation, decoder validation and figure; write a summary.

Each step is a script of the repository run as its own process with ``--out DIR`` (and
``--quick`` in quick mode). Steps run as independent tasks through
:func:`spectheory.app.sweeps.run_sweep` (``--jobs N`` local processes, or a Dask scheduler),
cached on disk by a hash of the script's content and arguments, so an interrupted run
resumes and an unchanged step is not recomputed.

Every JSON file a step writes may carry a ``"headline"`` list of
``{"name", "value", "se" (optional), "note" (optional)}`` entries; these become the rows of
``DIR/summary.md`` and ``DIR/summary.json``, each with the command that made it.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .sweeps import run_sweep

#: The installed package (its sources key the cache); the repository is always passed in.
PACKAGE = Path(__file__).resolve().parent.parent


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


#: Seconds between the "still running" lines of a long step.
HEARTBEAT_S = 30.0


def _last_line(log: str) -> str:
    """The last non-empty line of a log (progress bars rewrite their line with ``\\r``)."""
    try:
        with open(log, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - 4096))
            tail = fh.read().decode("utf-8", "replace")
    except OSError:
        return ""
    parts = [p.strip() for p in tail.replace("\r", "\n").splitlines() if p.strip()]
    return parts[-1][:100] if parts else ""


def _run_step(name: str, argv: list, log: str, digest: str, threads: int = 1, cwd: str = ".") -> dict:
    """Run one step as a subprocess; ``digest`` (script content hash) only keys the cache.

    Prints one line on stderr when the step starts, and every :data:`HEARTBEAT_S` seconds
    while it runs (elapsed time and the last line of its log, e.g. its progress bar), so a
    long step shows that it is alive and what it is doing.
    """
    start = time.perf_counter()
    env = dict(os.environ)
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        env.setdefault(var, str(threads))  # parallel steps must not oversubscribe the cores
    sys.stderr.write(f"reproduce: {name} started (log: {log})\n")
    sys.stderr.flush()
    with open(log, "w") as fh:
        proc = subprocess.Popen(argv, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, env=env)
        next_beat = start + HEARTBEAT_S
        while True:
            try:
                proc.wait(timeout=min(1.0, HEARTBEAT_S))
                break
            except subprocess.TimeoutExpired:
                now = time.perf_counter()
                if now >= next_beat:
                    next_beat = now + HEARTBEAT_S
                    last = _last_line(log)
                    sys.stderr.write(
                        f"reproduce: {name} still running, {now - start:.0f} s{': ' + last if last else ''}\n"
                    )
                    sys.stderr.flush()
    seconds = round(time.perf_counter() - start, 2)
    sys.stderr.write(f"reproduce: {name} {'done' if proc.returncode == 0 else 'FAILED'} in {seconds:.0f} s\n")
    return {
        "name": name,
        "rc": proc.returncode,
        "seconds": seconds,
        "command": " ".join(Path(a).name if i == 0 else a for i, a in enumerate(argv)),
    }


def _library_digest() -> str:
    """Hash of the library's sources: a changed library invalidates every cached step."""
    h = hashlib.sha256()
    for path in sorted(PACKAGE.rglob("*.py")):
        h.update(path.read_bytes())
    return h.hexdigest()


def _digest(step: Step, library: str, root: str | Path) -> str:
    h = hashlib.sha256(library.encode())
    for path in step.sources(root):
        h.update(path.read_bytes())
    h.update(repr((step.args, step.quick_args, step.full_args)).encode())
    return h.hexdigest()[:16]


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


def run_steps(
    steps: Sequence[Step],
    layout: Layout,
    quick: bool,
    root: str | Path,
    jobs: int = 1,
    scheduler: str | None = None,
) -> list[dict]:
    """Run ``steps`` of the repository ``root`` (figures after everything else); return one
    status dict per step."""
    from .sweeps import task_key

    layout.logs.mkdir(parents=True, exist_ok=True)
    cache = layout.cache / ("quick" if quick else "full")
    threads = max(1, (os.cpu_count() or 1) // jobs)
    library = _library_digest()
    statuses = []
    # benchmarks time things, so they run one at a time with the machine to themselves
    groups = (
        (("proof", "simulation", "decoder"), jobs, scheduler, "simulations"),
        (("benchmark",), 1, None, "benchmarks"),
        (("figure",), jobs, scheduler, "figures"),
    )
    for kinds, n_jobs, sched, desc in groups:
        n_threads = threads if n_jobs > 1 or sched else max(1, os.cpu_count() or 1)
        params = [
            {
                "name": s.name,
                "argv": s.argv(layout.figures if s.kind == "figure" else layout.results, quick),
                "log": str(layout.logs / f"{s.name}.log"),
                "digest": _digest(s, library, root),
                "threads": n_threads,
                "cwd": str(root),
            }
            for s in steps
            if s.kind in kinds
        ]
        results = run_sweep(_run_step, params, jobs=n_jobs, scheduler=sched, cache_dir=cache, desc=desc)
        for p, status in zip(params, results):
            if status["rc"] != 0:  # never keep a failed step in the cache
                (cache / f"{task_key(_run_step, p)}.pkl").unlink(missing_ok=True)
        statuses += results
    return statuses


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
    """Write ``summary.json`` and ``summary.md`` into ``out`` from the JSON files in ``results``."""
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
    lines += ["", "| step | status | seconds |", "|---|---|---|"]
    lines += [
        f"| {s['name']} | {'ok' if s['rc'] == 0 else 'FAILED (rc ' + str(s['rc']) + ')'} | {s['seconds']} |"
        for s in statuses
    ]
    (out / "summary.md").write_text("\n".join(lines) + "\n")
    return summary


def reproduce(
    root: str | Path,
    out: str | Path | None = None,
    quick: bool = False,
    jobs: int = 1,
    scheduler: str | None = None,
    only: Sequence[str] | None = None,
) -> int:
    """Run the main job of the repository checkout ``root``; return 0 if every step succeeded, else 1.

    ``out=None`` regenerates the repository's own ``results/`` (with ``summary.md`` and
    ``summary.json``) and ``figures/``; ``out=DIR`` writes ``DIR/summary.md``,
    ``DIR/summary.json``, ``DIR/results/`` and ``DIR/figures/`` instead.
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
    statuses = run_steps(steps, layout, quick, root, jobs=jobs, scheduler=scheduler)
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

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
from pathlib import Path

from .job_safety import (
    GpuResultsGuard,
    check_scheduler,
    fresh_folder,
    is_gpu_script,
    is_real_script,
    real_extra_missing,
)
from .step_runner import _forced, run_steps
from .steps import Layout, Step


def _cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


def discover_steps(root: str | Path, quick: bool = False, gpu: bool | None = None) -> list[Step]:
    """Every proof, simulation and figure script of the repository, in dependency order.

    GPU scripts (``*_gpu.py``) are included when ``gpu`` is true; ``gpu=None`` (the default)
    includes them in quick mode, and in full mode only where CUDA is available (their results
    are committed from a GPU machine and a CPU run must not replace them; see
    :func:`reproduce`, which also checks the device a GPU step actually used)."""
    steps = []
    if (Path(root) / "proofs" / "__main__.py").exists():
        steps.append(Step("proofs", "proofs/__main__.py", kind="proof", module="proofs"))
    skip = {
        "train_models.py",
        "train_medusa.py",
        "train_distilled.py",
        "train_real_draft.py",
    }  # training is not part of the main job: the weights are shipped
    gpu_ok = (quick or _cuda_available()) if gpu is None else gpu

    def runs_here(path: Path) -> bool:
        return not (path.name in skip or path.name.startswith("_") or (is_gpu_script(path) and not gpu_ok))

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


def _select(steps: list[Step], only: Sequence[str] | None) -> list[Step]:
    """The steps named in ``only`` (all when None); unknown names raise ``ValueError``."""
    if only is None:
        return steps
    known = {s.name for s in steps}
    unknown = sorted(set(only) - known)
    if unknown:
        raise ValueError(f"--only: unknown step(s) {unknown}; known: {sorted(known)}")
    return [s for s in steps if s.name in set(only)]


def _update_readme(root: Path) -> int:
    """Run ``scripts/update_readme.py`` of the checkout; its exit status (0 when it has none)."""
    script = root / "scripts" / "update_readme.py"
    if not script.exists():
        return 0
    return subprocess.run([sys.executable, str(script)], cwd=root, check=False).returncode


def reproduce(
    root: str | Path,
    out: str | Path | None = None,
    quick: bool = False,
    jobs: int = 1,
    scheduler: str | None = None,
    only: Sequence[str] | None = None,
    force: bool | str | Sequence[str] | None = None,
) -> int:
    """Run the main job of the repository checkout ``root``; return 0 if every step (and the
    README update) succeeded, else 1.

    Full mode with ``out=None`` regenerates the repository's own ``results/`` (with
    ``summary.md`` and ``summary.json``) and ``figures/``, then ``README.md``'s generated
    blocks (only when every step ran, ``only=None``, and succeeded; a partial run into the
    checkout writes its summary into ``results/logs/``). ``out=DIR`` writes
    ``DIR/summary.md``, ``DIR/summary.json``, ``DIR/results/`` and ``DIR/figures/`` instead.
    Steps whose inputs and outputs are unchanged are reused; ``force`` (``True``, or step
    names) reruns them.
    Quick mode never writes into the checkout: ``out=None`` means a fresh temporary folder
    (printed), and ``out`` pointing at the checkout is refused.

    Real-model steps (``real_*.py``, the pretrained LLM of the ``real`` extra) are skipped with
    one line each when that extra is absent; their committed results stay.
    GPU steps (``*_gpu.py``) never replace committed GPU results with CPU ones: in full mode
    without CUDA they are skipped (one line each says so); in a run into the checkout their
    committed files are put back when the step failed or its JSON names no CUDA device.
    Unknown ``only`` names and a dead ``scheduler`` are refused before any folder is made.
    The last line printed says ``ok`` or ``FAILED`` and why.
    """
    root = Path(root).resolve()
    from .._guards import check_int

    jobs = check_int(jobs, "jobs", 1)  # (0 divided the cores by zero)
    steps = _select(discover_steps(root, quick, gpu=True), only)
    if quick and out is not None and Layout.at(root, out).is_checkout(root):
        raise ValueError(
            f"--out {out}: a quick run never writes into the checkout's committed results/ and "
            "figures/; choose another folder (or leave --out out for a fresh one)"
        )
    _forced(force, steps)  # a bad --force name is refused before any folder is made
    if scheduler is not None:
        check_scheduler(scheduler)
    skipped = []
    if not quick and not _cuda_available():
        skipped = [s.name for s in steps if is_gpu_script(s.script)]
        for name in skipped:
            print(
                f"reproduce: {name} skipped: a GPU step and CUDA is not available here "
                "(a CPU run never replaces its committed GPU results; run it on a GPU machine)",
                flush=True,
            )
        steps = [s for s in steps if s.name not in skipped]
    no_real = [s.name for s in steps if is_real_script(s.script)] if real_extra_missing() else []
    for name in no_real:
        print(f"reproduce: {name} skipped: a real-model step that {real_extra_missing()}", flush=True)
    steps = [s for s in steps if s.name not in no_real]
    if quick and out is None:
        out = fresh_folder("reproduce")
        print(
            f"spectheory reproduce --quick: writing into {out} (pass --out to choose; the "
            "checkout's results/ and figures/ are untouched)",
            flush=True,
        )
    layout = Layout.at(root, out)
    into_checkout = layout.is_checkout(root)
    # a partial run (only=...) must not replace the checkout's committed summary of a full run
    if into_checkout:
        summary_dir = layout.results if only is None else layout.logs
    else:
        summary_dir = layout.results.parent  # the folder ``out``
    guard = GpuResultsGuard(layout.results, [s.name for s in steps if is_gpu_script(s.script)])
    t0 = time.perf_counter()
    statuses = run_steps(
        steps,
        layout,
        quick,
        root,
        jobs=jobs,
        scheduler=scheduler,
        force=force,
        times_dir=summary_dir if into_checkout else layout.results,  # a partial run: results/logs/
    )
    if into_checkout:
        for name in guard.restore({st["name"]: st["rc"] for st in statuses}):
            print(
                f"reproduce: {name} did not run on CUDA (or failed): its committed GPU results in "
                f"{layout.results} are kept",
                flush=True,
            )
    write_summary(summary_dir, layout.results, statuses, quick)
    failed = [s["name"] for s in statuses if s["rc"] != 0]
    problems = (
        [f"{len(failed)} step(s) failed: {', '.join(failed)} (logs in {layout.logs})"] if failed else []
    )
    if into_checkout and only is None:
        if failed:
            print("reproduce: README.md not updated (some steps failed)", flush=True)
        elif (rc := _update_readme(root)) != 0:
            problems.append(f"the README update (scripts/update_readme.py) failed with exit status {rc}")
    tail = f"{len(statuses) - len(failed)}/{len(statuses)} steps ok in {time.perf_counter() - t0:.0f} s"
    tail += f", {len(skipped)} GPU step(s) skipped (no CUDA)" if skipped else ""
    tail += f", {len(no_real)} real-model step(s) skipped (no real extra)" if no_real else ""
    tail += f"; summary in {summary_dir / 'summary.md'}"
    if problems:
        print(f"spectheory reproduce: FAILED: {'; '.join(problems)}; {tail}")
        return 1
    print(f"spectheory reproduce: ok: {tail}")
    return 0

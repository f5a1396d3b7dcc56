"""Running the main job's steps: each as its own process, reused when nothing it used changed.

:func:`run_steps` runs the steps in two groups (proofs, simulations, decoder checks and
benchmarks in parallel, longest first, one thread per worker; figures in parallel, after the
results they read), each step through the launcher that records what it used
(:mod:`spectheory.app.step_cache`). It prints one line per step and a heartbeat of the
long ones (:mod:`spectheory.app.job_progress`), and writes every step's wall time to
``<results>/reproduce_times.json``.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .job_progress import JobProgress, clock
from .step_cache import LAUNCHER, PACKAGE, StepCache

if TYPE_CHECKING:
    from .steps import Layout, Step

__all__ = ["HEARTBEAT_S", "TIMES", "run_steps"]

#: Seconds between the "still running" lines of a long step.
HEARTBEAT_S = 30.0
#: The records of the job's wall time and each step's, in the results folder.
TIMES = "reproduce_times.json"
#: Worker groups, in order: step kinds, and whether they may run in parallel. Benchmarks share
#: the first group's workers (one thread each, so a benchmark has at most one neighbour per
#: other core): every claim a benchmark makes is a ratio of times measured within its own run
#: (interleaved repeats, in-situ fits), which a steady neighbour moves alike, and running them one
#: at a time left a core idle for a third of the job.
GROUPS = ((("proof", "simulation", "decoder", "benchmark"), True), (("figure",), True))


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


class _Running:
    """One step's process, its log and its heartbeat."""

    def __init__(self, task: dict) -> None:
        self.task = task
        env = dict(os.environ)
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            env.setdefault(var, str(task["threads"]))  # parallel steps must not oversubscribe the cores
        self.fh = open(task["log"], "w")  # noqa: SIM115 - closed in finish()
        self.proc = subprocess.Popen(
            task["argv"], cwd=task["cwd"], stdout=self.fh, stderr=subprocess.STDOUT, env=env
        )
        self.start = time.monotonic()
        self.next_beat = self.start + HEARTBEAT_S
        self.shown = ""

    def heartbeat(self, now: float) -> str | None:
        """A line saying the step is alive: its log's last line when it changed, else how long
        the log has been quiet (a stale line is never repeated)."""
        if now < self.next_beat:
            return None
        self.next_beat = now + HEARTBEAT_S
        line = _last_line(self.task["log"])
        try:
            age = time.time() - os.path.getmtime(self.task["log"])
        except OSError:
            age = now - self.start
        head = f"{self.task['name']} still running, {clock(now - self.start)}"
        if not line:
            return f"{head}; nothing in its log yet"
        if line != self.shown:
            self.shown = line
            return f"{head}; its log, {clock(age)} ago: {line}"
        return f"{head}; its log's last line unchanged, last written {clock(age)} ago"

    def finish(self) -> dict:
        self.fh.close()
        return {
            "name": self.task["name"],
            "rc": self.proc.returncode,
            "seconds": round(time.monotonic() - self.start, 2),
            "command": self.task["command"],
        }


def _run_local(
    tasks: Sequence[dict], jobs: int, progress: JobProgress, on_done: Callable[[dict], None]
) -> None:
    """Run ``tasks`` as processes, at most ``jobs`` at a time, in order."""
    waiting, running = list(tasks), list[_Running]()
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                task = waiting.pop(0)
                progress.started(task["name"])
                progress.message(f"{task['name']} started (log: {task['log']})")
                running.append(_Running(task))
            time.sleep(0.1)
            now = time.monotonic()
            for r in list(running):
                if r.proc.poll() is not None:
                    running.remove(r)
                    on_done(r.finish())
                elif (beat := r.heartbeat(now)) is not None:
                    progress.message(beat)
            progress.tick()
    finally:
        for r in running:  # interrupted: stop what still runs
            r.proc.kill()
            r.proc.wait()
            r.fh.close()


def _run_step(name: str, argv: list, log: str, threads: int = 1, cwd: str = ".", command: str = "") -> dict:
    """Run one step as a process (a task a Dask worker can run); return its status dict.

    Prints when it starts, every :data:`HEARTBEAT_S` seconds while it runs, and when it ends."""
    progress = JobProgress([(name, 0, None)], [1], tty=False)
    done: list[dict] = []
    task = {"name": name, "argv": argv, "log": log, "threads": threads, "cwd": cwd, "command": command}
    _run_local([task], 1, progress, done.append)
    progress.done(name, done[0]["rc"] == 0, done[0]["seconds"])
    return done[0]


def _forced(force: bool | str | Sequence[str] | None, steps: Sequence[Step]) -> set[str]:
    if force is None or force is False:
        return set()
    names = {s.name for s in steps}
    if force is True or force == "all":
        return names
    chosen = set(force.split(",") if isinstance(force, str) else force) - {""}
    unknown = chosen - names
    if unknown:
        raise ValueError(f"force: unknown step(s) {sorted(unknown)}; steps of this job: {sorted(names)}")
    return chosen


def _recorded_times(layout: Layout, quick: bool) -> dict[str, float]:
    """Step times of an earlier job in the same mode (e.g. the committed records of a clone)."""
    try:
        data = json.loads((layout.results / TIMES).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict) or data.get("mode") != ("quick" if quick else "full"):
        return {}
    return {k: float(v["seconds"]) for k, v in data.get("steps", {}).items() if isinstance(v, dict)}


def write_times(path: Path, statuses: Sequence[dict], quick: bool, jobs: int, wall: float) -> dict:
    """Write the job's time records (see :func:`run_steps`) to ``path``; return them."""
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        old = {}
    old = old if isinstance(old, dict) and old.get("mode") == ("quick" if quick else "full") else {}
    steps = dict(old.get("steps", {}))
    for s in statuses:
        steps[s["name"]] = {"seconds": s["seconds"], "reused": s["reused"], "measured": s["measured"]}
    job = {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "wall_seconds": round(wall, 1),
        "jobs": jobs,
        "cores": os.cpu_count(),
        "steps_ran": sum(not s["reused"] for s in statuses),
        "steps_reused": sum(s["reused"] for s in statuses),
        "steps_failed": sum(s["rc"] != 0 for s in statuses),
    }
    names = {s["name"] for s in statuses}  # (a job of some steps only, e.g. --only, is not cold)
    every_step = bool(names) and names >= set(old.get("steps", {}))
    every_step = every_step and job["steps_reused"] == 0 and job["steps_failed"] == 0
    cold = job if every_step else old.get("cold")
    record = {
        "mode": "quick" if quick else "full",
        "machine": f"{platform.machine()} {platform.system()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}",
        "last": job,
        "cold": cold,
        "steps": steps,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def run_steps(
    steps: Sequence[Step],
    layout: Layout,
    quick: bool,
    root: str | Path,
    jobs: int = 1,
    scheduler: str | None = None,
    force: bool | str | Sequence[str] | None = None,
    times_dir: Path | None = None,
) -> list[dict]:
    """Run ``steps`` of the checkout ``root``, reusing those whose inputs and outputs are
    unchanged; return one status dict per step, in the order of ``steps``.

    A status has ``name``, ``rc`` (0: ok), ``seconds`` (the step's wall time; for a reused
    step that of the run that made its outputs), ``measured`` (when that run was), ``reused``,
    ``reason`` (why it ran) and ``command``. ``force``: ``True`` or ``"all"`` runs every step,
    a list (or comma-separated string) of names runs those whatever the cache says.

    ``<times_dir>/reproduce_times.json`` (default ``times_dir``: ``layout.results``) records ``mode``, ``machine``, ``last`` (this
    job: ``date``, ``wall_seconds``, ``jobs``, ``cores``, ``steps_ran``, ``steps_reused``,
    ``steps_failed``), ``cold`` (the same for the last job that ran every step, all successfully, and
    no fewer steps than the records know) and
    ``steps`` (per step: ``seconds``, ``reused``, ``measured``).
    """
    t0 = time.monotonic()
    root = Path(root).resolve()
    layout.logs.mkdir(parents=True, exist_ok=True)
    cache = StepCache(layout.cache / ("quick" if quick else "full"), root)
    forced = _forced(force, steps)
    group_of = {s.name: next((g for g, (kinds, _) in enumerate(GROUPS) if s.kind in kinds), 0) for s in steps}
    workers = [max(1, jobs) if parallel else 1 for _, parallel in GROUPS]
    earlier = _recorded_times(layout, quick)
    expected = {s.name: cache.seconds(s.name) or earlier.get(s.name) for s in steps}
    progress = JobProgress([(s.name, group_of[s.name], expected[s.name]) for s in steps], workers)
    statuses: dict[str, dict] = {}
    why: dict[str, str] = {}
    by_name: dict[str, Step] = {}
    before: dict[str, dict] = {}

    def reason(s: Step, running: Sequence[str]) -> str | None:
        if s.name in forced:
            return "forced (--force)"
        upstream = [n for n in running if cache.inputs(s.name) & cache.outputs([n])]
        return cache.stale(s, quick) or (f"reads the output of {upstream[0]}" if upstream else None)

    def finished(status: dict) -> None:
        s = by_name[status["name"]]
        status.update(reused=False, reason=why[s.name], measured=time.strftime("%Y-%m-%d %H:%M:%S"))
        deps = _read_deps(layout, s.name)
        if status["rc"] == 0 and deps is not None:
            cache.record(s, quick, deps, status["seconds"], before[s.name])
        else:  # a failed step (or one whose record is missing) runs again next time
            cache.forget(s.name)
        cache.save()
        statuses[s.name] = status
        progress.done(s.name, status["rc"] == 0, status["seconds"])

    planned: list[str] = []  # a first plan, for the time left; decided group by group below
    for s in steps:
        if reason(s, planned):
            planned.append(s.name)
            progress.will_run(s.name, expected[s.name])
        else:
            progress.will_reuse(s.name)
    for g, (n_workers, (_, parallel)) in enumerate(zip(workers, GROUPS)):
        members = [s for s in steps if group_of[s.name] == g]
        to_run: list[Step] = []
        for s in members:
            r = reason(s, [t.name for t in to_run])
            if r is None:
                entry = cache.steps[s.name]
                cmd = " ".join(Path(a).name if i == 0 else a for i, a in enumerate(_argv(s, layout, quick)))
                statuses[s.name] = {
                    "name": s.name,
                    "rc": 0,
                    "seconds": entry["seconds"],
                    "measured": entry["date"],
                    "reused": True,
                    "reason": "",
                    "command": cmd,
                }
                progress.will_reuse(s.name)
                progress.done(s.name, True, entry["seconds"], reused=True)
            else:
                why[s.name] = r
                to_run.append(s)
                progress.will_run(s.name, expected[s.name])
        by_name.update({s.name: s for s in to_run})
        before.update({s.name: cache.snapshot(s) for s in to_run})
        threads = (
            max(1, (os.cpu_count() or 1) // n_workers) if n_workers > 1 or scheduler else os.cpu_count() or 1
        )

        if parallel:  # longest first (unknown times first of all): the last to finish is short
            to_run.sort(key=lambda s: -(expected[s.name] or float("inf")))
        tasks = [_task(s, layout, quick, root, threads) for s in to_run]
        if scheduler is not None and parallel:
            from .sweeps import run_sweep

            params = [{k: t[k] for k in ("name", "argv", "log", "threads", "cwd", "command")} for t in tasks]
            for t in tasks:
                progress.started(t["name"])
            run_sweep(
                _run_step, params, scheduler=scheduler, progress=False, on_result=lambda i, st: finished(st)
            )
        else:
            _run_local(tasks, n_workers, progress, finished)
    progress.close()
    ordered = [statuses[s.name] for s in steps]
    wall = time.monotonic() - t0
    times = (layout.results if times_dir is None else Path(times_dir)) / TIMES
    write_times(times, ordered, quick, jobs, wall)
    ran = sum(not s["reused"] for s in ordered)
    failed = sum(s["rc"] != 0 for s in ordered)
    sys.stderr.write(
        f"reproduce: {len(ordered)} steps in {clock(wall)}: {ran} ran, {len(ordered) - ran} reused"
        f"{f', {failed} FAILED' if failed else ''}; times in {times}\n"
    )
    return ordered


def _argv(step: Step, layout: Layout, quick: bool) -> list[str]:
    return step.argv(layout.figures if step.kind == "figure" else layout.results, quick)


def _deps_file(layout: Layout, name: str) -> Path:
    return layout.logs / f"{name}.deps.json"


def _read_deps(layout: Layout, name: str) -> dict[str, Any] | None:
    try:
        return json.loads(_deps_file(layout, name).read_text())
    except (OSError, ValueError):
        return None


def _task(step: Step, layout: Layout, quick: bool, root: Path, threads: int) -> dict:
    """A step's process: its command line run through the launcher, which writes the deps file."""
    argv = _argv(step, layout, quick)
    watch = os.pathsep.join(str(p) for p in (root, PACKAGE, layout.results, layout.figures))
    deps = _deps_file(layout, step.name)
    deps.unlink(missing_ok=True)
    return {
        "name": step.name,
        "argv": [argv[0], str(LAUNCHER), "--deps", str(deps), "--watch", watch, "--", *argv[1:]],
        "log": str(layout.logs / f"{step.name}.log"),
        "threads": threads,
        "cwd": str(root),
        "command": " ".join(Path(a).name if i == 0 else a for i, a in enumerate(argv)),
    }

"""``spectheory figures``: regenerate some or all figures of a checkout, reading its results.

Each figure script runs as its own process with ``--out DIR --results DIR`` (and ``--quick``),
the same scripts the main job (:mod:`spectheory.app.reproduce`) runs as its last steps.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING

from .job_safety import fresh_folder

if TYPE_CHECKING:
    from .steps import Step

__all__ = ["run_figures"]


def _run_figure(
    step: Step, target: Path, quick: bool, results: Path, root: Path, capture: bool
) -> tuple[int, str]:
    """Run one figure script; its exit status and (when ``capture``) its output."""
    argv = [*step.argv(target, quick), "--results", str(results)]
    proc = subprocess.run(argv, cwd=root, capture_output=capture, text=True)
    return proc.returncode, (proc.stdout or "") + (proc.stderr or "")


def run_figures(
    root: str | Path,
    names: Sequence[str] | None = None,
    quick: bool = False,
    out: str | Path | None = None,
    jobs: int = 1,
    results: str | Path | None = None,
) -> int:
    """Regenerate the named figures (default all) of the checkout ``root`` into ``out``; return
    0 if all succeeded, else 1.

    ``out`` defaults to ``root/figures/`` in full mode and to a fresh temporary folder
    (printed) with ``quick``. The figures read the results of ``results`` (default: the
    checkout's ``results/``) wherever ``out`` is. Unknown names raise ``ValueError`` before
    any folder is made; ``jobs`` figures are made at once.
    """
    from .._guards import check_int
    from .reproduce import discover_steps

    jobs = check_int(jobs, "jobs", 1)
    root = Path(root).resolve()
    steps = [s for s in discover_steps(root) if s.kind == "figure"]
    known = {s.name for s in steps}
    unknown = set(names or ()) - known
    if unknown:
        raise ValueError(f"unknown figure(s) {sorted(unknown)}; known: {sorted(known)}")
    results = Path(results).resolve() if results is not None else root / "results"
    if not results.is_dir():
        raise ValueError(f"--results {results}: no such folder")
    chosen = [s for s in steps if not names or s.name in names]
    if quick and out is not None and Path(out).resolve() == root / "figures":
        raise ValueError(
            f"--out {out}: quick figures never replace the committed figures/; choose another folder"
        )
    if out is None and quick:  # never overwrite the committed full-size figures with quick ones
        out = fresh_folder("figures")
        print(
            f"spectheory figures --quick: writing into {out} (pass --out to choose; the committed "
            "figures/ are untouched)",
            flush=True,
        )
    target = Path(out).resolve() if out is not None else root / "figures"
    n = len(chosen)

    def report(i: int, s: Step, rc: int, text: str) -> None:
        if rc != 0 and text:
            sys.stdout.write(text[-3000:])  # the end of a failed figure's output (jobs > 1)
        print(f"[{i}/{n}] {s.name}: {'ok' if rc == 0 else 'FAILED'}", flush=True)

    if jobs == 1:
        outcomes = []
        for i, s in enumerate(chosen, 1):
            print(f"[{i}/{n}] {s.name} ...", flush=True)
            outcomes.append(_run_figure(s, target, quick, results, root, capture=False))
            report(i, s, *outcomes[-1])
    else:
        with ThreadPoolExecutor(max_workers=jobs) as pool:  # each figure is its own process
            futures = [pool.submit(_run_figure, s, target, quick, results, root, True) for s in chosen]
            outcomes = [fut.result() for fut in futures]
        for i, (s, outcome) in enumerate(zip(chosen, outcomes), 1):
            report(i, s, *outcome)
    failed = sum(rc != 0 for rc, _ in outcomes)
    if failed:
        print(f"spectheory figures: FAILED: {failed} of {n} figure(s) failed; figures in {target}")
        return 1
    print(f"spectheory figures: ok: {n} figure(s) in {target}")
    return 0

"""Progress of the main job: one count for the whole job, a time left from recorded step times.

The time left is not extrapolated from the steps done so far (the steps differ by a factor
of a thousand: that guess said 4:34 where 15:40 remained). Each step that still has to run
is given the wall time of its last recorded run, running steps what remains of theirs, and
the steps are laid out on the job's workers group by group; if a step to run has no
recorded time, the time left is said to be unknown.

On a terminal the job's line is redrawn in place (and cleared before any other line is
printed); into a file or a pipe every update is a line of its own, one per finished step,
with no carriage returns.

Examples
--------
>>> makespan([3.0, 1.0, 1.0, 1.0], workers=2)
3.0
>>> makespan([2.0, 2.0, 2.0], workers=1)
6.0
>>> clock(75.4)
'1:15'
"""

from __future__ import annotations

import heapq
import shutil
import sys
import time
from collections.abc import Iterable, Sequence
from typing import TextIO

__all__ = ["JobProgress", "clock", "makespan"]


def clock(seconds: float) -> str:
    """``m:ss`` (or ``h:mm:ss``) of a duration."""
    s = int(round(max(seconds, 0.0)))
    h, m = divmod(s // 60, 60)
    return f"{h}:{m:02d}:{s % 60:02d}" if h else f"{m}:{s % 60:02d}"


def makespan(durations: Iterable[float], workers: int, busy: Sequence[float] = ()) -> float:
    """Wall time to run ``durations`` in order on ``workers`` workers, each task going to the
    first free worker; ``busy`` are the times still needed by tasks already running."""
    free = sorted(list(busy)[:workers]) + [0.0] * max(0, workers - len(busy))
    heapq.heapify(free)
    for d in durations:
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free) if free else 0.0


class JobProgress:
    """The main job's progress line and status lines, written to ``stream`` (stderr).

    Parameters
    ----------
    steps : sequence of (name, group, expected seconds or None)
        Every step of the job, in order; ``group`` is its worker group's index.
    workers : sequence of int
        Number of workers of each group.
    stream : file, optional
    tty : bool, optional
        Redraw one line in place (default: whether ``stream`` is a terminal).
    """

    def __init__(
        self,
        steps: Sequence[tuple[str, int, float | None]],
        workers: Sequence[int],
        stream: TextIO | None = None,
        tty: bool | None = None,
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)()) if tty is None else tty
        self.expected = {name: seconds for name, _, seconds in steps}
        self.group = {name: group for name, group, _ in steps}
        self.order = [name for name, _, _ in steps]
        self.workers = list(workers)
        self.start = time.monotonic()
        self.running: dict[str, float] = {}
        self.finished: set[str] = set()
        self.reused: set[str] = set()
        self.failed: set[str] = set()
        self._drawn = 0.0

    def _write(self, text: str) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K" + text + "\n")
            self._draw()
        else:
            self.stream.write(text + "\n")
        self.stream.flush()

    def message(self, text: str) -> None:
        """A status line of its own."""
        self._write(f"reproduce: {text}")

    def will_reuse(self, name: str) -> None:
        """A step that will not run: it counts as done and costs no time."""
        self.reused.add(name)
        self.expected[name] = 0.0

    def will_run(self, name: str, seconds: float | None) -> None:
        """A step that will run, expected to take ``seconds`` (None: unknown)."""
        self.reused.discard(name)
        self.expected[name] = seconds

    def started(self, name: str) -> None:
        self.running[name] = time.monotonic()

    def done(self, name: str, ok: bool, seconds: float, reused: bool = False) -> None:
        """A step finished (or was reused): print one line saying so and what is left."""
        self.running.pop(name, None)
        self.finished.add(name)
        if not ok:
            self.failed.add(name)
        what = "reused" if reused else f"{'done' if ok else 'FAILED'} in {clock(seconds)}"
        self._write(f"reproduce: [{len(self.finished)}/{len(self.order)}] {name} {what}; {self.status()}")

    def left(self) -> float | None:
        """Seconds left by the recorded step times, or ``None`` if a step to run has none."""
        now = time.monotonic()
        total = 0.0
        for group, n in enumerate(self.workers):
            names = [s for s in self.order if self.group[s] == group and s not in self.finished]
            times = {s: self.expected[s] for s in names}
            known = {s: t for s, t in times.items() if t is not None}
            if len(known) < len(times):
                return None
            busy = [max(known[s] - (now - self.running[s]), 1.0) for s in names if s in self.running]
            waiting = [known[s] for s in names if s not in self.running]
            total += makespan(waiting, n, busy)
        return total

    def status(self) -> str:
        """``12:03 elapsed, about 3:20 left (by the last run's step times)`` or ``... time left unknown``."""
        elapsed = clock(time.monotonic() - self.start)
        left = self.left()
        if len(self.finished) == len(self.order):
            return f"{elapsed} elapsed"
        if left is None:
            untimed = sum(1 for s in self.order if s not in self.finished and self.expected[s] is None)
            return f"{elapsed} elapsed, time left unknown ({untimed} step(s) never timed here)"
        return f"{elapsed} elapsed, about {clock(left)} left (by the step times of their last run)"

    def _draw(self) -> None:
        n, total = len(self.finished), len(self.order)
        bar = "#" * (20 * n // max(total, 1))
        running = ", ".join(self.running)
        line = f"reproduce [{bar:<20}] {n}/{total} steps, {self.status()}"
        if running:
            line += f"; running: {running}"
        width = shutil.get_terminal_size((100, 20)).columns - 1  # a wrapped line cannot be redrawn
        self.stream.write("\r\x1b[K" + line[:width])
        self.stream.flush()
        self._drawn = time.monotonic()

    def tick(self) -> None:
        """Redraw the terminal line (at most twice a second); nothing into a file."""
        if self.tty and time.monotonic() - self._drawn >= 0.5:
            self._draw()

    def close(self) -> None:
        if self.tty:
            self.stream.write("\r\x1b[K")
            self.stream.flush()

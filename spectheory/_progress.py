r"""The one progress bar of the package: a tqdm bar on a terminal, sparse full lines elsewhere.

A redrawn bar (carriage returns) written into a file or a pipe runs into the status lines
printed beside it (``spectheory simulate > log``); so when the stream is not a terminal the
bar prints one full line at most every :data:`LINE_INTERVAL_S` seconds (and one when it
ends, if it printed any), e.g. ``simulate token: 40% (4.0M/10.0M tok), 12 s elapsed, about
18 s left``. ``SPECTHEORY_PROGRESS=off`` disables every bar, ``=lines`` forces the lines and
``=bar`` the tqdm bar.

One bar has one total for the whole job: a job made of several calls (the chunks of
``spectheory simulate --runs``, its draft lengths) creates the bar and passes it down as
``progress=bar``; a callee given a bar updates it and leaves it open.

Examples
--------
>>> import io
>>> from spectheory._progress import progress_bar
>>> out = io.StringIO()
>>> with progress_bar(10, "demo", show=True, file=out, interval=0.0) as bar:
...     bar.update(4)
>>> out.getvalue().splitlines()[0]
'demo: 40% (4/10 it), 0.0 s elapsed, about 0.0 s left'
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterable, Iterator
from typing import Any, TextIO, TypeVar

from ._sizes import format_seconds

__all__ = ["progress_bar", "progress_range", "is_bar", "LINE_INTERVAL_S", "DELAY_S"]

#: Seconds between two lines when the stream is not a terminal.
LINE_INTERVAL_S = 30.0
#: With ``show=None`` a bar appears only once its job has lasted this long.
DELAY_S = 3.0


def is_bar(obj: object) -> bool:
    """Whether ``obj`` is an open bar passed down as ``progress=`` (it has ``update``)."""
    return hasattr(obj, "update") and not isinstance(obj, (bool, int, float, type(None)))


def _count(x: float, scale: bool) -> str:
    if not scale or x < 1000:
        return str(int(x)) if float(x).is_integer() else f"{x:.4g}"
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if x >= div:
            return f"{x / div:.1f}{suffix}"
    return str(x)  # pragma: no cover


_B = TypeVar("_B", bound="_Bar")


class _Bar:
    """What the bars here share: ``with`` returns the bar and closes it; ``close`` does nothing
    unless the bar owns what it writes."""

    def close(self) -> None:
        pass

    def __enter__(self: _B) -> _B:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Lines(_Bar):
    """A bar for streams that are not terminals: sparse full lines (see the module)."""

    def __init__(
        self, total: float, desc: str, unit: str, scale: bool, file: TextIO, delay: float, interval: float
    ) -> None:
        self.total, self.desc, self.unit, self.scale, self.file = total, desc, unit, scale, file
        self.n = 0.0
        self.t0 = time.monotonic()
        self.next_at = self.t0 + max(delay, interval / 3)  # a first line once there is an ETA
        self.interval = interval
        self.printed = False
        self.closed = False

    def _line(self, final: bool) -> None:
        elapsed = time.monotonic() - self.t0
        frac = self.n / self.total if self.total else 1.0
        left = elapsed * (1 - frac) / frac if 0 < frac < 1 else 0.0
        tail = "done" if final else f"about {format_seconds(left)} left"
        self.file.write(
            f"{self.desc}: {100 * frac:.0f}% ({_count(self.n, self.scale)}/{_count(self.total, self.scale)} "
            f"{self.unit}), {format_seconds(elapsed)} elapsed, {tail}\n"
        )
        self.file.flush()
        self.printed = True

    def update(self, n: float = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now >= self.next_at and self.n < self.total:
            self._line(False)
            self.next_at = now + self.interval

    def close(self) -> None:
        if not self.closed and self.printed:
            self._line(True)
        self.closed = True


class _Off(_Bar):
    """A disabled bar."""

    n: float = 0

    def update(self, n: float = 1) -> None:
        self.n += n


class _Shared(_Bar):
    """A bar passed down by the caller: updated here, closed by its owner."""

    def __init__(self, bar: Any) -> None:
        self.bar = bar

    def update(self, n: float = 1) -> None:
        self.bar.update(n)


def progress_bar(
    total: float,
    desc: str,
    *,
    show: Any = None,
    unit: str = "it",
    unit_scale: bool = False,
    file: TextIO | None = None,
    interval: float = LINE_INTERVAL_S,
) -> Any:
    """A bar over ``total`` units: ``update(n)``, ``close()``, usable as a context manager.

    Parameters
    ----------
    total : float
    desc : str
    show : bool, None or a bar
        True: shown now; False: none; None: shown once the job has lasted :data:`DELAY_S`;
        an open bar (from the caller): that bar, updated but not closed here.
    unit, unit_scale : as in tqdm (``unit_scale``: ``1.2M``-style counts)
    file : stream, default ``sys.stderr``
    interval : float
        Seconds between lines when ``file`` is not a terminal.
    """
    if is_bar(show):
        return _Shared(show)
    mode = os.environ.get("SPECTHEORY_PROGRESS", "").strip().lower()
    if show is False or mode == "off":
        return _Off()
    file = sys.stderr if file is None else file
    delay = 0.0 if show is True else DELAY_S
    try:
        tty = file.isatty()
    except (AttributeError, ValueError):
        tty = False
    if mode == "lines" or (mode != "bar" and not tty):
        return _Lines(total, desc, unit, unit_scale, file, delay, interval)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, unit_scale=unit_scale, delay=delay, leave=False, file=file)


def progress_range(
    n: int, desc: str, *, show: Any = None, reverse: bool = False, unit: str = "it"
) -> Iterator[int]:
    """``range(n)`` (``reverse``: ``n - 1, ..., 0``) advancing a :func:`progress_bar`."""
    order: Iterable[int] = range(n - 1, -1, -1) if reverse else range(n)
    with progress_bar(n, desc, show=show, unit=unit) as bar:
        for i in order:
            yield i
            bar.update(1)

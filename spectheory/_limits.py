r"""The limits in force on a requested computation's estimated time and memory.

:func:`~spectheory._sizes.check_size` refuses a computation whose estimate is above them:

- memory (:func:`memory_limit`): ``SPECTHEORY_MAX_MEMORY`` (bytes, or ``8G``, ``500M``; the older
  name ``SPECTHEORY_MAX_BYTES`` is read too), else half the memory of this machine (or of its
  container's limit);
- time (:func:`time_limit`): ``SPECTHEORY_MAX_SECONDS`` (``inf``: no limit), else
  :data:`DEFAULT_MAX_SECONDS`;
- both for a block of code: :func:`size_limits` (the command line's ``--max-memory`` and
  ``--max-seconds``), which take precedence over the environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["size_limits", "memory_limit", "time_limit", "parse_bytes", "DEFAULT_MAX_SECONDS"]

#: Estimated seconds above which a computation is refused (``SPECTHEORY_MAX_SECONDS`` overrides).
DEFAULT_MAX_SECONDS = 300.0

_OVERRIDE: dict[str, float] = {}
_UNITS = {"": 1, "b": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_bytes(text: str | float, name: str = "max_memory") -> float:
    """Bytes from ``"8G"``, ``"500M"``, ``"1.5GiB"``, ``"2e9"`` or a number (``inf``: no limit).

    Examples
    --------
    >>> parse_bytes("1.5G") == 1.5 * 2**30, parse_bytes(1024)
    (True, 1024.0)
    """
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        value = float(text)
    else:
        m = re.fullmatch(r"\s*([0-9.eE+-]+|inf)\s*([kKmMgGtT]?)(i?[bB])?\s*", str(text))
        if m is None:
            raise ValueError(f"{name}: expected a size such as 8G, 500M or 2e9 bytes, got {text!r}")
        try:
            value = float(m.group(1)) * _UNITS[m.group(2).lower()]
        except ValueError:
            raise ValueError(f"{name}: expected a size such as 8G, 500M or 2e9 bytes, got {text!r}") from None
    if not value > 0:
        raise ValueError(f"{name}: must be > 0, got {text!r}")
    return value


def _seconds(text: str | float, name: str) -> float:
    try:
        value = float(text)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number of seconds (or inf), got {text!r}") from None
    if not value > 0:
        raise ValueError(f"{name}: must be > 0 seconds, got {text!r}")
    return value


def _machine_memory() -> int:
    total = 16 << 30
    try:
        total = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - non-POSIX
        pass
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as fh:
                text = fh.read().strip()
        except OSError:
            continue
        if text.isdigit() and 0 < int(text) < total:  # a container limit below the machine's
            total = int(text)
    return total


def memory_limit() -> float:
    """Bytes a computation may take: :func:`size_limits`, ``SPECTHEORY_MAX_MEMORY``
    (or ``SPECTHEORY_MAX_BYTES``), else half this machine's (or container's) memory."""
    if "memory" in _OVERRIDE:
        return _OVERRIDE["memory"]
    for var in ("SPECTHEORY_MAX_MEMORY", "SPECTHEORY_MAX_BYTES"):
        env = os.environ.get(var)
        if env:
            return parse_bytes(env, var)
    return float(_machine_memory() // 2)


def time_limit() -> float:
    """Estimated seconds a computation may take: :func:`size_limits`,
    ``SPECTHEORY_MAX_SECONDS``, else :data:`DEFAULT_MAX_SECONDS`."""
    if "seconds" in _OVERRIDE:
        return _OVERRIDE["seconds"]
    env = os.environ.get("SPECTHEORY_MAX_SECONDS")
    return _seconds(env, "SPECTHEORY_MAX_SECONDS") if env else DEFAULT_MAX_SECONDS


@contextmanager
def size_limits(
    max_seconds: float | str | None = None, max_memory: float | str | None = None
) -> Iterator[None]:
    """Within the block, refuse computations estimated above ``max_seconds`` or ``max_memory``.

    ``None`` keeps the limit in force; ``float("inf")`` (or ``"inf"``) lifts it. ``max_memory``
    takes bytes or a size such as ``"32G"``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory._limits import size_limits, time_limit
    >>> with size_limits(max_seconds=3600):
    ...     time_limit()
    3600.0
    """
    saved = dict(_OVERRIDE)
    try:
        if max_seconds is not None:
            _OVERRIDE["seconds"] = _seconds(max_seconds, "max_seconds")
        if max_memory is not None:
            _OVERRIDE["memory"] = parse_bytes(max_memory, "max_memory")
        yield
    finally:
        _OVERRIDE.clear()
        _OVERRIDE.update(saved)

r"""Sizes refused up front: one estimate of time and memory per requested computation.

Every entry point where a user can ask for a big computation (chain constructors, the exact
engines behind ``chain.protocol``, Monte Carlo, tree decoding, the decoder) calls
:func:`check_size` with the sizes it was given *before* allocating anything. It estimates the
wall time and the memory of the computation (:func:`estimate`, formulas below, calibrated on
one core of a 2020s laptop; a loaded machine is slower) and raises :class:`SizeError` -- a
``ValueError`` naming the argument that sets the size, with the estimate, the limit and how to
raise it -- when either is above its limit (:mod:`spectheory._limits`: ``SPECTHEORY_MAX_MEMORY``,
``SPECTHEORY_MAX_SECONDS``, or :func:`~spectheory._limits.size_limits` for a block of code, as the
command line's ``--max-memory`` and ``--max-seconds`` do). A computation estimated above
:data:`PROGRESS_SECONDS` shows a progress bar (:mod:`spectheory._progress`).

Formulas (``T`` horizon, ``S`` states, ``V`` vocabulary, ``G`` draft length, ``N`` tree
nodes, ``R`` Monte Carlo runs, ``B`` batch, ``L`` context length), bytes and seconds:

==================  ===================================================  ==============================================
computation         memory                                                time
==================  ===================================================  ==============================================
``"chain"``         ``64 T' S V`` (kernels and temporaries, ``T'`` = 1   ``1.5e-7 T' S V``
                    or the horizon of a per-position chain)
``"path_exact"``    ``8 T (4 S + 4)`` + operators (``24 S^2`` dense,     ``T (4e-5 [+ 1e-4 sparse] + G w)``, ``w = 1e-9 S^2``
                    ``48 S V`` sparse, ``48 nnz`` sparse kernels)          dense, ``2e-8 S V`` sparse, ``2e-9 nnz`` kernels
``"round_exact"``   ``8 (2 T S + 3 (G + 1) S^2)``                         ``T (5e-5 + 2e-9 (G + 1) S^2) + 1e-9 G^2 S^3``
``"tree_exact"``    ``8 (3 T S + 2 N S)`` + operators                     ``T N (2e-5 + w)``
``"simulate"``      ``8 R (G + 6)`` (the per-run results)                 ``1.6e-7 R T (1 + G / 8)`` + ``3e-4`` per round
``"decode"``        ``B L (16 + 32 V)`` (tokens, the laws)                 ``1e-8 B L V``
``"tree"``          ``200 N`` (a :class:`~spectheory.trees.DraftTree`)     ``3e-6 N``
``"tree_decode"``   ``B N (N + L)`` (the attention mask) ``+ 32 B N V``   ``2e-9 B N (N + L) + 1e-3`` per round
==================  ===================================================  ==============================================

Examples
--------
>>> from spectheory._limits import size_limits
>>> from spectheory._sizes import estimate, check_size
>>> est = estimate("path_exact", horizon=10**7, states=4, vocab=4, gamma=4)
>>> est.seconds > 300, est.nbytes > 10**9
(True, True)
>>> with size_limits(max_seconds=60, max_memory="16G"):
...     check_size("path_exact", "horizon", horizon=10**7, states=4, vocab=4, gamma=4)
Traceback (most recent call last):
...
spectheory._sizes.SizeError: horizon: the exact recursion (T=10000000, S=4, gamma=4) would take about 6.7 min and 1.5 GiB (limit 1 min, 16.0 GiB); use a smaller horizon, or raise the limits (size_limits(max_seconds=..., max_memory=...), SPECTHEORY_MAX_SECONDS / SPECTHEORY_MAX_MEMORY, or --max-seconds / --max-memory on the command line)
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ._limits import memory_limit, time_limit

__all__ = [
    "positive_branches",
    "Estimate",
    "SizeError",
    "estimate",
    "check_size",
    "check_estimate",
    "format_bytes",
    "format_seconds",
    "PROGRESS_SECONDS",
]

#: A computation estimated to take longer than this shows a progress bar by default.
PROGRESS_SECONDS = 5.0


def positive_branches(
    weights: Any, count: int, limit: int, too_many: Callable[[], str]
) -> tuple[Any, Any, int]:
    """One level of an exact enumeration: the ``(row, column)`` indices of ``weights``' positive
    entries, and the running count of enumerated branches, refused past ``limit``.

    The exact engines that enumerate paths (recursive rejection without replacement, a drafted
    path tree) grow level by level; each keeps only the branches of positive weight and stops
    with a :class:`ValueError` (message ``too_many()``) as soon as the enumeration would exceed
    its size limit, before allocating the next level.

    Examples
    --------
    >>> import numpy as np
    >>> rows, cols, n = positive_branches(np.array([[0.5, 0.0], [0.2, 0.3]]), 1, 10, lambda: "too many")
    >>> rows.tolist(), cols.tolist(), n
    ([0, 1, 1], [0, 0, 1], 4)
    >>> positive_branches(np.ones((2, 2)), 8, 10, lambda: "too many")
    Traceback (most recent call last):
    ...
    ValueError: too many
    """
    import numpy as np

    rows, cols = np.nonzero(weights > 0)
    count += rows.size
    if count > limit:
        raise ValueError(too_many())
    return rows, cols, count


#: Largest number of enumerated candidate paths for exact values of recursive rejection
#: without replacement.
MAX_PATHS = 2_000_000


@dataclass(frozen=True)
class Estimate:
    """Estimated wall time (``seconds``) and peak memory (``nbytes``) of one computation."""

    seconds: float
    nbytes: float
    what: str

    def __str__(self) -> str:
        return f"about {format_seconds(self.seconds)} and {format_bytes(self.nbytes)}"


class SizeError(ValueError):
    """A computation refused up front: ``name`` sets its size, ``estimate`` says why.

    ``limit_seconds`` and ``limit_bytes`` are the limits in force; the command line turns
    ``name`` into its flag and the advice into ``--max-seconds`` / ``--max-memory``.
    """

    def __init__(self, name: str, est: Estimate, limit_seconds: float, limit_bytes: float) -> None:
        self.name, self.estimate = name, est
        self.limit_seconds, self.limit_bytes = limit_seconds, limit_bytes
        super().__init__(self.message())

    def message(self, name: str | None = None, advice: str | None = None) -> str:
        """The one-line message, with ``name`` and the advice on raising the limits replaced."""
        name = self.name if name is None else name
        if advice is None:
            advice = (
                "size_limits(max_seconds=..., max_memory=...), SPECTHEORY_MAX_SECONDS / "
                "SPECTHEORY_MAX_MEMORY, or --max-seconds / --max-memory on the command line"
            )
        return (
            f"{name}: {self.estimate.what} would take {self.estimate} "
            f"(limit {format_seconds(self.limit_seconds)}, {format_bytes(self.limit_bytes)}); "
            f"use a smaller {name}, or raise the limits ({advice})"
        )


# ---------------------------------------------------------------- formatting
def format_bytes(n: float) -> str:
    """``1.5 GiB``-style size."""
    if math.isinf(n):
        return "no memory limit"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(n) < 1024 or unit == "PiB":
            return f"{n:.1f} {unit}" if unit != "B" else f"{int(n)} B"
        n /= 1024.0
    return f"{n:.1f} PiB"  # pragma: no cover


def format_seconds(s: float) -> str:
    """``40 s``, ``6.7 min``, ``3.2 h``, ``12 days``-style duration."""
    if math.isinf(s):
        return "no time limit"
    if s < 60:
        return f"{s:.1f} s" if s < 10 else f"{s:.0f} s"
    if s < 3600:
        return f"{s / 60:.2g} min" if s < 600 else f"{s / 60:.0f} min"
    if s < 86400 * 2:
        return f"{s / 3600:.2g} h"
    return f"{s / 86400:.3g} days"


# ---------------------------------------------------------------- estimates
def _op_cost(S: float, V: float, dense: bool, nnz: float | None = None) -> tuple[float, float]:
    """Seconds of one vector-operator product and bytes of the three operators (``nnz``: a
    sparse kernel's stored entries, :class:`~spectheory.chain.SparseDecodingChain`)."""
    if nnz is not None:
        return 2e-9 * nnz, 48.0 * nnz
    if dense:
        return 1e-9 * S * S, 24.0 * S * S
    return 2e-8 * S * V, 48.0 * S * V


def estimate(computation: str, **sizes: float) -> Estimate:
    """Estimated time and memory of ``computation`` with the given sizes (see the module).

    Parameters
    ----------
    computation : {"chain", "path_exact", "round_exact", "tree_exact", "simulate", "decode", "tree", "tree_decode"}
    **sizes
        ``horizon``, ``states``, ``vocab``, ``gamma``, ``nodes``, ``runs``, ``batch``,
        ``context`` as the computation needs them (missing ones count as 1); ``dense``
        (0/1: first-order chains have dense operators, default ``states == vocab``); ``nnz``
        (sparse kernels: the stored entries of an operator, which then set its cost).

    Examples
    --------
    >>> from spectheory._sizes import estimate
    >>> round(estimate("chain", states=10**6, vocab=8).nbytes / 2**30, 2)
    0.48
    """
    g = {k: float(v) for k, v in sizes.items()}
    T, S, V = g.get("horizon", 1.0), g.get("states", 1.0), g.get("vocab", 1.0)
    G, N = g.get("gamma", 1.0), g.get("nodes", 1.0)
    dense = bool(g.get("dense", S == V))
    if computation == "chain":
        lead = g.get("positions", 1.0)
        return Estimate(
            1.5e-7 * lead * S * V, 64.0 * lead * S * V, f"a chain with {_n(S)} states x {_n(V)} tokens"
        )
    if computation == "path_exact":
        w, ops = _op_cost(S, V, dense, g.get("nnz"))
        return Estimate(
            T * (4e-5 + (0.0 if dense else 1e-4) + G * w),
            8.0 * T * (4 * S + 4) + ops,
            f"the exact recursion (T={_n(T)}, S={_n(S)}, gamma={_n(G)})",
        )
    if computation == "round_exact":
        return Estimate(
            T * (5e-5 + 2e-9 * (G + 1) * S * S) + 1e-9 * G * G * S**3,
            8.0 * (2 * T * S + 3 * (G + 1) * S * S),
            f"the exact round recursion (T={_n(T)}, S={_n(S)}, gamma={_n(G)})",
        )
    if computation == "tree_exact":
        w, ops = _op_cost(S, V, dense, g.get("nnz"))
        return Estimate(
            T * N * (2e-5 + w),
            8.0 * (3 * T * S + 2 * N * S) + ops,
            f"the exact tree recursion (T={_n(T)}, S={_n(S)}, {_n(N)} nodes)",
        )
    if computation == "simulate":
        R = g.get("runs", 1.0)
        chunks = math.ceil(R / 2e5)  # runs are played in chunks, each round a few numpy calls
        return Estimate(
            1.6e-7 * R * T * (1 + G / 8) + 3e-4 * 0.6 * T * chunks,
            8.0 * R * (G + g.get("stored", 6.0)),
            f"Monte Carlo of {_n(R)} runs x {_n(T)} tokens",
        )
    if computation == "decode":
        B, L = g.get("batch", 1.0), g.get("context", 1.0)
        return Estimate(
            1e-8 * B * L * V, B * L * (16 + 32 * V), f"decoding {_n(B)} sequences x {_n(L)} tokens"
        )
    if computation == "tree":
        return Estimate(3e-6 * N, 200.0 * N, f"a draft tree of {_n(N)} nodes")
    if computation == "tree_decode":
        B, L = g.get("batch", 1.0), g.get("context", 1.0)
        rounds = max(1.0, g.get("tokens", 1.0))
        return Estimate(
            rounds * (2e-9 * B * N * (N + L) + 1e-3),
            B * N * (N + L) + 32.0 * B * N * V,
            f"tree decoding with {_n(N)} nodes x {_n(L)} context",
        )
    raise ValueError(f"computation: unknown computation {computation!r}")


def _n(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def check_size(
    computation: str,
    name: str,
    *,
    max_seconds: float | None = None,
    max_memory: float | None = None,
    **sizes: float,
) -> Estimate:
    """:func:`estimate` the computation and raise :class:`SizeError` if it is above a limit.

    ``name`` is the argument that sets the size (named in the message). ``max_seconds`` and
    ``max_memory`` default to :func:`time_limit` and :func:`memory_limit`. Returns the
    estimate (callers show a progress bar when ``estimate.seconds > PROGRESS_SECONDS``).

    Examples
    --------
    >>> from spectheory._sizes import check_size
    >>> check_size("chain", "n_states", states=100, vocab=8).nbytes
    51200.0
    >>> check_size("chain", "n_states", states=10**9, vocab=8, max_seconds=600, max_memory=2**30)
    Traceback (most recent call last):
    ...
    spectheory._sizes.SizeError: n_states: a chain with 1000000000 states x 8 tokens would take about 20 min and 476.8 GiB (limit 10 min, 1.0 GiB); use a smaller n_states, or raise the limits (size_limits(max_seconds=..., max_memory=...), SPECTHEORY_MAX_SECONDS / SPECTHEORY_MAX_MEMORY, or --max-seconds / --max-memory on the command line)
    """
    return check_estimate(
        estimate(computation, **sizes), name, max_seconds=max_seconds, max_memory=max_memory
    )


def check_estimate(
    est: Estimate, name: str, *, max_seconds: float | None = None, max_memory: float | None = None
) -> Estimate:
    """Raise :class:`SizeError` naming ``name`` if ``est`` is above a limit; else return it
    (for a job of several computations, e.g. ``Estimate(t1 + t2, max(m1, m2), what)``)."""
    secs = time_limit() if max_seconds is None else float(max_seconds)
    mem = memory_limit() if max_memory is None else float(max_memory)
    if est.seconds > secs or est.nbytes > mem:
        raise SizeError(name, est, secs, mem)
    return est

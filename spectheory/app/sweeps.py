"""Parameter sweeps as independent tasks: local processes or a Dask cluster, cached on disk.

A sweep is a function ``fn(**params) -> result`` and a list of parameter dicts. Each task
gets everything it needs (including its seed) in its parameters, so results are identical
whether tasks run serially, in local processes (``jobs=N``) or on a Dask cluster
(``scheduler="tcp://..."``). Results are cached on disk under a hash of the function's
qualified name and its parameters, so an interrupted sweep resumes where it stopped.

Examples
--------
>>> from spectheory.app.sweeps import grid, run_sweep
>>> params = grid(alpha=[0.5, 0.9], gamma=[1, 2])
>>> len(params)
4
>>> import spectheory.laws.closed_form as cf
>>> [round(float(r), 3) for r in run_sweep(cf.iid_tokens_per_call, params, progress=False)]
[1.5, 1.75, 1.9, 2.71]
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import pickle
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any

from .._guards import check_int
from .._progress import progress_bar

__all__ = ["grid", "task_key", "run_sweep"]


def grid(**axes: Iterable) -> list[dict]:
    """Cartesian product of named parameter lists, as a list of dicts (last axis fastest)."""
    names = list(axes)
    return [dict(zip(names, values)) for values in itertools.product(*(list(axes[n]) for n in names))]


def _qualname(fn: Callable) -> str:
    return f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', repr(fn))}"


def task_key(fn: Callable, params: dict) -> str:
    """Stable hash of a task: the function's qualified name and its JSON-encoded parameters."""
    blob = json.dumps({"fn": _qualname(fn), "params": params}, sort_keys=True, default=repr)
    return hashlib.sha256(blob.encode()).hexdigest()[:24]


def _call(fn, params):
    return fn(**params)


def _load(path: Path) -> Any:
    with open(path, "rb") as fh:
        return pickle.load(fh)


def _store(path: Path, value: Any) -> None:
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    with open(tmp, "wb") as fh:
        pickle.dump(value, fh)
    os.replace(tmp, path)  # atomic: an interrupted write never leaves a corrupt cache entry


def run_sweep(
    fn: Callable,
    params: Sequence[dict],
    *,
    jobs: int = 1,
    scheduler: str | None = None,
    cache_dir: str | Path | None = None,
    progress: bool = True,
    desc: str | None = None,
    on_result: Callable[[int, Any], None] | None = None,
) -> list:
    """Run ``fn(**p)`` for every ``p`` in ``params``; return results in the order of ``params``.

    Parameters
    ----------
    fn : callable
        A module-level function (it must be picklable for ``jobs > 1`` or Dask).
    params : sequence of dict
    jobs : int
        Local worker processes (1 = run in this process).
    scheduler : str, optional
        Address of a ``dask.distributed`` scheduler; overrides ``jobs``.
    cache_dir : path, optional
        Folder of cached results (one pickle per task, named by :func:`task_key`).
    progress : bool
        Show a progress bar.
    desc : str, optional
        The bar's label (default: the function's name).
    on_result : callable, optional
        Called as ``on_result(i, result)`` as soon as task ``i`` is done (in the order tasks
        finish; cached tasks are not reported).
    """
    jobs = check_int(jobs, "jobs", 1)
    params = [dict(p) for p in params]
    results: list = [None] * len(params)
    cache = Path(cache_dir) if cache_dir is not None else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    todo = []
    for i, p in enumerate(params):
        path = cache / f"{task_key(fn, p)}.pkl" if cache is not None else None
        if path is not None and path.exists():
            results[i] = _load(path)
        else:
            todo.append((i, p, path))
    bar = progress_bar(len(params), desc or fn.__name__, show=bool(progress))  # lines when not a tty
    bar.update(len(params) - len(todo))

    def done(i, path, value):
        results[i] = value
        if path is not None:
            _store(path, value)
        bar.update(1)
        if on_result is not None:
            on_result(i, value)

    try:
        if scheduler is not None:
            from distributed import Client
            from distributed import as_completed as dask_completed

            with Client(scheduler) as client:
                futures = {client.submit(_call, fn, p, pure=False): (i, path) for i, p, path in todo}
                for fut in dask_completed(futures):
                    i, path = futures[fut]
                    done(i, path, fut.result())
        elif jobs > 1 and len(todo) > 1:
            with ProcessPoolExecutor(max_workers=jobs) as pool:
                futures = {pool.submit(_call, fn, p): (i, path) for i, p, path in todo}
                for fut in as_completed(futures):
                    i, path = futures[fut]
                    done(i, path, fut.result())
        else:
            for i, p, path in todo:
                done(i, path, fn(**p))
    finally:
        bar.close()
    return results

"""Sweeps: identical results serially, in local processes and on a Dask LocalCluster; disk cache."""

import pytest

from spectheory.app.sweeps import grid, run_sweep, task_key
from spectheory.app.tasks import chain_task

PARAMS = grid(seed=[0, 1], gamma=[1, 3], vocab_size=[4], horizon=[6], n_runs=[200])


def test_grid_order_and_key_stability():
    g = grid(a=[1, 2], b=["x", "y"])
    assert g == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "x"}, {"a": 2, "b": "y"}]
    assert task_key(chain_task, g[0]) == task_key(chain_task, dict(reversed(list(g[0].items()))))
    assert task_key(chain_task, g[0]) != task_key(chain_task, g[1])


def test_serial_equals_processes_and_cache_resumes(tmp_path):
    serial = run_sweep(chain_task, PARAMS, progress=False)
    parallel = run_sweep(chain_task, PARAMS, jobs=2, cache_dir=tmp_path, progress=False)
    assert serial == parallel
    assert len(list(tmp_path.glob("*.pkl"))) == len(PARAMS)
    # a cached sweep does not call the function again
    calls = []

    def spy(**p):
        calls.append(p)
        return chain_task(**p)

    spy.__module__, spy.__qualname__ = chain_task.__module__, chain_task.__qualname__
    again = run_sweep(spy, PARAMS, cache_dir=tmp_path, progress=False)
    assert again == serial and calls == []


def test_dask_local_cluster_gives_identical_results():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as cluster:
        on_dask = run_sweep(chain_task, PARAMS, scheduler=cluster.scheduler_address, progress=False)
    assert on_dask == run_sweep(chain_task, PARAMS, progress=False)


def test_bad_jobs():
    with pytest.raises(ValueError, match="jobs"):
        run_sweep(chain_task, PARAMS, jobs=0)

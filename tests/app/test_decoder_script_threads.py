"""The decoder scripts' ``--threads`` default is at most ``$OMP_NUM_THREADS`` (a parallel
``spectheory reproduce`` step sets it to 1; forcing 2 threads per step oversubscribes the cores),
and a script asking for 1 thread (a benchmark) keeps 1."""

import pytest

from spectheory.app.decoder_scripts import decoder_script_parser


@pytest.mark.parametrize(("env", "expected"), [("1", 1), ("3", 2), (None, 2), ("", 2), ("two", 2), ("0", 2)])
def test_threads_default_follows_omp_num_threads(monkeypatch, env, expected):
    if env is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", env)
    assert decoder_script_parser("doc").parse_args([]).threads == expected
    assert decoder_script_parser("doc").parse_args(["--threads", "4"]).threads == 4


def test_one_thread_scripts_keep_one(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "2")  # the benchmarks' group of reproduce
    assert decoder_script_parser("doc", threads=1).parse_args([]).threads == 1


def test_threads_option_absent_when_not_asked():
    assert not hasattr(decoder_script_parser("doc", threads=None).parse_args([]), "threads")

"""The pricing helpers of ``benchmarks/real_speed.py`` (the cost model of the speed benchmark):
their docstring examples, and the monotone table against a brute-force least-squares fit."""

from __future__ import annotations

import doctest
import importlib.util
import itertools
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("torch")

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "real_speed.py"


@pytest.fixture(scope="module")
def real_speed():
    spec = importlib.util.spec_from_file_location("real_speed_script", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docstring_examples(real_speed):
    result = doctest.testmod(real_speed, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted >= 2 and result.failed == 0


@pytest.mark.parametrize("seed", range(20))
def test_monotone_table_is_the_least_squares_nondecreasing_fit(real_speed, seed):
    """Brute force: the best nondecreasing fit is constant on blocks of consecutive widths, each
    block at its mean; try every split of 6 widths into blocks and keep the feasible best."""
    rng = np.random.default_rng(seed)
    widths = [1, 2, 3, 4, 6, 11]
    values = rng.uniform(0.05, 0.2, size=len(widths))
    got = real_speed.monotone_table(dict(zip(widths, values)))
    assert list(got) == widths
    fit = np.array([got[w] for w in widths])
    assert np.all(np.diff(fit) >= -1e-12)
    best = np.inf
    for cuts in itertools.product([0, 1], repeat=len(widths) - 1):
        edges = [0, *[i + 1 for i, c in enumerate(cuts) if c], len(widths)]
        cand = np.concatenate([np.full(b - a, values[a:b].mean()) for a, b in zip(edges, edges[1:])])
        if np.all(np.diff(cand) >= -1e-12):
            best = min(best, float(((cand - values) ** 2).sum()))
    assert float(((fit - values) ** 2).sum()) == pytest.approx(best, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize(
    "argv", [["--sets", "poems"], ["--sets", ""], ["--temperatures", "-1"], ["--temperatures", "warm"]]
)
def test_focus_options_refuse_bad_values(real_speed, argv, capsys):
    with pytest.raises(SystemExit) as exc:
        real_speed.main(argv)
    assert exc.value.code == 2 and argv[0] in capsys.readouterr().err

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


@pytest.mark.parametrize("seed", range(10))
def test_per_draft_token_seconds_is_the_nonnegative_least_squares_slope(real_speed, seed):
    """Against scipy's NNLS on a one-column design (through the origin)."""
    from scipy.optimize import nnls

    rng = np.random.default_rng(seed)
    drafted = rng.integers(0, 200, size=8).astype(float)
    shortfall = rng.normal(0.001 * (seed - 3), 0.05, size=8) * drafted / 100
    want = nnls(drafted[:, None], shortfall)[0][0]
    assert real_speed.per_draft_token_seconds(list(shortfall), list(drafted)) == pytest.approx(
        want, abs=1e-15
    )


def test_held_out_draft_term_never_reads_its_own_set(real_speed):
    sets = {"a": ([0.3, 0.1], [20, 10]), "b": ([0.5], [30]), "c": ([0.2, 0.4], [15, 25])}
    base = real_speed.held_out_draft_term(sets)
    for key in sets:  # a set's own runs may be anything: its coefficient does not move
        changed = dict(sets, **{key: ([9.0, -3.0], [1, 2])})
        assert real_speed.held_out_draft_term(changed)[key] == base[key]


def test_add_draft_term_recovers_a_per_token_cost(real_speed):
    """Runs whose decoding time is the rounds-only prediction plus 2 ms a drafted token: the
    held-out term finds 2 ms from the other sets and every ratio becomes 1; the rounds-only
    ratios stay beside it, below 1."""
    data: dict = {"results": {}}
    expected = {}
    for i, key in enumerate(["copy/T=0", "open/T=0", "copy/T=1"]):
        decode_ar, cached_ar = [1.0, 1.1], [0.9, 1.0]  # 0.1 s over 10 rounds: 10 ms a round
        calls, tokens = [4 + i, 5 + i], [40.0 + 7 * i, 30.0 + 3 * i]
        priced = [0.5, 0.6]
        base = [p + 0.01 * n for p, n in zip(priced, calls)]  # scale 1: the probe reads the table
        decode = [b + 0.002 * t for b, t in zip(base, tokens)]
        expected[key] = (base, decode)
        data["results"][key] = {
            "tokens_per_call": {"ar": 1.0},
            "target_calls": {"ar": 10.0},
            "cost_model": {"predicted_over_measured": {"x": 0.0}},
            "per_repeat": {
                "logged_cached_seconds": {"ar": cached_ar, "x": priced},
                "table_priced_seconds": {"ar": cached_ar, "x": priced},
                "decode_seconds": {"ar": decode_ar, "x": decode},
                "target_calls": {"ar": [10, 10], "x": calls},
                "speed_probe": {"x": [1.0, 1.0]},
                "draft_tokens": {"x": tokens},
            },
        }
    real_speed.add_draft_term(data)
    for key, res in data["results"].items():
        cm = res["cost_model"]
        assert cm["per_draft_token_seconds"]["x"] == pytest.approx(0.002)
        assert cm["predicted_over_measured"]["x"] == pytest.approx(1.0)
        want = np.median([b / d for b, d in zip(*expected[key])])
        assert cm["predicted_over_measured_rounds_only"]["x"] == pytest.approx(want) and want < 0.95

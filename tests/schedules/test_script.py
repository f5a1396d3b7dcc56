"""simulations/verification_schedules.py and fig33 at quick size: the kit's verdicts as the
theory says, no lossless schedule above the best non-anticipating one, Appendix A's and the
shortcut's laws in Fractions, the exact throughput against Monte Carlo, the figure drawn."""

import importlib.util
import json
from fractions import Fraction
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("sched")
    _load("simulations/verification_schedules.py", "_vs").main(["--quick", "--out", str(out)])
    return out, json.loads((out / "verification_schedules.json").read_text())


def test_kit_verdicts_and_ratios(quick):
    _, data = quick
    kit = data["kit"]
    assert all(v["passed"] == v["expected"] for v in kit.values())
    assert {k for k, v in kit.items() if not v["passed"]} == {
        "global argmax (live survival)",
        "retrospective argmax",
        "drop last if q < 1/2",
    }
    for B, table in data["ratio"].items():
        for label, r in table.items():
            if kit[label]["passed"]:  # sequential admission schedules: never above the best
                assert r["max"] <= 1 + 1e-12, (B, label)
    chain = data["chain_batch"]
    assert max(v for k, v in chain["ratio"].items() if kit[k]["passed"]) <= 1 + 1e-12
    assert chain["throughput"]["retrospective argmax"] > chain["best_throughput"]  # bias buys rate


def test_appendix_a_and_the_shortcut_in_fractions(quick):
    _, data = quick
    app = data["appendix_a"]
    for label, law in app["first_token_law"].items():
        expected = ["17/20", "3/20"] if label == "retrospective argmax" else ["7/10", "3/10"]
        assert law == expected, label
    assert app["live_survival_argmax_token_dependent_row"] == ["17/20", "3/20"]
    assert Fraction(app["drop_by_own_probability"]["p_y2_0_given_y1_0"]) == Fraction(21, 25)
    assert Fraction(app["best_throughput"]) == Fraction(549, 500)
    assert Fraction(app["throughput"]["retrospective argmax"]) == Fraction(171, 145)


def test_calibration_and_monte_carlo(quick):
    _, data = quick
    cal = data["calibration"]
    assert cal["conf"]["ece"] == 0 and cal["conf"]["ece10"] == 0
    assert cal["conf"]["survival_ece"] > 0  # chained calibrated confidences are not a calibrated survival
    assert all(0 <= v["auroc"] <= 1 and 0 <= v["survival_auroc"] <= 1 for v in cal.values())
    for label, m in data["monte_carlo_check"].items():
        assert abs(m["mc"] - m["exact"]) < 5 * m["se"], label


def test_figure(quick, tmp_path):
    pytest.importorskip("matplotlib")
    out, data = quick
    _load("figures/fig33_verification_schedules.py", "_fig33").main(
        ["--quick", "--out", str(tmp_path), "--results", str(out)]
    )
    saved = json.loads((tmp_path / "fig33_verification_schedules.json").read_text())
    assert set(saved["curves"]) == set(data["kit"])

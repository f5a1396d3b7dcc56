"""simulations/draft_objectives.py and its figure at quick size: every row at most the
reference, the reference one of the rows, and the figure drawn from the results."""

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")
ROOT = Path(__file__).resolve().parents[2]


def _load(path, name):
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_script_and_figure(tmp_path):
    _load("simulations/draft_objectives.py", "_do").main(["--quick", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "draft_objectives.json").read_text())
    refs = [r for r in data["rows"] if r["objective"] == "reference"]
    assert refs and all(abs(r["ratio_to_reference"] - 1.0) < 1e-12 for r in refs)
    assert all(r["ratio_to_reference"] <= 1.0 + 1e-12 for r in data["rows"])
    assert {w["best_divergence"] for w in data["winners"]} <= {"forward_kl", "reverse_kl", "jsd", "tv"}
    _load("figures/fig26_draft_objectives.py", "_fig26").main(
        ["--quick", "--out", str(tmp_path / "fig"), "--results", str(tmp_path)]
    )
    saved = json.loads((tmp_path / "fig" / "fig26_draft_objectives.json").read_text())
    assert set(saved["panels"]) == {f"gamma={g}" for g in data["gammas"]}

"""simulations/decoder_controllers.py at quick size: the controllers, the oracle and the
dynamic trees on the shipped models; the decoder's measured values against the predictions
(5 SE) and its dynamic-tree rounds recovered row by row by the replay."""

import importlib.util
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[2]


def test_quick_rows_and_checks(tmp_path):
    spec = importlib.util.spec_from_file_location("_dc", ROOT / "simulations" / "decoder_controllers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["--quick", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "decoder_controllers.json").read_text())
    names = {r["name"] for r in data["rows"]}
    assert {"hindsight oracle", "EAGLE-2 tree", "HedgeSpec (NormalHedge)"} <= names
    trees = [r for r in data["rows"] if r.get("kind") == "dynamic tree"]
    assert trees and all(r["scored"] == "exact given paths" and r["time"] > 0 for r in trees)
    kinds = {ch["controller"] for ch in data["checks"]}
    assert {"EAGLE-2 tree", "HedgeSpec (NormalHedge)"} <= kinds
    assert max(abs(ch["z"]) for ch in data["checks"]) < 5
    assert all(ch["replayed_calls_equal"] == 1.0 for ch in data["checks"] if "replayed_calls_equal" in ch)
    # as many paths and decoded sequences as asked: per prompt, for every prompt (repeat_prompts
    # takes the total; reading it as a count per prompt gave the full mode 8 paths, not 96)
    n_prompts, per_prompt, meas_per_prompt = mod.SIZES["quick"]
    assert n_prompts > 1 and data["n_prompts"] == n_prompts
    assert data["n_paths"] == n_prompts * per_prompt
    assert data["n_measured"] == n_prompts * meas_per_prompt
    assert mod.SIZES["full"] == (12, 8, 4)  # 96 paths, 48 decoded sequences

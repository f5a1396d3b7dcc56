"""simulations/dynamic_trees.py at quick size: every rule on the one axis, the exact order
(oracle < path optimum <= state optimum; the per-state optimal tree below every other top-k
tree), Monte Carlo of the dynamic-tree engine within 5 SE, and the long-run rows."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_table(tmp_path):
    spec = importlib.util.spec_from_file_location("_dt", ROOT / "simulations" / "dynamic_trees.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["--quick", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "dynamic_trees.json").read_text())
    cells = {(r["chain"], r["c"]) for r in data["rows"]}
    assert len(cells) == 4
    for cell in cells:
        rows = {r["name"]: r for r in data["rows"] if (r["chain"], r["c"]) == cell}
        assert rows["hindsight oracle"]["ratio"] < 1.0 == rows["optimum (path)"]["ratio"]
        assert rows["optimum (state)"]["ratio"] >= 1.0 - 1e-12
        best = rows["optimal tree (per state)"]["ratio"]
        for name, r in rows.items():
            if r["kind"] in ("dynamic tree", "static tree"):
                assert best <= r["ratio"] + 1e-12, name
    assert max(abs(z) for z in data["z"]) < 5
    # the long run: the per-state optimum (Dinkelbach over shapes) below every tree rule and
    # attained by the finite-horizon programme far from the horizon; the engine's Monte Carlo
    for cell in cells:
        lr = {r["name"]: r for r in data["long_run"] if (r["chain"], r["c"]) == cell}
        best = lr["optimal tree (per state, long run)"]["time_per_token"]
        assert abs(lr["optimal tree (per state, DP at 128 to go)"]["time_per_token"] - best) < 1e-12
        for name in ("optimal static tree (long run)", "EAGLE-2 tree", "OPT-Tree", "static tree [2, 1, 1]"):
            assert best <= lr[name]["time_per_token"] + 1e-12, name
        assert (
            lr["hindsight oracle (single path)"]["ratio"] < 1.0 == lr["optimum (state, single path)"]["ratio"]
        )
    assert max(abs(ch["z"]) for ch in data["long_run_checks"]) < 5

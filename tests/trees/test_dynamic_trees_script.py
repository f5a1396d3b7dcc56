"""simulations/dynamic_trees.py at quick size: every rule on the one axis, the exact order
(oracle < path optimum <= state optimum; the per-state optimal tree below every other top-k
tree), and Monte Carlo of the dynamic-tree engine within 5 SE."""

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

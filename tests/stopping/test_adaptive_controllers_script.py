"""simulations/adaptive_controllers.py at quick size: the table's exact order (oracle < path
optimum <= state optimum <= exact controllers), the split, and Monte Carlo of the exact adaptive K."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_quick_table(tmp_path):
    spec = importlib.util.spec_from_file_location("_ac", ROOT / "simulations" / "adaptive_controllers.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod.main(["--quick", "--out", str(tmp_path)])
    data = json.loads((tmp_path / "adaptive_controllers.json").read_text())
    cells = {(r["chain"], r["c"]) for r in data["rows"]}
    assert len(cells) == 4
    for cell in cells:
        rows = {r["controller"]: r for r in data["rows"] if (r["chain"], r["c"]) == cell}
        assert rows["hindsight oracle"]["ratio"] < 1.0 == rows["optimum (path)"]["ratio"]
        assert rows["optimum (state)"]["ratio"] >= 1.0
        for r in rows.values():
            if r["controller"] == "hindsight oracle":
                continue
            if r["scored"] == "exact":
                assert r["reducible"] >= -1e-12 and r["irreducible"] >= 0
                assert (
                    abs(
                        r["time_per_token"]
                        - rows["hindsight oracle"]["time_per_token"]
                        - r["reducible"]
                        - r["irreducible"]
                    )
                    < 1e-12
                )
            else:
                assert r["ratio"] > 1.0 - 5 * r["ratio_se"]
    assert max(abs(z) for z in data["z"]) < 5
    for r in data["long_run"]:  # round-start rules never beat the state optimum; path rules may
        if r["controller"] in ("Leviathan gamma", "vLLM adaptive K (1-round window)"):
            assert r["ratio"] >= 1.0 - 1e-12
        if r["controller"] == "hindsight oracle":
            assert r["ratio"] < 1.0

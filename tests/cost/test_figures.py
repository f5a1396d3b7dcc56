"""The cost figures' data: simulations/cost_batch.py in quick mode, then fig16 and fig17 read it."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np

import spectheory as st
from spectheory.cost import named_cost, optimal_gamma

ROOT = Path(__file__).resolve().parents[2]


def _run(script, out):
    done = subprocess.run(
        [sys.executable, str(ROOT / script), "--quick", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_cost_figures_plot_the_simulation(tmp_path):
    _run("simulations/cost_batch.py", tmp_path / "results")
    res = json.loads((tmp_path / "results" / "cost_batch.json").read_text())
    chain = st.DecodingChain.random(8, concentration=0.5, similarity=0.6, rng=0)
    opt = optimal_gamma(
        chain, named_cost(res["heatmap_model"]), res["batches"], gammas=res["gammas"], horizon=res["T"]
    )
    heat = res["models"][res["heatmap_model"]]
    np.testing.assert_allclose(heat["speedup"], opt.speedup, rtol=1e-12)
    assert heat["crossover"] == opt.crossover and abs(res["monte_carlo"]["z"]) < 5
    assert any("crossover" in h["name"] for h in res["headline"])
    for fig in ("fig16_cost_heatmap", "fig17_optimal_gamma"):
        _run(f"figures/{fig}.py", tmp_path / "figures")
        data = json.loads((tmp_path / "figures" / f"{fig}.json").read_text())
        assert (tmp_path / "figures" / f"{fig}.png").exists() and data["headline"]
    fig16 = json.loads((tmp_path / "figures" / "fig16_cost_heatmap.json").read_text())
    assert fig16["crossover"] == opt.crossover
    fig17 = json.loads((tmp_path / "figures" / "fig17_optimal_gamma.json").read_text())
    for name, m in fig17["models"].items():
        assert m["best_gamma"] == res["models"][name]["best_gamma"]

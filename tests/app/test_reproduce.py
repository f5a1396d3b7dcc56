"""The main job: steps run as cached tasks, failures are reported and not cached, summary rows."""

import json
import textwrap
from pathlib import Path

import pytest

from spectheory.app.reproduce import Layout, Step, discover_steps, reproduce, run_steps, write_summary

ROOT = Path(__file__).resolve().parents[2]  # the checkout these tests run in

SCRIPT = textwrap.dedent("""
    import json, sys, pathlib
    args = sys.argv[1:]
    out = pathlib.Path(args[args.index("--out") + 1]); out.mkdir(parents=True, exist_ok=True)
    counter = pathlib.Path(__file__).with_suffix(".count")
    counter.write_text(str(int(counter.read_text()) + 1 if counter.exists() else 1))
    (out / "toy.json").write_text(json.dumps({"command": "python toy.py", "headline": [
        {"name": "answer | with a pipe", "value": 0.5, "se": 0.01}]}))
    sys.exit(int("--fail" in args))
""")


def _toy(tmp_path, fail=False):
    script = tmp_path / "toy.py"
    script.write_text(SCRIPT)
    return Step("toy", str(script), args=("--fail",) if fail else ())


def test_steps_are_cached_and_failures_are_not(tmp_path):
    layout = Layout.at(ROOT, tmp_path / "out")
    ok = _toy(tmp_path)
    first = run_steps([ok], layout, True, ROOT)
    assert first[0]["rc"] == 0
    again = run_steps([ok], layout, True, ROOT)
    assert (tmp_path / "toy.count").read_text() == "1"  # cached: not rerun
    assert again[0]["reused"] and not first[0]["reused"] and again[0]["seconds"] == first[0]["seconds"]
    bad = _toy(tmp_path, fail=True)
    assert run_steps([bad], layout, True, ROOT)[0]["rc"] == 1
    assert run_steps([bad], layout, True, ROOT)[0]["rc"] == 1
    assert (tmp_path / "toy.count").read_text() == "3"  # a failed step is run again


def test_summary_collects_headlines(tmp_path):
    layout = Layout.at(ROOT, tmp_path / "out")
    statuses = run_steps([_toy(tmp_path)], layout, True, ROOT)
    summary = write_summary(tmp_path / "out", layout.results, statuses, quick=True)
    assert summary["headline"][0]["value"] == 0.5
    md = (tmp_path / "out" / "summary.md").read_text()
    assert "answer \\| with a pipe | 0.5 | 0.01 | `python toy.py`" in md
    assert json.loads((tmp_path / "out" / "summary.json").read_text())["steps"][0]["rc"] == 0


def test_every_script_is_a_step_and_takes_the_conventions():
    steps = discover_steps(ROOT)
    names = {s.name for s in steps}
    assert "train_models" not in names  # the weights are shipped; training is not the main job
    for s in steps:
        text = (ROOT / s.script).read_text()
        assert "--quick" in text or "figure_args" in text or "script_parser" in text or s.kind == "proof", (
            s.name
        )


def test_gpu_scripts_run_in_full_only_with_cuda(monkeypatch):
    """A CPU main job must not overwrite the committed GPU results (*_gpu.json) with CPU numbers."""
    import spectheory.app.reproduce as rep

    monkeypatch.setattr(rep, "_cuda_available", lambda: False)
    full = {s.name for s in discover_steps(ROOT)}
    quick = {s.name for s in discover_steps(ROOT, quick=True)}
    assert not any(n.endswith("_gpu") for n in full)
    assert {"decoder_gpu", "decoder_trees_gpu"} <= quick
    monkeypatch.setattr(rep, "_cuda_available", lambda: True)
    assert {"decoder_gpu", "decoder_trees_gpu"} <= {s.name for s in discover_steps(ROOT)}


@pytest.mark.slow
def test_quick_main_job_runs_every_step(tmp_path):
    assert reproduce(ROOT, out=tmp_path, quick=True, jobs=2) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert all(s["rc"] == 0 for s in summary["steps"])
    assert len(summary["headline"]) >= 10
    assert (tmp_path / "figures" / "fig1_theorem1.png").exists()


def test_the_library_does_not_reach_into_the_repository():
    """No module of the installed package computes a path to the folders around it: the
    application layer takes the checkout as an argument (spectheory.app.repo)."""
    import re

    package = ROOT / "spectheory"
    pattern = re.compile(r"__file__\)?(\.resolve\(\))?\.parent\.parent\.parent|sys\.path\.(insert|append)")
    offenders = [str(p.relative_to(ROOT)) for p in package.rglob("*.py") if pattern.search(p.read_text())]
    assert offenders == []


def test_find_repository(tmp_path):
    from spectheory.app.repo import find_repository

    assert find_repository(ROOT / "spectheory" / "exact") == ROOT
    with pytest.raises(ValueError, match="--root"):
        find_repository(tmp_path)


@pytest.mark.slow
def test_installed_wheel_works_from_any_directory(tmp_path):
    """pip install . into a fresh venv (system site-packages for the dependencies), then from
    /tmp-like folders: analyze works, and reproduce --quick works given the checkout."""
    import subprocess
    import sys

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)], check=True)
    py = venv / "bin" / "python"
    subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", str(ROOT)], check=True)
    exe = venv / "bin" / "spectheory"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = subprocess.run([str(exe), "analyze", "--vocab", "4"], cwd=elsewhere, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    probe = subprocess.run(
        [str(py), "-c", "import spectheory; print(spectheory.__file__)"],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        check=True,
    )
    assert str(ROOT) not in probe.stdout  # the wheel, not the checkout
    res = subprocess.run(
        [
            str(exe),
            "reproduce",
            "--quick",
            "--jobs",
            "2",
            "--root",
            str(ROOT),
            "--out",
            str(tmp_path / "job"),
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert (tmp_path / "job" / "summary.json").exists()

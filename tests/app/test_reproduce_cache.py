"""The main job reuses a step while what it used is unchanged (issue 27: every library edit
reran the one-hour job), and its progress is honest (an ETA of 4:34 for 15:40, stale
heartbeats, bars and lines run together in a log file).

The job runs on a fake checkout: two simulations importing a fake package, a figure reading
one simulation's results."""

import json
import os
import sys
import textwrap
import time
from pathlib import Path

import pytest

from spectheory.app.cli import main
from spectheory.app.job_progress import JobProgress
from spectheory.app.reproduce import Layout, Step
from spectheory.app.step_cache import PACKAGE, WEIGHTS, step_inputs
from spectheory.app.step_runner import TIMES, run_steps, write_times

SIMULATION = """
import json, pathlib, sys
from fakepkg.{module} import VALUE
VALUE_HERE = 1
args = sys.argv[1:]
out = pathlib.Path(args[args.index("--out") + 1]); out.mkdir(parents=True, exist_ok=True)
with open(pathlib.Path({runs!r}), "a") as fh:
    fh.write("{name}\\n")
(out / "{name}.json").write_text(json.dumps({{"value": VALUE + VALUE_HERE, "headline": [
    {{"name": "{name} value", "value": VALUE + VALUE_HERE}}]}}))
"""

FIGURE = """
import json, pathlib, sys
args = sys.argv[1:]
out = pathlib.Path(args[args.index("--out") + 1]); out.mkdir(parents=True, exist_ok=True)
with open(pathlib.Path({runs!r}), "a") as fh:
    fh.write("fig1_alpha\\n")
alpha = json.loads((out.parent / "results" / "alpha.json").read_text())
(out / "fig1_alpha.json").write_text(json.dumps({{"plotted": alpha["value"]}}))
"""


@pytest.fixture
def checkout(tmp_path, monkeypatch):
    """A fake checkout: simulations alpha (imports fakepkg.core) and beta (fakepkg.other),
    figure fig1_alpha (reads alpha's results); ``runs()`` lists the steps run since last asked."""
    repo = tmp_path / "repo"
    runs = tmp_path / "runs.txt"
    for folder in ("simulations", "figures", "fakepkg"):
        (repo / folder).mkdir(parents=True)
    (repo / "fakepkg" / "__init__.py").write_text("")
    (repo / "fakepkg" / "core.py").write_text("VALUE = 10\n")
    (repo / "fakepkg" / "other.py").write_text("VALUE = 20\n")
    for name, module in (("alpha", "core"), ("beta", "other")):
        (repo / "simulations" / f"{name}.py").write_text(
            SIMULATION.format(module=module, runs=str(runs), name=name)
        )
    (repo / "figures" / "fig1_alpha.py").write_text(FIGURE.format(runs=str(runs)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(repo), os.environ.get("PYTHONPATH", "")]))

    def ran():
        names = sorted(runs.read_text().split()) if runs.exists() else []
        runs.unlink(missing_ok=True)
        return names

    steps = [
        Step("alpha", "simulations/alpha.py"),
        Step("beta", "simulations/beta.py"),
        Step("fig1_alpha", "figures/fig1_alpha.py", kind="figure", needs=("alpha", "beta")),
    ]
    layout = Layout.at(repo, tmp_path / "out")
    return repo, steps, layout, ran


def _job(checkout, **kw):
    repo, steps, layout, ran = checkout
    statuses = run_steps(steps, layout, True, repo, **kw)
    assert all(s["rc"] == 0 for s in statuses)
    return ran(), {s["name"]: s for s in statuses}


def test_a_step_reruns_exactly_when_what_it_used_changed(checkout):
    repo, _, layout, _ = checkout
    ran, st = _job(checkout)
    assert ran == ["alpha", "beta", "fig1_alpha"] and not any(s["reused"] for s in st.values())
    t0 = time.perf_counter()
    ran, st = _job(checkout)
    assert ran == [] and all(s["reused"] for s in st.values())
    assert time.perf_counter() - t0 < 60  # a warm job with nothing changed
    # the script of a step: that step, and the figure reading the results it rewrote
    script = repo / "simulations" / "alpha.py"
    script.write_text(script.read_text().replace("VALUE_HERE = 1", "VALUE_HERE = 2"))
    ran, st = _job(checkout)
    assert ran == ["alpha", "fig1_alpha"] and st["beta"]["reused"]
    assert "simulations/alpha.py" in st["alpha"]["reason"] and "alpha.json" in st["fig1_alpha"]["reason"]
    assert json.loads((layout.figures / "fig1_alpha.json").read_text())["plotted"] == 12
    # a package module: the steps importing it (beta's results are read by no figure)
    (repo / "fakepkg" / "other.py").write_text("VALUE = 21\n")
    ran, st = _job(checkout)
    assert ran == ["beta"] and "fakepkg/other.py" in st["beta"]["reason"]
    # a deleted output: its step
    (layout.figures / "fig1_alpha.json").unlink()
    assert _job(checkout)[0] == ["fig1_alpha"]
    # force: everything, or the named steps
    assert _job(checkout, force=True)[0] == ["alpha", "beta", "fig1_alpha"]
    assert _job(checkout, force="beta")[0] == ["beta"]
    with pytest.raises(ValueError, match="force: unknown step"):
        run_steps(checkout[1], layout, True, repo, force="gamma")


def test_a_failed_step_and_changed_options_rerun(checkout):
    repo, steps, layout, ran = checkout
    _job(checkout)
    (repo / "fakepkg" / "core.py").write_text("raise RuntimeError('broken')\n")
    statuses = run_steps(steps, layout, True, repo)
    assert [s["name"] for s in statuses if s["rc"] != 0] == ["alpha"] and ran() == []
    (repo / "fakepkg" / "core.py").write_text("VALUE = 10\n")  # back as it was: a failure reruns
    assert _job(checkout)[0] == ["alpha"]  # (same results: the figure is reused)
    full = run_steps(steps, layout, False, repo)  # the other mode has its own cache
    assert not any(s["reused"] for s in full)
    ran()
    wider = [Step("alpha", "simulations/alpha.py", args=("--seed", "1")), *steps[1:]]
    run_steps(wider, layout, True, repo)
    assert ran() == ["alpha"]
    manifest = layout.cache / "quick" / "manifest.json"  # another installed version of a package
    data = json.loads(manifest.read_text())
    data["steps"]["beta"]["packages"] = {"pytest": "0.0"}
    manifest.write_text(json.dumps(data))
    statuses = {s["name"]: s for s in run_steps(wider, layout, True, repo)}
    assert ran() == ["beta"] and statuses["beta"]["reason"].startswith("package pytest changed: 0.0 ->")


def test_summary_and_time_records_say_what_was_reused(checkout, capfd):
    repo, _, layout, _ = checkout
    out = layout.results.parent
    args = ["reproduce", "--root", str(repo), "--quick", "--out", str(out)]
    assert main(args) == 0
    assert main(args) == 0
    err = capfd.readouterr().err
    assert "3 steps" in err and "0 ran, 3 reused" in err and "\r" not in err  # a log gets lines, no bars
    summary = json.loads((out / "summary.json").read_text())
    assert all(s["reused"] and s["seconds"] > 0 and s["measured"] for s in summary["steps"])
    assert "| alpha | reused |" in (out / "summary.md").read_text()
    times = json.loads((layout.results / TIMES).read_text())
    assert times["mode"] == "quick" and times["last"]["steps_reused"] == 3 and times["last"]["cores"] >= 1
    assert times["cold"]["steps_ran"] == 3 and set(times["steps"]) == {"alpha", "beta", "fig1_alpha"}
    assert main([*args, "--force"]) == 0
    summary = json.loads((out / "summary.json").read_text())
    assert not any(s["reused"] for s in summary["steps"])
    assert {s["reason"] for s in summary["steps"]} == {"forced (--force)"}


def test_step_inputs_are_conservative(tmp_path):
    script = tmp_path / "s.py"
    script.write_text("")
    decoder = {"modules": [str(PACKAGE / "decoder" / "model.py")], "reads": [], "writes": [], "spawned": []}
    assert {p for p in WEIGHTS.iterdir() if p.is_file()} <= step_inputs(decoder, script)
    other = {"modules": [], "reads": [], "writes": [], "spawned": ["uname"]}
    assert step_inputs(other, script) == {script.resolve()}  # a non-Python program adds nothing
    spawned = dict(other, spawned=[Path(sys.executable).name])  # another Python: all the package
    assert PACKAGE / "exact" / "parts.py" in step_inputs(spawned, script)


def test_time_left_comes_from_recorded_step_times():
    steps = [("a", 0, 100.0), ("b", 0, 50.0), ("c", 0, 50.0), ("fig", 1, 10.0)]
    progress = JobProgress(steps, [2, 2], tty=False)
    assert progress.left() == pytest.approx(110.0)  # a | b then c on two workers, then fig
    progress.will_reuse("a")
    assert progress.left() == pytest.approx(60.0)
    progress.will_run("fig", None)
    assert progress.left() is None and "time left unknown (1 step(s) never timed" in progress.status()


def test_terminal_line_is_redrawn_and_a_file_gets_lines(tmp_path):
    import io

    for tty in (True, False):
        stream = io.StringIO()
        progress = JobProgress([("a", 0, 5.0), ("b", 0, 5.0)], [1], stream=stream, tty=tty)
        progress.started("a")
        progress.done("a", True, 5.0)
        progress.done("b", True, 5.0, reused=True)
        progress.close()
        text = stream.getvalue()
        assert "[1/2] a done in 0:05" in text and "[2/2] b reused" in text
        assert ("\r" in text) == tty and "about 0:05 left" in text
        if not tty:
            assert text.count("\n") == 2  # one line per update


def test_launcher_records_imports_reads_and_writes(tmp_path):
    import subprocess

    from spectheory.app.step_cache import LAUNCHER

    (tmp_path / "mod_here.py").write_text("X = 1\n")
    (tmp_path / "data.txt").write_text("d")
    script = tmp_path / "s.py"
    script.write_text(
        textwrap.dedent("""
        import os, sys, mod_here, pytest
        open(os.path.join(os.path.dirname(__file__), "data.txt")).read()
        with open(sys.argv[1] + ".tmp", "w") as fh:
            fh.write("o")
        os.replace(sys.argv[1] + ".tmp", sys.argv[1])
        sys.exit(3)
    """)
    )
    deps = tmp_path / "deps.json"
    out = tmp_path / "out.txt"
    argv = [
        sys.executable,
        str(LAUNCHER),
        "--deps",
        str(deps),
        "--watch",
        str(tmp_path),
        "--",
        str(script),
        str(out),
    ]
    assert subprocess.run(argv, cwd=tmp_path).returncode == 3  # the script's exit code
    rec = json.loads(deps.read_text())
    real = Path(tmp_path).resolve()
    assert {str(real / "mod_here.py"), str(real / "s.py")} <= set(rec["modules"])
    assert str(real / "data.txt") in rec["reads"] and rec["writes"] == [str(real / "out.txt")]
    assert "pytest" in rec["packages"] and "os" not in rec["packages"]


@pytest.mark.slow  # a LocalCluster takes seconds to start
def test_steps_on_a_dask_cluster_are_cached_too(checkout):
    distributed = pytest.importorskip("distributed")
    repo, steps, layout, ran = checkout
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
    ) as c:
        first = run_steps(steps, layout, True, repo, scheduler=c.scheduler_address)
        again = run_steps(steps, layout, True, repo, scheduler=c.scheduler_address)
    assert all(s["rc"] == 0 for s in first) and not any(s["reused"] for s in first)
    assert all(s["reused"] for s in again) and ran() == ["alpha", "beta", "fig1_alpha"]


def test_time_records_keep_the_last_cold_job(tmp_path):
    path = tmp_path / TIMES

    def st(name, reused=False, rc=0):
        return {"name": name, "rc": rc, "seconds": 2.0, "reused": reused, "measured": "then"}

    cold = write_times(path, [st("a"), st("b")], False, 2, 10.0)["cold"]
    assert cold["wall_seconds"] == 10.0 and cold["jobs"] == 2 and cold["steps_ran"] == 2
    warm = write_times(path, [st("a", reused=True), st("b", reused=True)], False, 2, 1.0)
    assert warm["cold"] == cold and warm["last"]["wall_seconds"] == 1.0 and warm["last"]["steps_reused"] == 2
    assert write_times(path, [st("a")], False, 2, 3.0)["cold"] == cold  # some steps only (--only)
    assert write_times(path, [st("a"), st("b", rc=1)], False, 2, 3.0)["cold"] == cold  # a failure
    assert write_times(path, [st("a")], True, 2, 3.0)["cold"]["wall_seconds"] == 3.0  # quick: its own

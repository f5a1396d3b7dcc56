"""Nothing committed is overwritten by a quick or CPU run (issue 27).

A quick main job writes into a fresh folder; GPU results are never replaced by CPU ones; a
failing step or README update fails the job, saying so in its last line; ``figures`` reads the
checkout's results wherever ``--out`` points; bad names and a dead scheduler are refused before
any folder is made. The toy checkouts here are folders with a ``simulations/`` script or two,
which is all :func:`~spectheory.app.reproduce.discover_steps` needs.
"""

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest

from spectheory.app import figures_job, plotting
from spectheory.app import reproduce as rep
from spectheory.app.cli import main
from spectheory.app.job_safety import GpuResultsGuard

ROOT = Path(__file__).resolve().parents[2]

TOY = textwrap.dedent("""
    import json, sys, pathlib
    args = sys.argv[1:]
    out = pathlib.Path(args[args.index("--out") + 1]); out.mkdir(parents=True, exist_ok=True)
    name = pathlib.Path(__file__).stem
    (out / f"{name}.json").write_text(json.dumps({"device": DEVICE, "headline": [
        {"name": f"{name} value", "value": 1.0}]}))
    (out / f"{name}_log.txt").write_text("log of this run")
    sys.exit(RC)
""")


def toy_checkout(tmp_path, scripts, readme_rc=None):
    """A folder laid out as a checkout: ``scripts`` maps simulations/<name>.py to (device, rc)."""
    root = tmp_path / "checkout"
    (root / "simulations").mkdir(parents=True)
    (root / "figures").mkdir()
    (root / "results").mkdir()
    for name, (device, rc) in scripts.items():
        (root / "simulations" / f"{name}.py").write_text(
            TOY.replace("DEVICE", repr(device)).replace("RC", str(rc))
        )
    if readme_rc is not None:
        (root / "scripts").mkdir()
        (root / "scripts" / "update_readme.py").write_text(
            f"import pathlib\npathlib.Path('readme_updated').write_text('yes')\nraise SystemExit({readme_rc})\n"
        )
    return root


def last_line(text):
    return text.strip().splitlines()[-1]


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """Fresh folders (tempfile.mkdtemp) are made under ``tmp_path/tmp``, so a test sees them."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


# --- item 0: quick runs and GPU results ---------------------------------------------------


def test_quick_run_without_out_writes_a_fresh_folder(tmp_path, private_tmp, capsys):
    root = toy_checkout(tmp_path, {"a": ("cpu", 0)})
    assert rep.reproduce(root, quick=True) == 0
    out = capsys.readouterr().out
    (fresh,) = private_tmp.iterdir()
    assert str(fresh) in out.splitlines()[0] and "untouched" in out
    assert (fresh / "results" / "a.json").exists() and (fresh / "summary.md").exists()
    assert sorted(p.name for p in (root / "results").iterdir()) == []  # the checkout untouched
    assert last_line(out).startswith("spectheory reproduce: ok: 1/1 steps ok")


def test_quick_run_into_the_checkout_is_refused(tmp_path):
    root = toy_checkout(tmp_path, {"a": ("cpu", 0)})
    for out in (root, f"{root}/", root / "sub" / ".."):
        with pytest.raises(ValueError, match="quick run never writes into the checkout"):
            rep.reproduce(root, out=out, quick=True)
    assert not (root / ".cache").exists() and not any((root / "results").iterdir())


def test_full_run_without_cuda_skips_gpu_steps_and_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(rep, "_cuda_available", lambda: False)
    root = toy_checkout(tmp_path, {"a": ("cpu", 0), "b_gpu": ("cpu", 0)})
    committed = json.dumps({"device": "cuda (NVIDIA H200)"})
    (root / "results" / "b_gpu.json").write_text(committed)
    assert rep.reproduce(root, only=["a", "b_gpu"]) == 0
    out = capsys.readouterr().out
    assert "b_gpu skipped: a GPU step and CUDA is not available" in out
    assert "1 GPU step(s) skipped (no CUDA)" in last_line(out)
    assert (root / "results" / "b_gpu.json").read_text() == committed
    assert (root / "results" / "a.json").exists()  # the CPU step did run into the checkout
    # a partial run keeps the committed summary: its own goes into results/logs/
    assert not (root / "results" / "summary.json").exists()
    assert (root / "results" / "logs" / "summary.json").exists()


def test_gpu_step_that_ran_on_cpu_keeps_the_committed_results(tmp_path, monkeypatch, capsys):
    """CUDA seen by the job, but the step used the CPU: its files are put back."""
    monkeypatch.setattr(rep, "_cuda_available", lambda: True)
    root = toy_checkout(tmp_path, {"b_gpu": ("cpu (x86_64)", 0), "c_gpu": ("cuda (H200)", 0)})
    committed = json.dumps({"device": "cuda (NVIDIA H200)", "headline": []})
    (root / "results" / "b_gpu.json").write_text(committed)
    assert rep.reproduce(root, only=["b_gpu", "c_gpu"]) == 0
    out = capsys.readouterr().out
    assert "b_gpu did not run on CUDA" in out and "c_gpu did not run" not in out
    assert (root / "results" / "b_gpu.json").read_text() == committed
    assert not (root / "results" / "b_gpu_log.txt").exists()  # written by the CPU run: removed
    assert json.loads((root / "results" / "c_gpu.json").read_text())["device"] == "cuda (H200)"


def test_gpu_guard_restores_a_failed_step_and_leaves_steps_that_did_not_run(tmp_path):
    res = tmp_path / "results"
    res.mkdir()
    (res / "x_gpu.json").write_text('{"device": "cuda"}')
    (res / "x_gpu_log.txt").write_text("committed log")
    (res / "y_gpu.json").write_text('{"device": "cuda"}')
    guard = GpuResultsGuard(res, ["x_gpu", "y_gpu"])
    (res / "x_gpu_log.txt").write_text("half-written log of a failed run")
    (res / "y_gpu.json").write_text('{"device": "cpu"}')
    assert guard.restore({"x_gpu": 1}) == ["x_gpu"]
    assert (res / "x_gpu_log.txt").read_text() == "committed log"
    assert (res / "y_gpu.json").read_text() == '{"device": "cpu"}'  # y_gpu did not run here


def test_discover_steps_gpu_argument(monkeypatch):
    monkeypatch.setattr(rep, "_cuda_available", lambda: False)
    names = {s.name for s in rep.discover_steps(ROOT, gpu=True)}
    assert {"decoder_gpu", "decoder_trees_gpu"} <= names
    assert not any(s.name.endswith("_gpu") for s in rep.discover_steps(ROOT, quick=True, gpu=False))


# --- item 2: failures fail the job ------------------------------------------------------------


def test_a_failing_step_fails_the_job_and_the_last_line_says_so(tmp_path, capsys):
    root = toy_checkout(tmp_path, {"a": ("cpu", 0), "bad": ("cpu", 3)}, readme_rc=0)
    assert rep.reproduce(root) == 1
    out = capsys.readouterr().out
    assert last_line(out).startswith("spectheory reproduce: FAILED: 1 step(s) failed: bad")
    assert "README.md not updated" in out and not (root / "readme_updated").exists()


def test_a_failing_readme_update_fails_the_job(tmp_path, capsys):
    root = toy_checkout(tmp_path, {"a": ("cpu", 0)}, readme_rc=1)
    assert rep.reproduce(root) == 1
    line = last_line(capsys.readouterr().out)
    assert line.startswith("spectheory reproduce: FAILED: the README update") and "exit status 1" in line
    assert (root / "readme_updated").exists()


def test_the_readme_is_updated_only_after_a_full_run_into_the_checkout(tmp_path, private_tmp, capsys):
    root = toy_checkout(tmp_path, {"a": ("cpu", 0)}, readme_rc=0)
    assert rep.reproduce(root, out=tmp_path / "elsewhere") == 0
    assert rep.reproduce(root, only=["a"]) == 0
    assert rep.reproduce(root, quick=True) == 0
    assert not (root / "readme_updated").exists()
    assert rep.reproduce(root) == 0
    assert (root / "readme_updated").exists()
    assert last_line(capsys.readouterr().out).startswith("spectheory reproduce: ok: 1/1 steps ok")


def test_cli_exit_status_of_a_failing_job(tmp_path, capsys):
    root = toy_checkout(tmp_path, {"bad": ("cpu", 1)})
    assert main(["reproduce", "--root", str(root), "--out", str(tmp_path / "o")]) == 1
    assert "FAILED" in last_line(capsys.readouterr().out)


# --- refused before anything is made --------------------------------------------------------


def test_unknown_steps_are_refused_before_any_folder(tmp_path, private_tmp, capsys):
    out = tmp_path / "new"
    assert main(["reproduce", "--quick", "--only", "proofs,nope", "--out", str(out)]) == 2
    assert "--only: unknown step(s) ['nope']" in capsys.readouterr().err
    assert not out.exists()
    assert main(["reproduce", "--quick", "--only", "nope"]) == 2
    assert not any(private_tmp.iterdir())
    with pytest.raises(SystemExit) as exc:  # argparse: an empty name
        main(["reproduce", "--only", "a,,b"])
    assert exc.value.code == 2


def test_unknown_figures_are_refused_before_any_folder(tmp_path, private_tmp, capsys):
    assert main(["figures", "fig99", "--quick"]) == 2
    assert "unknown figure(s) ['fig99']" in capsys.readouterr().err
    assert not any(private_tmp.iterdir())  # was: a spectheory-figures-quick-* folder per call
    assert main(["figures", "fig99", "--quick", "--out", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
    assert main(["figures", "fig1_theorem1", "--results", str(tmp_path / "none")]) == 2
    assert "--results" in capsys.readouterr().err
    assert main(["figures", "fig1_theorem1", "--quick", "--out", str(ROOT / "figures")]) == 2
    assert "never replace the committed figures" in capsys.readouterr().err
    assert not any(private_tmp.iterdir())


def test_dead_scheduler_leaves_nothing_in_out(tmp_path, capsys):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = tmp_path / "o"
    code = main(
        [
            "reproduce",
            "--quick",
            "--only",
            "proofs",
            "--out",
            str(out),
            "--scheduler",
            f"tcp://127.0.0.1:{port}",
        ]
    )
    assert code == 2
    assert "--scheduler tcp://127.0.0.1" in capsys.readouterr().err
    assert not out.exists()


# --- item 1: figures read the checkout's results ----------------------------------------------


def test_quick_figures_go_to_a_fresh_folder_and_read_the_checkout_results(private_tmp, monkeypatch, capsys):
    seen = []

    class Done:
        returncode, stdout, stderr = 0, "", ""

    monkeypatch.setattr(figures_job.subprocess, "run", lambda argv, **kw: seen.append(argv) or Done())
    assert main(["figures", "fig8_decoder", "--quick"]) == 0
    (fresh,) = private_tmp.iterdir()
    argv = seen[0]
    assert argv[argv.index("--out") + 1] == str(fresh)
    assert argv[argv.index("--results") + 1] == str(ROOT / "results")
    assert "untouched" in capsys.readouterr().out


def test_results_dir_lookup(tmp_path, monkeypatch):
    fake_script = tmp_path / "checkout" / "figures" / "fig0.py"
    fake_script.parent.mkdir(parents=True)
    monkeypatch.setattr(plotting, "_script_folder", lambda: fake_script.parent)
    assert plotting.results_dir(tmp_path / "a" / "figures") == tmp_path / "checkout" / "results"
    (tmp_path / "a" / "results").mkdir(parents=True)
    assert plotting.results_dir(tmp_path / "a" / "figures") == tmp_path / "a" / "results"  # reproduce --out
    assert plotting.results_dir(tmp_path / "a" / "figures", tmp_path / "r") == tmp_path / "r"


def test_fig8_reads_the_committed_results_from_any_out(tmp_path, monkeypatch):
    """fig8 used to look for results/ beside --out; run in-process with --results."""
    if not (ROOT / "results" / "decoder_theory.json").exists():
        pytest.skip("needs the committed decoder results")
    spec = importlib.util.spec_from_file_location("_fig8_safety", ROOT / "figures" / "fig8_decoder.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    seen = {}
    monkeypatch.setattr(
        mod, "save_figure", lambda fig, name, data=None, out_dir=None: seen.update(out=out_dir) or []
    )
    monkeypatch.setitem(plotting._QUICK, "on", plotting._QUICK["on"])  # restored afterwards
    mod.main(["--quick", "--out", str(tmp_path / "deep" / "fresh"), "--results", str(ROOT / "results")])
    assert Path(seen["out"]) == tmp_path / "deep" / "fresh"


# --- item 4: labels name the device that ran -------------------------------------------------


def test_decoder_gpu_rows_name_the_device_that_ran():
    pytest.importorskip("torch")
    spec = importlib.util.spec_from_file_location("_decoder_gpu", ROOT / "simulations" / "decoder_gpu.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    assert mod.run_label("cuda") == mod.run_label("cuda:1") == "gpu run"
    assert mod.run_label("cpu") == "cpu run" and mod.run_label("mps") == "mps run"


# --- update_readme on quick and partial results -----------------------------------------------


def load_update_readme():
    spec = importlib.util.spec_from_file_location("_update_readme", ROOT / "scripts" / "update_readme.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_update_readme_renders_quick_results_and_refuses_to_write_them(tmp_path, capsys):
    quick = tmp_path / "results"
    quick.mkdir()
    scaling = json.loads((ROOT / "results" / "exact_scaling.json").read_text())
    scaling.update(
        budget_case=None, command="python benchmarks/exact_scaling.py --quick"
    )  # as --quick writes
    (quick / "exact_scaling.json").write_text(json.dumps(scaling))
    (quick / "summary.json").write_text(
        json.dumps({"quick": True, "date": "today", "steps": [], "headline": []})
    )
    mod = load_update_readme()
    assert mod.main(["--results", str(quick), "--stdout"]) == 0  # was TypeError in block_speed
    text = capsys.readouterr().out
    assert "Exact recursions (`python benchmarks/exact_scaling.py --quick`): time grows as" in text
    assert "(quick mode)" in text
    assert mod.main(["--results", str(quick)]) == 2  # never written from another results folder
    # a checkout whose results/ holds a quick summary: README.md is not written
    fake = tmp_path / "checkout"
    (fake / "results").mkdir(parents=True)
    shutil.copy(quick / "summary.json", fake / "results" / "summary.json")
    (fake / "README.md").write_text("untouched\n")
    mod.ROOT, mod.README, mod.RESULTS["dir"] = fake, fake / "README.md", fake / "results"
    assert mod.main([]) == 2
    assert (fake / "README.md").read_text() == "untouched\n"
    assert "quick run" in capsys.readouterr().out


# --- slow: the real scripts -------------------------------------------------------------------


@pytest.mark.slow
def test_every_figure_quick_into_a_fresh_folder(tmp_path):
    """``figures --quick --out`` a fresh folder: every figure is made (fig8, fig9, fig13, fig15
    failed: they looked for results/ beside the folder)."""
    out = tmp_path / "fresh" / "deep"
    assert figures_job.run_figures(ROOT, quick=True, out=out, jobs=2) == 0
    names = {s.name for s in rep.discover_steps(ROOT) if s.kind == "figure"}
    assert {p.stem for p in out.glob("*.png")} == names
    assert not (tmp_path / "fresh" / "results").exists()


GPU_TOY = textwrap.dedent("""
    # a GPU step of the test's clone: on this machine it runs on the CPU
    import json, sys, pathlib
    args = sys.argv[1:]
    out = pathlib.Path(args[args.index("--out") + 1]); out.mkdir(parents=True, exist_ok=True)
    (out / "zz_toy_gpu.json").write_text(json.dumps({"device": "cpu (toy)", "headline": [
        {"name": "cpu run toy", "value": 2.0}]}))
    (out / "zz_toy_gpu_log.txt").write_text("cpu log")
""")


def git(cwd, *args):
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def test_quick_main_job_in_a_clone_leaves_git_clean(tmp_path):
    """``spectheory reproduce --quick`` in a fresh clone modified 78 tracked files; now the
    clone stays clean: quick runs go to a fresh folder, a CPU run of a GPU step into the
    checkout keeps the committed GPU result, and the README is rendered from quick results
    without touching README.md."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    (clone / "simulations" / "zz_toy_gpu.py").write_text(GPU_TOY)
    (clone / "results" / "zz_toy_gpu.json").write_text(json.dumps({"device": "cuda (NVIDIA H200)"}))
    git(clone, "add", "-A")
    git(clone, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "a toy GPU step")
    env = {**os.environ, "PYTHONPATH": str(clone), "TMPDIR": str(tmp_path)}
    only = "exact_scaling,simulator_speed,zz_toy_gpu,fig1_theorem1"
    cmd = [sys.executable, "-m", "spectheory", "reproduce", "--root", str(clone), "--jobs", "2"]
    run = subprocess.run(
        [*cmd, "--quick", "--only", only], cwd=clone, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    fresh = Path(re.search(r"writing into (\S+)", run.stdout).group(1))
    assert fresh.parent == tmp_path and (fresh / "results" / "zz_toy_gpu.json").exists()
    assert (fresh / "figures" / "fig1_theorem1.png").exists()
    assert git(clone, "status", "--porcelain") == ""
    # full mode into the clone itself: no CUDA here, so the GPU step is skipped (with CUDA it
    # would run on the CPU and its committed result be put back)
    run = subprocess.run([*cmd, "--only", "zz_toy_gpu"], cwd=clone, env=env, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert "zz_toy_gpu skipped" in run.stdout or "zz_toy_gpu did not run on CUDA" in run.stdout
    changed = git(clone, "status", "--porcelain").splitlines()
    assert changed == []  # a partial run's time records go to results/logs/ (untracked)
    # the README rendered from the quick results (update_readme's TypeError on them)
    readme = subprocess.run(
        [sys.executable, "scripts/update_readme.py", "--results", str(fresh / "results"), "--stdout"],
        cwd=clone,
        env=env,
        capture_output=True,
        text=True,
    )
    assert readme.returncode == 0, readme.stderr[-2000:]
    assert "exact_scaling.py --quick" in readme.stdout and "(quick mode)" in readme.stdout
    assert git(clone, "status", "--porcelain").splitlines() == changed


def test_every_figure_that_reads_results_takes_the_results_flag():
    """A figure reading ``results/*.json`` must pass ``args.results`` on, or ``figures --out``
    elsewhere reads the wrong folder (fig8, fig9, fig13, fig15 did)."""
    for script in sorted((ROOT / "figures").glob("fig*.py")):
        for call in re.findall(r"load_results\(([^)]*)\)", script.read_text()):
            assert "args.results" in call, f"{script.name}: load_results({call})"


def test_real_model_steps_are_skipped_with_one_line_without_the_extra(tmp_path, monkeypatch, capsys):
    import spectheory.app.job_safety as safety

    root = toy_checkout(tmp_path, {"a": ("cpu", 0), "real_b": ("cpu", 0)})
    monkeypatch.setattr(rep, "real_extra_missing", lambda: "needs the real extra (pip install it)")
    assert rep.reproduce(root, quick=True, out=tmp_path / "o") == 0
    out = capsys.readouterr().out
    assert "real_b skipped: a real-model step that needs the real extra" in out
    assert "1 real-model step(s) skipped (no real extra)" in last_line(out)
    assert (tmp_path / "o" / "results" / "a.json").exists()
    assert not (tmp_path / "o" / "results" / "real_b.json").exists()
    # with the extra the step runs like any other
    monkeypatch.setattr(rep, "real_extra_missing", lambda: None)
    assert rep.reproduce(root, quick=True, out=tmp_path / "p") == 0
    assert (tmp_path / "p" / "results" / "real_b.json").exists()
    assert safety.is_real_script("simulations/real_b.py")

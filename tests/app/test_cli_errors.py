"""User mistakes on the command line: one line naming the argument, exit status 2, no traceback.

Each case runs the real command in a subprocess (the way a user meets it). Every case here
failed before the hardening of issue 14 (tracebacks, ZeroDivisionError, MemoryError, ...).
"""

import json
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import spectheory as st
from spectheory.app.chain_cmd import monte_carlo_rows
from spectheory.app.cli import build_parser, main
from spectheory.montecarlo import mean_and_se


def run_cli(*args, stdout=subprocess.PIPE, timeout=120):
    return subprocess.run(
        [sys.executable, "-m", "spectheory.app.cli", *args],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=timeout,
    )


def assert_user_error(proc, *words):
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    for w in words:
        assert w in lines[0], (w, lines[0])


@pytest.fixture(scope="module")
def bad_chain_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("chains") / "bad_rows.json"
    path.write_text(json.dumps({"target": [[0.5, 0.5], [0.9, 0.3]], "draft": [[0.5, 0.5], [0.5, 0.5]]}))
    return str(path)


CASES = [
    (["reproduce", "--jobs", "0"], ["--jobs"]),  # was ZeroDivisionError
    (["reproduce", "--out", "/dev/null/x"], ["--out", "/dev/null/x"]),  # was NotADirectoryError
    (["figures", "--jobs", "0"], ["--jobs"]),
    (["decode", "--device", "tpu"], ["--device", "tpu"]),  # was RuntimeError from torch
    (["decode", "--temperature", "-1"], ["--temperature"]),
    (["decode", "--draft", "gpt-5"], ["--draft"]),
    (["analyze", "--vocab", "100000"], ["--vocab", "GiB"]),  # tried to allocate 74.5 GiB
    (["analyze", "--states", "70000", "--vocab", "70000"], ["--states", "GiB"]),
    (["simulate", "--runs", "-5"], ["--runs"]),
    (["analyze", "--cost", "nan"], ["--cost"]),
]


@pytest.mark.parametrize("args,words", CASES, ids=[" ".join(a) for a, _ in CASES])
def test_user_mistake_is_one_line_exit_2(args, words):
    assert_user_error(run_cli(*args), *words)


def test_malformed_chain_file_names_file_and_array(bad_chain_file):
    proc = run_cli("analyze", "--chain", bad_chain_file)
    assert_user_error(proc, "--chain", "bad_rows.json", "target")


def test_non_numeric_chain_array_names_it(tmp_path):
    path = tmp_path / "words.json"
    path.write_text(json.dumps({"target": [[1.0]], "draft": [["a"]]}))
    assert_user_error(run_cli("analyze", "--chain", str(path)), "words.json", "'draft'")


def test_decode_bad_arguments_fail_before_torch_loads():
    t0 = time.perf_counter()
    proc = run_cli("decode", "--gamma", "0")
    assert_user_error(proc, "--gamma")
    assert time.perf_counter() - t0 < 30  # was 6 s of model loading first; now argparse refuses


def test_decode_forward_refuses_medusa_and_unknown_modes():
    assert_user_error(run_cli("decode", "--forward", "fast"), "--forward")
    pytest.importorskip("torch")
    assert_user_error(
        run_cli("decode", "--medusa", "--forward", "static", "--tokens", "2"), "--forward static", "Medusa"
    )


def test_decode_cuda_without_cuda_names_device():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    assert_user_error(run_cli("decode", "--device", "cuda", "--tokens", "2"), "--device cuda", "CUDA")


@pytest.mark.parametrize("where", ["before", "after"])
def test_traceback_flag_before_or_after_subcommand(tmp_path, where):
    missing = str(tmp_path / "missing.json")
    args = ["analyze", "--chain", missing]
    args = ["--traceback", *args] if where == "before" else [*args, "--traceback"]
    proc = run_cli(*args)
    assert proc.returncode != 0 and "Traceback" in proc.stderr
    assert_user_error(run_cli("analyze", "--chain", missing), "--chain", "missing.json")


@pytest.mark.parametrize(
    "args", [["analyze", "--json", "--horizon", "8"], ["demo", "--auto", "--rounds", "2"]]
)
def test_closed_pipe_ends_quietly(args):
    """``spectheory analyze --json | head`` raised BrokenPipeError: the reader is gone from the start."""
    r, w = os.pipe()
    os.close(r)
    try:
        proc = run_cli(*args, stdout=w)
    finally:
        os.close(w)
    assert "Traceback" not in proc.stderr and "BrokenPipe" not in proc.stderr, proc.stderr
    assert proc.returncode == 0


def test_version():
    proc = run_cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"spectheory {st.__version__}"


def test_every_option_shows_its_default():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name, p in sub.choices.items():
        fmt = p._get_formatter()
        for action in p._actions:
            if not action.option_strings or action.dest in ("help", "traceback"):
                continue
            flag = action.option_strings[-1]
            block = fmt._get_help_string(action)
            assert "default" in block, f"spectheory {name} {flag}: help has no default"


def test_ignored_chain_flag_is_reported(tmp_path, capsys):
    chain = st.DecodingChain.random(3, rng=1)
    path = tmp_path / "chain.npz"
    np.savez(path, target=chain.target, draft=chain.draft)
    assert main(["analyze", "--chain", str(path), "--vocab", "99", "--horizon", "4", "--gammas", "2"]) == 0
    err = capsys.readouterr().err
    assert "--vocab" in err and "ignored" in err


def test_json_outputs_carry_their_settings(capsys):
    assert (
        main(["analyze", "--vocab", "4", "--horizon", "6", "--gammas", "1,2", "--cost", "0.3", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["settings"]["cost"] == 0.3 and out["cost"] == 0.3 and out["settings"]["vocab"] == 4
    assert (
        main(
            [
                "simulate",
                "--vocab",
                "3",
                "--seed",
                "5",
                "--horizon",
                "4",
                "--gammas",
                "2",
                "--runs",
                "50",
                "--no-bonus",
                "--json",
            ]
        )
        == 0
    )
    s = json.loads(capsys.readouterr().out)["settings"]
    assert (s["horizon"], s["bonus"], s["seed"], s["vocab"], s["runs"]) == (4, False, 5, 3, 50)


def test_simulate_chunks_any_number_of_runs():
    """Runs are simulated in chunks and aggregated: the memory is one chunk's whatever --runs is."""
    chain = st.DecodingChain.random(3, rng=2)
    rows = monte_carlo_rows(chain, 6, 2, 2501, seed=0, bonus=True, chunk=500)
    for r in rows:  # 5 standard errors: a false failure about once in a million runs
        assert r["mc_se"] > 0 and abs(r["z"]) < 5, r
    one = monte_carlo_rows(chain, 6, 2, 700, seed=0, bonus=True, chunk=10**6)
    sim = st.simulate(chain, 6, 2, 700, rng=np.random.default_rng([0, 2]))
    np.testing.assert_allclose(one[0]["mc_mean"], sim.target_calls.mean(), rtol=1e-12)
    np.testing.assert_allclose(one[0]["mc_se"], mean_and_se(sim.target_calls)[1], rtol=1e-9)


def test_quick_figures_are_stamped(tmp_path):
    from spectheory.app import plotting

    def pixels(quick):
        plotting.figure_args("doc", ["--quick"] if quick else [])
        fig, ax = plotting.figure()
        ax.plot([0, 1], [0, 1])
        png = plotting.save_figure(fig, f"f{int(quick)}", out_dir=tmp_path)[0]
        import matplotlib.image as mpimg

        return mpimg.imread(png)

    plain, quick = pixels(False), pixels(True)
    plotting.figure_args("doc", [])
    assert plain.shape != quick.shape or not np.array_equal(plain, quick)

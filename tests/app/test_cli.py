"""The spectheory command line: output, JSON, and one-line errors (never a traceback)."""

import json
import subprocess
import sys

import numpy as np
import pytest

import spectheory as st
from spectheory.app.cli import main


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "spectheory.app.cli", *args], capture_output=True, text=True)


def test_analyze_json_matches_library(capsys):
    assert (
        main(["analyze", "--vocab", "5", "--seed", "3", "--horizon", "12", "--gammas", "1,3", "--json"]) == 0
    )
    out = json.loads(capsys.readouterr().out)
    chain = st.DecodingChain.random(5, rng=3)
    np.testing.assert_allclose(out["rejections_theorem1"], chain.tv_profile(12).sum(), rtol=1e-12)
    np.testing.assert_allclose(
        out["per_gamma"][1]["target_calls"], chain.expected_target_calls(12, 3), rtol=1e-12
    )
    assert out["optimal_gamma"] in (1, 3)


def test_analyze_reads_chain_file(tmp_path, capsys):
    chain = st.DecodingChain.random(3, rng=1)
    path = tmp_path / "chain.npz"
    np.savez(path, target=chain.target, draft=chain.draft, initial=chain.initial)
    assert main(["analyze", "--chain", str(path), "--horizon", "6", "--gammas", "2"]) == 0
    text = capsys.readouterr().out
    assert "E[calls]" in text and f"{chain.expected_target_calls(6, 2):.4f}" in text


def test_simulate_agrees_with_exact(capsys):
    assert (
        main(["simulate", "--vocab", "4", "--horizon", "10", "--gammas", "2", "--runs", "4000", "--json"])
        == 0
    )
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert {r["quantity"] for r in rows} == {"target_calls", "rejections", "draft_tokens"}
    for r in rows:  # 5 standard errors: a false failure about once in a million runs
        assert abs(r["z"]) < 5, r


@pytest.mark.parametrize(
    "args",
    [
        ["analyze", "--gammas", "0"],
        ["analyze", "--vocab", "0"],
        ["analyze", "--chain", "/nonexistent/chain.json"],
        ["simulate", "--runs", "0"],
        ["figures", "no_such_figure"],
        ["nonsense"],
    ],
)
def test_bad_arguments_give_one_line_and_nonzero_exit(args):
    proc = run_cli(*args)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_every_subcommand_has_help_with_example():
    for name in ["reproduce", "analyze", "simulate", "decode", "demo", "figures", "prove"]:
        proc = run_cli(name, "--help")
        assert proc.returncode == 0 and "example: spectheory" in proc.stdout


def test_prove_runs_every_proof():
    proc = run_cli("prove")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) >= 6 and all(line.startswith("PASS") for line in lines)


def test_demo_auto_plays_and_reports(tmp_path):
    proc = run_cli("demo", "--auto", "--rounds", "3", "--seed", "1", "--save", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert "ACCEPT" in proc.stdout or "REJECT" in proc.stdout
    assert list(tmp_path.glob("*.png"))


def test_decode_runs_the_shipped_models(capsys):
    pytest.importorskip("torch")
    assert main(["decode", "--draft", "draft-tiny", "--tokens", "24", "--gamma", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    m = out["measured"]
    assert m["tokens"] == 24 and sum(out["runs"][0]["round_accepted"]) == m["accepted"]
    assert 0 < out["predicted"]["acceptance"]["mean"] <= 1
    assert out["texts"] == [bytes(out["runs"][0]["new_tokens"]).decode("utf-8", "replace")]
    # the along-path prediction of the run's counts: expected calls between the extremes
    calls = out["predicted"]["target_calls"]["mean"]
    assert 24 / 4 <= calls <= 24 and out["predicted"]["target_calls"]["se"] >= 0
    # every setting is in the JSON; the histogram runs over 0..gamma; a plain-target baseline
    s = out["settings"]
    assert (s["target"], s["draft"], s["seed"], s["temperature"], s["gamma"], s["horizon"]) == (
        "target",
        "draft-tiny",
        0,
        1.0,
        3,
        24,
    )
    hist = out["accepted_counts"]
    assert len(hist) == 4 and sum(hist) == m["target_calls"]
    assert out["baseline"]["time_total"] > 0 and out["baseline"]["speedup_measured"] > 0


@pytest.mark.parametrize("tree", [[], ["--tree", "2x1"]])
def test_decode_forward_static_gives_the_eager_text(capsys, tree):
    pytest.importorskip("torch")
    from spectheory.app.cli_args import FORWARD_CHOICES
    from spectheory.decoder.compiled import FORWARD_MODES

    assert FORWARD_CHOICES == FORWARD_MODES  # the command line's spelled-out copy
    args = ["decode", "--draft", "draft-tiny", "--tokens", "16", "--temperature", "0", "--json", *tree]
    texts = []
    for forward in ("eager", "static"):
        if tree:  # tree decoding prints text, not JSON
            assert main([a for a in args if a != "--json"] + ["--forward", forward]) == 0
            texts.append(capsys.readouterr().out.split("-" * 72)[1])
        else:
            assert main([*args, "--forward", forward]) == 0
            out = json.loads(capsys.readouterr().out)
            assert out["settings"]["forward"] == forward
            texts.append(out["texts"][0])
    assert texts[0] == texts[1]


def test_python_dash_m_spectheory_is_the_cli():
    """``python -m spectheory`` is the command line: version, help and one-line errors."""
    proc = subprocess.run([sys.executable, "-m", "spectheory", "--version"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"spectheory {st.__version__}"
    proc = subprocess.run([sys.executable, "-m", "spectheory", "--help"], capture_output=True, text=True)
    assert proc.returncode == 0 and "usage: spectheory" in proc.stdout, proc.stderr
    proc = subprocess.run(
        [sys.executable, "-m", "spectheory", "no-such-command"], capture_output=True, text=True
    )
    assert proc.returncode == 2 and "error" in proc.stderr and "Traceback" not in proc.stderr

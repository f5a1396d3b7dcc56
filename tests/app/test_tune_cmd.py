"""``spectheory tune`` on the shipped models, a random Hugging Face pair, and bad input."""

import json
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")

from spectheory.app.cli import main  # noqa: E402
from spectheory.app.tune_cmd import parse_policies, parse_trees  # noqa: E402

TINY = [
    "--batches",
    "1,2",
    "--gammas",
    "1,2",
    "--trees",
    "2x1",
    "--policy-depth",
    "2",
    "--tokens",
    "4",
    "--paths",
    "4",
    "--repeats",
    "1",
    "--prompt-len",
    "8",
    "--threads",
    "1",
]


def run_cli(*args, timeout=300):
    return subprocess.run(
        [sys.executable, "-m", "spectheory.app.cli", "tune", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_tune_on_the_shipped_models_prints_a_ranked_table_and_plots(tmp_path, capsys):
    plot = tmp_path / "out" / "tune.png"
    assert main(["tune", "--draft", "draft-ngram", *TINY, "--plot", str(plot)]) == 0
    out = capsys.readouterr().out
    assert "batch 1" in out and "batch 2" in out and "gamma=2" in out and "tree 2x1" in out
    assert "best at batch 2:" in out
    assert plot.exists() and plot.with_suffix(".pdf").exists()


def test_tune_verify_json(capsys):
    assert (
        main(
            [
                "tune",
                "--draft",
                "draft-ngram",
                *TINY,
                "--trees",
                "none",
                "--policies",
                "none",
                "--verify",
                "--top",
                "1",
                "--no-plot",
                "--json",
            ]
        )
        == 0
    )
    data = json.loads(capsys.readouterr().out)
    assert {r["config"] for r in data["rows"]} == {"autoregressive", "gamma=1", "gamma=2"}
    assert {v["batch"] for v in data["verified"]} == {1, 2}
    assert all(v["measured"] > 0 and v["predicted"] > 0 for v in data["verified"])
    assert data["plot"] == []


def test_tune_on_hf_folders_with_a_prompts_file(tmp_path, capsys):
    transformers = pytest.importorskip("transformers")
    for seed, width in ((0, 32), (1, 16)):
        config = transformers.GPT2Config(n_layer=1, n_embd=width, n_head=2, vocab_size=300, n_positions=64)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path / f"m{seed}")
    prompts = tmp_path / "prompts.txt"
    prompts.write_text("def main(\nimport os\n\n")
    code = main(
        [
            "tune",
            "--target",
            f"hf:{tmp_path / 'm0'}",
            "--draft",
            f"hf:{tmp_path / 'm1'}",
            "--prompts",
            str(prompts),
            *TINY,
            "--trees",
            "none",
            "--prompt-len",
            "20",
            "--no-plot",
            "--json",
        ]
    )
    assert code == 0
    data = json.loads(capsys.readouterr().out)
    assert data["settings"]["prompt_len"] == len("import os")  # cut to the shortest prompt
    assert "policy ConfidenceThreshold(0.4, top)" in {r["config"] for r in data["rows"]}


@pytest.mark.parametrize(
    "args, word",
    [
        (["--draft", "no-such-model"], "no-such-model"),
        (["--trees", "2xa"], "--trees"),
        (["--policies", "greedy:1"], "--policies"),
        (["--prompts", "/nonexistent/prompts.txt"], "prompts.txt"),
        (["--batches", "0"], "--batches"),
        (["--target", "hf:/nonexistent/folder"], "not a local directory"),
    ],
)
def test_tune_bad_input_is_one_line(args, word):
    proc = run_cli(*args, "--no-plot")
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert word in proc.stderr


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA is available here")
def test_tune_cuda_without_cuda():
    proc = run_cli("--device", "cuda", "--no-plot")
    assert proc.returncode == 2 and "CUDA" in proc.stderr


def test_parsers():
    assert parse_trees("none") == [] and parse_trees("2x1x1") == [(2, 1, 1)]
    assert parse_policies("entropy:1.5") == [("entropy", 1.5)]

"""Issue 27: sizes refused up front, flags named (not API arguments), nothing silently ignored.

Each case runs the real command in a subprocess, as a user meets it: one line on stderr naming
the flag, exit status 2, no traceback, and -- for sizes -- an estimate of time and memory and the
way to raise the limit, within seconds (the refused requests ran 240 s or allocated 5-15 GiB).
"""

import subprocess
import sys
import time

import pytest

from spectheory.app.cli_args import cli_message


def run_cli(*args, timeout=120, env=None):
    return subprocess.run(
        [sys.executable, "-m", "spectheory.app.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
    )


def one_line_error(proc):
    assert "Traceback" not in proc.stderr, proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


SIZES = [
    (["analyze", "--horizon", "10000000"], "--horizon"),  # ran 240 s silently to 1.5 GB
    (["analyze", "--vocab", "4", "--states", "10000000"], "--states"),  # passed, then MemoryError
    (["simulate", "--runs", "100000000"], "--runs"),
    (["decode", "--tree", "50x50x50"], "--tree"),  # tried to allocate 15.2 GiB
    (["decode", "--tree", "1000x1000x1000"], "--tree"),
]


@pytest.mark.parametrize("args,flag", SIZES, ids=[" ".join(a) for a, _ in SIZES])
def test_big_requests_are_refused_up_front_with_an_estimate(args, flag):
    t0 = time.perf_counter()
    line = one_line_error(run_cli(*args))
    assert time.perf_counter() - t0 < 60
    assert line.split("error: ")[1].startswith(f"{flag}:"), line
    assert "would take about" in line and "iB" in line, line
    assert "--max-seconds" in line and "--max-memory" in line, line


def test_limits_can_be_raised_or_lowered_by_flag():
    line = one_line_error(run_cli("analyze", "--horizon", "2000", "--gammas", "2", "--max-seconds", "0.001"))
    assert "--horizon" in line and "limit 0.0 s" in line, line
    proc = run_cli("analyze", "--horizon", "2000", "--gammas", "2", "--max-seconds", "inf", "--json")
    assert proc.returncode == 0, proc.stderr
    line = one_line_error(run_cli("analyze", "--vocab", "300", "--max-memory", "1M"))
    assert "--vocab" in line and "limit" in line and "1.0 MiB" in line, line


def test_environment_limit_is_read():
    import os

    env = {**os.environ, "SPECTHEORY_MAX_SECONDS": "0.001"}
    line = one_line_error(run_cli("analyze", "--horizon", "2000", "--gammas", "2", env=env))
    assert "--horizon" in line


MISTAKES = [
    (["analyze", "--gammas", "1,,2"], ["--gammas", "empty item 2"]),  # ran gammas 1,2
    (["simulate", "--gammas", "2,"], ["--gammas", "empty item"]),
    (["analyze", "--gammas", ","], ["--gammas", "empty item"]),
    (["analyze", "--concentration", "nan"], ["--concentration"]),
    (["analyze", "--concentration", "0"], ["--concentration", "> 0"]),
    (["analyze", "--similarity", "inf"], ["--similarity"]),
    (["analyze", "--max-memory", "8X"], ["--max-memory"]),
    (["analyze", "--max-seconds", "-1"], ["--max-seconds"]),
    (["decode", "--verifier", "traversal"], ["--verifier", "--tree"]),  # ran token decoding
    (["decode", "--tree", "0x2"], ["--tree", ">= 1"]),
    (["decode", "--max-seconds", "0"], ["--max-seconds"]),
]


@pytest.mark.parametrize("args,words", MISTAKES, ids=[" ".join(a) for a, _ in MISTAKES])
def test_mistake_is_one_line_naming_the_flag(args, words):
    line = one_line_error(run_cli(*args))
    for w in words:
        assert w in line, (w, line)


def test_long_prompt_blames_the_prompt_not_the_tokens():
    pytest.importorskip("torch")
    line = one_line_error(run_cli("decode", "--prompt", "a" * 300, "--tokens", "4"))
    assert line.split("error: ")[1].startswith("--prompt:"), line  # blamed max_new_tokens
    assert "max_new_tokens" not in line and "prompts[" not in line and "255" in line, line
    line = one_line_error(run_cli("decode", "--prompt", "abc", "--tokens", "300"))
    assert line.split("error: ")[1].startswith("--tokens:") and "253" in line, line
    assert "max_new_tokens" not in line, line


def test_api_names_become_flags():
    assert cli_message(ValueError("prompts[0]: empty prompt"), "decode") == "--prompt: empty prompt"
    msg = cli_message(ValueError("n_states: must be >= 1, got 0"), "analyze")
    assert msg == "--states: must be >= 1, got 0"
    # words that are also flags are left alone inside the sentence
    msg = cli_message(ValueError("verifier: 'x' needs a tree"), "decode")
    assert msg == "--verifier: 'x' needs a tree"


def test_simulate_draws_one_bar_with_one_total_in_lines_when_not_a_terminal():
    """--runs was one bar per 1M-run chunk, each with its own ETA; redraws ran into the table."""
    import os

    env = {**os.environ, "SPECTHEORY_PROGRESS": "lines"}
    proc = run_cli("simulate", "--vocab", "3", "--horizon", "8", "--gammas", "1,2", "--runs", "2000", env=env)
    assert proc.returncode == 0, proc.stderr
    assert "\r" not in proc.stderr and "\r" not in proc.stdout

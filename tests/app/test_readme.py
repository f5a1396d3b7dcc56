"""The README tells the truth: its code runs, its generated blocks match the results files."""

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()


#: The docs pages that took the README's longer sections (their code must run too).
MOVED = ("docs/guide.md", "docs/testing_kit.md")


def test_python_blocks_run():
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks, "the README should show runnable Python"
    for code in blocks:
        exec(compile(code, "README.md", "exec"), {"__name__": "__readme__"})


def test_python_blocks_of_the_guide_pages_run():
    for page in MOVED:
        blocks = re.findall(r"```python\n(.*?)```", (ROOT / page).read_text(), re.S)
        assert blocks, f"{page} should show runnable Python"
        for code in blocks:
            exec(compile(code, page, "exec"), {"__name__": "__readme__"})


def test_readme_points_to_the_pages_it_moved():
    for page in (*MOVED, "docs/results.md"):
        assert page in README and (ROOT / page).exists()


def test_generated_blocks_are_up_to_date():
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "update_readme.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_two_commands_are_shown_and_setup_pins_cpu_torch():
    assert "bash scripts/setup.sh && spectheory reproduce" in README
    assert "bash scripts/setup.sh && python -m pytest -n 2" in README
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "torch==2.13.0" in setup and "import torch" in setup
    ci = (ROOT / ".ci" / "run").read_text()
    assert "scripts/setup.sh" in ci and "pytest -n 2" in ci

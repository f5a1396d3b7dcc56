"""spectheory reproduce names the running step and shows that a long step is alive (issue 14:
one step ran 5 minutes with no sign of life)."""

import sys
from pathlib import Path

import pytest

from spectheory.app import figures_job, reproduce, step_runner

ROOT = Path(__file__).resolve().parents[2]


def test_long_step_prints_its_name_and_a_heartbeat(tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(step_runner, "HEARTBEAT_S", 0.3)
    script = tmp_path / "slow.py"
    script.write_text("import time\nprint('working on chunk 1', flush=True)\ntime.sleep(1.5)\n")
    status = step_runner._run_step("slow_step", [sys.executable, str(script)], str(tmp_path / "slow.log"))
    err = capfd.readouterr().err
    assert status["rc"] == 0
    assert "slow_step started" in err and "slow_step done" in err
    assert "slow_step still running" in err and "working on chunk 1" in err  # the log's last line
    # issue 27: a stale line is not repeated; later heartbeats say how long the log has been quiet
    assert err.count("working on chunk 1") == 1 and "last line unchanged, last written" in err
    assert "\r" not in err  # not a terminal: one line per update


def test_jobs_zero_is_refused_by_the_library():
    with pytest.raises(ValueError, match="jobs"):
        reproduce.reproduce(ROOT, jobs=0)  # was ZeroDivisionError
    with pytest.raises(ValueError, match="jobs"):
        figures_job.run_figures(ROOT, ["fig1_theorem1"], jobs=0)

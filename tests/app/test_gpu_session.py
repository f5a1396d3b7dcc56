"""scripts/gpu_session.sh, the one prepared device run: it names every GPU script, and only those."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_gpu_session_runs_every_gpu_script_that_exists():
    text = (ROOT / "scripts" / "gpu_session.sh").read_text()
    named = set(re.findall(r"^run \S+ \d+ (\S+\.py)", text, flags=re.M))
    on_disk = {p.relative_to(ROOT).as_posix() for p in ROOT.glob("*/*_gpu.py")}
    assert named == on_disk
    budgets = [int(b) for b in re.findall(r"^run \S+ (\d+) ", text, flags=re.M)]
    assert sum(budgets) <= 780  # a lent device gives 15 minutes in all, start-up included


def test_the_real_llm_steps_are_opt_in_and_fit_a_session():
    text = (ROOT / "scripts" / "gpu_session.sh").read_text()
    steps = re.findall(r"^optin (\S+) (\S+) (\S+\.py)", text, flags=re.M)
    assert {name for name, _, _ in steps} == {"real_speed", "tune_real"}
    assert all((ROOT / script).exists() for _, _, script in steps)
    # a budget may scale with real_speed's repeats: $((a+b*REAL_REPEATS)) at its default
    repeats = int(re.search(r"REAL_REPEATS=\$\{REAL_REPEATS:-(\d+)\}", text).group(1))

    def seconds(budget: str) -> int:
        m = re.fullmatch(r"\$\(\((\d+)\+(\d+)\*REAL_REPEATS\)\)", budget)
        return int(m.group(1)) + int(m.group(2)) * repeats if m else int(budget)

    assert sum(seconds(b) for _, b, _ in steps) <= 780

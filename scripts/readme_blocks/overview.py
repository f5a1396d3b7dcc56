"""The README's overview blocks: headline table, key results, job time, per-step times, figure list."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from spectheory.app.reproduce import collect_headlines

from .common import ROOT, _cell, _load, _minutes, _results, _summary


def _headlines(summary: dict) -> list[dict]:
    """Every ``headline`` row of every results file (the main job's own
    :func:`~spectheory.app.reproduce.collect_headlines`), commands from ``summary``.

    A results file written after the summary (a step run on its own) contributes its rows with
    its own ``command``."""
    commands = {s["name"]: s.get("command", "") for s in summary.get("steps", [])}
    rows = collect_headlines(_results())
    for h in rows:
        h["command"] = h["command"] or commands.get(Path(h["source"]).stem, "")
    return rows


def block_headline() -> str:
    summary = _summary()
    if not summary:
        return "_No results yet: run `spectheory reproduce`._\n"
    if summary.get("assembled"):
        head = (
            f"Assembled on {summary['date']} from the full-mode result files of {len(summary['steps'])} "
            f"scripts, each run on its own ({summary['assembled']})."
        )
    else:
        head = (
            f"Main job run on {summary['date']}{' (quick mode)' if summary.get('quick') else ''}; "
            f"{sum(s['rc'] == 0 for s in summary['steps'])}/{len(summary['steps'])} steps succeeded."
        )
    lines = [head, "", "| quantity | value | SE | command |", "|---|---|---|---|"]
    for h in _headlines(summary):
        se = h.get("se")
        lines.append(
            f"| {_cell(h.get('name', '?'))} | {_cell(h.get('value'))} | "
            f"{_cell(se) if se is not None else ''} | `{h.get('command', '')}` |"
        )
    return "\n".join(lines) + "\n"


#: The README's few key results: (results file stem, start of the headline name); the values
#: are read from the files, only the choice of rows is made here.
KEY_RESULTS = (
    ("optimality", "Theorem 1 sum E[TV]"),
    ("optimality", "standard SD expected rejections, Monte Carlo"),
    ("validate_core", "core chains: exact vs Monte Carlo, max |z|"),
    ("sweep_chains", "sweep of 144 random chains"),
    ("decoder_lossless", "decoder lossless: all verdicts as expected"),
    ("decoder_theory", "decoder theory: comparisons outside 5 SE"),
    ("decoder_trees", "decoder trees: (tree, verifier) comparisons outside 5 SE"),
    ("stopping_decoder", "shipped models, (policy, draft) pairs"),
    ("decoder_speed", "speed draft-small: best measured speedup"),
    ("decoder_speed", "speed draft-ngram: best measured speedup"),
    ("cost_batch", "llama2-7b/68m-h200: crossover batch size"),
    ("cost_batch", "llama2-7b/68m-h200: constant-c predicted / achieved speedup"),
    ("cost_validation", "cost validation: predictions within 10%"),
    ("trees_sequoia", "Sequoia positional assumption: largest"),
    ("stopping_policies", "optimum (state): time / path optimum"),
    ("testing_kit_power", "conformance kit: field bugs flagged"),
    ("testing_kit_sequential", "conformance kit, sequential: runs falsely flagging token"),
    ("testing_kit_sequential", "conformance kit, sequential: repeating-randomness"),
    ("proofs", "sympy proofs passing"),
)


def block_key() -> str:
    rows = _headlines(_summary() or {})
    lines = ["| quantity | value | SE | command |", "|---|---|---|---|"]
    for stem, start in KEY_RESULTS:
        for h in rows:
            if h["source"] == f"{stem}.json" and str(h.get("name", "")).startswith(start):
                se = h.get("se")
                lines.append(
                    f"| {_cell(h['name'])} | {_cell(h.get('value'))} | "
                    f"{_cell(se) if se is not None else ''} | `{h.get('command', '')}` |"
                )
                break
    return "\n".join(lines) + "\n" if len(lines) > 2 else "_No results yet: run `spectheory reproduce`._\n"


def _times() -> dict | None:
    return _load(_results() / "reproduce_times.json")


def block_jobtime() -> str:
    rec = _times()
    if not rec or rec.get("mode") != "full" or not rec.get("cold"):
        return (
            "_The main job's time is recorded by the job itself (`results/reproduce_times.json`); no "
            "full run has recorded it yet._\n"
        )
    cold, last = rec["cold"], rec.get("last") or {}
    text = (
        f"The last cold full run of the main job (every step run) took **{_minutes(cold['wall_seconds'])}** "
        f"with `--jobs {cold['jobs']}` on {cold['cores']} cores ({cold['date']}; {rec.get('machine', '')})."
    )
    if last and last.get("date") != cold.get("date"):
        text += (
            f" The last run ({last['date']}) took {_minutes(last['wall_seconds'])}: "
            f"{last['steps_ran']} steps ran, {last['steps_reused']} were reused."
        )
    return text + " Per-step times: `results/reproduce_times.json`.\n"


def block_times() -> str:
    rec = _times()
    if not rec or not rec.get("steps"):
        return "_No time records yet: `spectheory reproduce` writes `results/reproduce_times.json`._\n"
    lines = [block_jobtime(), "", "| step | seconds | reused | measured |", "|---|---:|---|---|"]
    steps = sorted(rec["steps"].items(), key=lambda kv: -float(kv[1].get("seconds", 0)))
    lines += [
        f"| {name} | {float(v.get('seconds', 0)):.0f} | {'yes' if v.get('reused') else 'no'} | "
        f"{v.get('measured', '')} |"
        for name, v in steps
    ]
    return "\n".join(lines) + "\n"


def _caption(script: Path) -> str:
    doc = ast.get_docstring(ast.parse(script.read_text())) or ""
    paragraph = " ".join(doc.strip().split("\n\n")[0].split())
    return re.split(r"(?<=[.!?])(?<! al\.)(?<!e\.g\.)\s+(?=[A-Z(])", paragraph)[
        0
    ]  # one sentence; the full caption is the docstring


def block_figures() -> str:
    lines = []
    scripts = sorted(
        (ROOT / "figures").glob("fig*.py"), key=lambda p: int(re.sub(r"\D", "", p.stem.split("_")[0]))
    )
    for script in scripts:
        png = script.with_suffix(".png")
        if not png.exists():
            continue
        lines += [
            f"**{script.stem}** — {_caption(script)} (`python figures/{script.name}`)",
            "",
            f"![{script.stem}](figures/{png.name})",
            "",
        ]
    return "\n".join(lines) if lines else "_No figures yet: run `spectheory reproduce`._\n"

"""The testing kit's blocks: false alarms, power, sequential tests, hostile inputs; the claimed-vs-exact verdicts."""

from __future__ import annotations

from .common import _cell, _fmt, _load, _results


def block_testing() -> str:
    power = _load(_results() / "testing_kit_power.json")
    alarms = _load(_results() / "testing_kit_false_alarms.json")
    lines = []
    if alarms:
        lines += [
            f"False alarms: the correct reference verifier was flagged in {alarms['runs_flagged']} of "
            f"{alarms['n_seeds']} seeds (expected {alarms['expected_flags']:.2g}; `{alarms['command']}`)."
            + _hostile_alarms(alarms),
            "",
        ]
    if power:
        lines += [
            f"Statistical power (`{power['command']}`): samples per instance at which the kit flags each bug "
            f"class in every one of {power['repeats']} seeds; verdict: the checks that flagged it, most "
            'frequent first, or "passes" for a correct entry.'
            + (
                " The bug classes met on real engines (`spectheory.testing.gallery_engines`) are searched "
                f"on {', '.join(f'{n:,}' for n in power['engine_grid'])} samples over all families only (—)."
                if power.get("engine_grid")
                else ""
            ),
            "",
            "| bug class | verdict | samples needed (all families) | samples needed (families without exact zeros) |",
            "|---|---|---:|---:|",
        ]
        for r in power["rows"]:
            big = f"> {r.get('grid', power['grid'])[-1]}"
            n, n0 = r["smallest_n_samples"], r.get("zero_free_smallest_n_samples")
            zero_free = "—" if "zero_free_smallest_n_samples" not in r else n0 if n0 is not None else big
            lines.append(
                f"| {_cell(r['description'])} | {_cell(_power_verdict(r))} | {n if n is not None else big} | {zero_free} |"
            )
        lines += ["", _effect_sizes([50, 200, 2000, 20_000])]
    lines += _sequential_rows(_load(_results() / "testing_kit_sequential.json"))
    return "\n".join(lines) + "\n" if lines else "_No conformance-kit results yet._\n"


def _hostile_alarms(alarms: dict) -> str:
    """The false alarms of the reference samplers on the hostile-numerics families, as a sentence ("" if none)."""
    runs = alarms.get("hostile_runs") or {}
    if not runs:
        return ""
    each = "; ".join(
        f"{r['verifier']} {r['runs_flagged']} of {r['n_seeds']} ({r['n_samples']:,} samples per instance, "
        f"`{r.get('command', alarms.get('hostile_command'))}`)"
        for r in runs.values()
    )
    return (
        " On the hostile-numerics families (masked drafts, -inf logits, NaN, float16/bfloat16, ties, "
        f"denormals), falsely flagged: {each}."
    )


def _sequential_rows(seq: dict | None) -> list:
    """The sequential exercise's false alarms and power rows (``testing_kit_sequential.json``)."""
    if not seq:
        return []
    d = seq["defaults"]
    alarms = "; ".join(
        f"{name} {r['runs_flagged']} of {r['n_seeds']}" for name, r in seq["false_alarms"].items()
    )
    lines = [
        "",
        f"Sequential exercise (`{seq['command']}`; `check_sequential`, {d['steps']} calls of {d['batch']} rows "
        f"and {d['chain_steps']} calls on a tiny chain by default): correct samplers falsely flagged in {alarms} "
        f"seeds (expected {next(iter(seq['false_alarms'].values()))['expected_flags']:.2g} each). Randomness "
        f"repeating across calls, flagged in every one of {seq['repeats']} seeds at the fewest calls in sequence:",
        "",
        "| bug class | verdict | calls of 32 rows needed | one-call kit (2,000 samples) |",
        "|---|---|---:|---|",
    ]
    for r in seq["rows"]:
        n = r["smallest_steps"]
        needed = f"> {r['grid'][-1]}" if n is None else (f"<= {n}" if n == r["grid"][0] else n)
        one = ", ".join(r["one_call_kit_failed"]) or "passes"
        lines.append(
            f"| {_cell(r['description'])} | {_cell(', '.join(r['flagged_by']))} | {needed} | {one} |"
        )
    return lines


def _power_verdict(row: dict) -> str:
    """A power row's verdict: the checks that flagged it, or "passes"; then its notes (e.g. target_calls)."""
    notes = row.get("notes") or []
    note = f" (note: {', '.join(notes)})" if notes else ""
    if row["smallest_n_samples"] is None:
        return "passes" + note
    return ", ".join(row["flagged_by"]) + note


def _effect_sizes(sizes: list) -> str:
    """The samples-per-instance claims as effect sizes: the TV each size detects (formula, no run)."""
    from spectheory.testing.instances import FAMILIES
    from spectheory.testing.kit import _plan, n_tests
    from spectheory.testing.stat_tests import detectable_tv

    insts, _ = _plan((3, 5), (1, 3), list(FAMILIES), 0)
    level = 1e-4 / sum(n_tests(i, True) for i in insts)
    tv = ", ".join(f"{n:,}: {detectable_tv(4, n, level):.3g}" for n in sizes)
    return (
        "As effect sizes: the law of one position over 5 tokens (4 degrees of freedom, the default "
        f"run's level {level:.2g} per test) is flagged with probability at least 1/2 once its total "
        f"variation from the target reaches, per samples per instance, {tv} "
        "(formula: **Power by effect size** in `docs/testing_kit.md`)."
    )


def block_verdicts() -> str:
    res = _load(_results() / "verification_rules.json")
    if not res:
        return "_No results yet: run `python simulations/verification_rules.py`._\n"
    sun = [i for i, lab in enumerate(res["instances"]) if lab.startswith("Sun")]
    rand = [i for i, lab in enumerate(res["instances"]) if not lab.startswith("Sun")]
    lines = [
        f"Exact values (`{res['command']}`; Fractions): accepted drafts per round (naive HSD: the drafted "
        "tokens it emits, with its target calls per round) and the total variation of "
        "the first gamma + 1 tokens from the target on Sun et al.'s binary example, and the largest total "
        f"variation over {len(rand)} random first-order chains (gamma = 2).",
        "",
        "| rule | source | claim | accepted, gamma = 2 / 3 | target calls, gamma = 2 / 3 | TV, gamma = 2 / 3 "
        "| largest TV, random chains | verdict |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rules"]:
        cells = r["instances"]
        worst = max((cells[i] for i in rand), key=lambda c: c["tv_float"], default=None)
        lines.append(
            f"| `{r['rule']}` | {_cell(r['source'])} | {_cell(r['claim'])} | "
            f"{' / '.join(cells[i]['mean_accepted'] for i in sun)} | "
            f"{' / '.join(cells[i].get('target_calls', '1') for i in sun)} | {' / '.join(cells[i]['tv'] for i in sun)} | "
            f"{worst['tv'] if worst else ''} | {_cell(r['verdict'])} |"
        )
    voc = _load(_results() / "vocabularies.json")
    if voc:
        first, last = voc["rows"][0], voc["rows"][-1]
        lines += [
            "",
            f"Different vocabularies (`{voc['command']}`, `docs/vocabularies.md`): TLI (Timor et al., ICML 2025) "
            f"is claimed lossless; its exact total variation from the target on a tiny corpus is {voc['tiny_tv']} "
            f"(Fractions): lossless, as claimed. On a byte-level target its exact tokens per call fall from "
            f"{_fmt(first['tokens_per_call'])} (the same vocabulary) to {_fmt(last['tokens_per_call'])} with "
            f"{last['merges']} merged draft tokens (draft mass on the shared tokens {_fmt(last['mass_overlap'])}).",
        ]
    lines += _schedule_verdicts()
    return "\n".join(lines) + "\n"


def _schedule_verdicts() -> list:
    """The claimed-vs-exact rows of the verification schedules (exact output laws, Fractions)."""
    res = _load(_results() / "verification_schedules.json")
    if not res or "claims" not in res:
        return []
    lines = [
        "",
        f"Verification schedules under batch load (`{res['command']}`, `docs/verification_schedules.md`): "
        "the exact output law of one scheduled step (Fractions), on DSpark's Appendix A and on the kit's "
        "instances (batches of 1 and 2 rows, gamma = 2).",
        "",
        "| schedule | source | claim | first token, Appendix A | largest TV, kit instances | verdict |",
        "|---|---|---|---|---|---|",
    ]
    for label, c in res["claims"].items():
        kit = res["kit"][label]
        claimed_lossless = c["claim"].startswith("lossless")
        if kit["passed"]:
            verdict = "lossless, as claimed" if claimed_lossless else "lossless (claimed biased)"
        else:
            verdict = "biased (claimed lossless)" if claimed_lossless else "biased, as claimed"
        law = " / ".join(res["appendix_a"]["first_token_law"][label])
        lines.append(
            f"| {label} | {_cell(c['source'])} | {_cell(c['claim'])} | {law} | {kit['max_tv']} | {verdict} |"
        )
    return lines

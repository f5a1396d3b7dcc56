"""The decoder's blocks: speed on the shipped models, the models themselves, GPU runs, the speculation cache."""

from __future__ import annotations

import json

from .common import ROOT, _cell, _fmt, _load, _results


def block_speed() -> str:
    lines = []
    sim = _load(_results() / "simulator_speed.json")
    if sim:
        s = sim["setting"]
        lines += [
            f"Monte Carlo simulator (`{sim['command']}`, {sim['date']}, {sim['machine'].get('cpu_count')} cores; "
            f"V = {s['vocab']}, gamma = {s['gamma']}, T = {s['horizon']}):",
            "",
            "| compared with | ratio |",
            "|---|---|",
            f"| per-run, per-token reference loop (`rng.choice`) | {sim['speedup_vs_reference']:.0f}x faster |",
            f"| per-token loop with `searchsorted(cumsum)` | {sim['speedup_vs_tuned_reference']:.0f}x faster |",
            f"| floor: the same number of categorical draws, vectorised | {sim['ratio_to_floor']:.2f}x the floor's time |",
            "",
        ]
    ex = _load(_results() / "exact_scaling.json")
    if ex:
        b = ex.get("budget_case")  # None in quick mode: the budget case is a full-size run
        case = (
            f"V = S = {b['V']}, T = {b['T']}, gamma = {b['gamma']} in {b['seconds_recursion']:.2f} s wall "
            f"({ex.get('blas_threads')} BLAS thread(s)); "
            if b
            else ""
        )
        lines += [
            f"Exact recursions (`{ex['command']}`): {case}time grows as "
            f"V^{ex['slope_V']:.2f} and T^{ex['slope_T']:.2f}.",
            "",
        ]
    spc = _load(_results() / "sparse_chain_speed.json")
    if spc and spc.get("cases"):
        c0 = spc["cases"][0]
        times = ", ".join(
            f"{c['cpu_seconds']:.1f} s ({c['nnz_per_row']:.0f} tokens/row; {c['seconds']:.1f} s wall"
            + (f" at load {c['load_average_1min']:.0f})" if c.get("load_average_1min") is not None else ")")
            for c in spc["cases"]
        )
        lines += [
            f"Sparse exact engine (`{spc['command']}`, `docs/sparse_chains.md`): `chain.protocol(T = {c0['T']}, "
            f"gamma = {c0['gamma']})` on a first-order chain at V = S = {c0['V']} in {times} of cpu time on "
            f"one thread (the time on a free core; goal < {spc['goal_seconds']:g} s). With every row's tail "
            f"1e-3, the certified interval of the untruncated chain's tokens per call is "
            f"[{c0['tokens_per_call_interval'][0]:.3f}, {c0['tokens_per_call_interval'][1]:.3f}] around "
            f"{c0['tokens_per_call']:.3f} ({c0['nnz_per_row']:.0f} tokens/row; {c0['bound_cpu_seconds']:.1f} s cpu).",
            "",
        ]
    dec = _load(_results() / "decoder_speed.json")
    if dec and isinstance(dec.get("headline"), list):
        lines += [
            f"Real decoder on CPU (`{dec.get('command', 'python benchmarks/decoder_speed.py')}`):",
            "",
            "| quantity | value | note |",
            "|---|---|---|",
        ]
        prof = _load(_results() / "decoder_profile.json") or {}
        rows = dec["headline"] + (prof.get("headline") if isinstance(prof.get("headline"), list) else [])
        lines += [f"| {_cell(h['name'])} | {_cell(h['value'])} | {_cell(h.get('note', ''))} |" for h in rows]
        lines += [
            "",
            "The floor, the ceilings and where the rest of a round goes: `docs/decoder_floor.md` "
            "(`python benchmarks/decoder_profile.py`).",
            "",
        ]
    return "\n".join(lines) if lines else "_No benchmark results yet._\n"


def block_models() -> str:
    metas = [(_load(p), p) for p in sorted((ROOT / "spectheory" / "decoder" / "weights").glob("*.json"))]
    metas = [(m, p) for m, p in metas if m]
    if not metas:
        return "_No shipped models yet._\n"
    lines = [
        "| name | architecture | parameters | held-out loss (nats/byte) | acceptance vs target | made by |",
        "|---|---|---|---|---|---|",
    ]
    for m, _ in metas:
        acc = m.get("acceptance_vs_target") or m.get("heldout_acceptance")
        if isinstance(acc, dict):
            acc = f"{acc.get('mean', acc.get('value', 0)):.3f} ± {acc.get('se', 0):.3f}"
        loss = m.get("heldout_loss_nats_per_byte")
        lines.append(
            f"| {m.get('name')} | {m.get('architecture', '')} | {m.get('num_params', '')} | "
            f"{_fmt(loss) if loss is not None else ''} | {acc if acc is not None else '—'} | "
            f"`{m.get('training_command', '')}` |"
        )
    return "\n".join(lines) + "\n"


def block_gpu() -> str:
    runs = [(_load(p), p) for p in sorted(_results().glob("*gpu*.json"))]
    runs = [(r, p) for r, p in runs if r and "cuda" in json.dumps(r.get("device", "")).lower()]
    if not runs:
        return "_No GPU run committed yet (this project's sessions get a GPU only some of the time)._\n"
    lines = []
    for r, p in runs:
        lines += [
            f"`{p.name}`: {r.get('date', '?')}, {r.get('device', '?')}, torch {r.get('torch', '?')}, "
            f"`{r.get('command', '?')}`" + (f" ({r['seconds']:.0f} s)" if "seconds" in r else ""),
            "",
            "| quantity | value | note |",
            "|---|---|---|",
        ]
        lines += [
            f"| {_cell(h['name'])} | {_fmt(h['value'])} | {_cell(h.get('note', ''))} |"
            for h in r.get("headline", [])
        ]
        lines.append("")
    return "\n".join(lines)


def block_cache() -> str:
    res = _load(_results() / "speculation_cache.json")
    if not res:
        return "_Run `python simulations/speculation_cache.py`._\n"
    b = res["budgets"]
    mean = {
        key: sum(c[key][-1] for c in res["curves"]) / len(res["curves"])
        for key in ("optimal", "oracle", "geometric", "uniform")
    }
    fits = [f["worst_relative_error"] for f in res["fits"]]
    tv = res["ssd_tv"]
    return (
        f"Exact (`python simulations/speculation_cache.py`; `docs/speculation_cache.md`; fig30), K = {res['k']}, "
        f"{len(res['curves'])} random {res['vocab']}-token chains, budget B = {b[-1]}: mean hit probability "
        f"{mean['optimal']:.3f} for the optimal allocation with the draft's own guesses, {mean['oracle']:.3f} "
        f"with oracle guesses, {mean['geometric']:.3f} for the paper's geometric allocation and "
        f"{mean['uniform']:.3f} for a uniform one; the power-law miss fit is off by up to "
        f"{100 * max(fits):.0f}% (median chain {100 * sorted(fits)[len(fits) // 2]:.0f}%). The exact TV of "
        f"the first {res['n_tokens']} tokens SSD emits: {tv['correct']} for the correct engine, "
        f"{tv['miss_uses_primary_q']} when a miss verifies the backup's tokens against the primary's "
        f"probabilities, {tv['saguaro_uses_original_q']} when Saguaro-sampled tokens are verified against "
        f"the unscaled draft law.\n"
    )

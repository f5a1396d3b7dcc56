"""The real LLM's blocks (SmolLM2-135M, issue 38): the theory on it, its drafts, its speed against HF."""

from __future__ import annotations

from .common import _load, _minutes, _results


def block_realtheory() -> str:
    res = _load(_results() / "real_theory.json")
    if not res:
        return "_Run `python simulations/real_theory.py` (the `real` extra)._\n"
    loss, ap, ab = res["lossless"], res["along_path"], res["abstraction"]
    verdicts = "; ".join(
        f"{r['rule']} p = {r['pvalue']:.2g} ({r['expected']}{'' if r['ok'] else ', UNEXPECTED'})"
        for r in loss["rows"]
        if r["prompt"] == loss["rows"][0]["prompt"]
    )
    tpc = ", ".join(
        f"gamma = {r['gamma']}: {r['predicted']:.4g} +- {r['predicted_se']:.2g} vs {r['measured']:.4g} +- "
        f"{r['measured_se']:.2g} (z = {r['z']:+.2f})"
        for r in ap["tokens_per_call"]
    )
    times = ", ".join(
        f"gamma = {r['gamma']}: {r['predicted']:.3g} vs {r['measured']:.3g} +- {r['measured_se']:.2g} s (z = {r['z']:+.2f})"
        for r in ap["time"]
    )
    agree = sum(r["agree"] for r in ap["rows"])
    p8 = ab["protocol_T256_gamma8"]
    lo, hi = p8["certified_tokens_per_call"]
    return (
        f"Measured (`python simulations/real_theory.py`; `docs/real_model.md`; fig32), target {res['target']} "
        f"(V = {ab['vocab_size']}), draft {res['draft']}. Lossless on pooled cells, {loss['samples']} two-token "
        f"samples per check, prompt {loss['rows'][0]['prompt']!r}: {verdicts}. Along target paths, T = "
        f"{ap['horizon']}, {ap['sequences']} sequences: {agree} of {len(ap['rows'])} predicted statistics "
        f"within 5 SE of the decoder's; tokens per call predicted vs measured {tpc}; time {times}. "
        f"Last-token Markov abstraction: {ab['n_states']} states, top-{ab['top_k']} rows "
        f"({ab['nnz_per_row']:.0f} stored entries a row, mean target tail {ab['mean_target_tail']:.3g}); "
        f"`chain.protocol(T=256, gamma=8)` in {ab['protocol_seconds']:.2f} s: {p8['tokens_per_call']:.4g} "
        f"tokens per call, certified interval for the untruncated chain [{lo:.3g}, {hi:.3g}]."
        + (
            f" Time needed: {_minutes(res['wall_seconds'])} ({res['device']}, {res['date'][:10]}).\n"
            if "wall_seconds" in res
            else "\n"
        )
    )


def block_realdrafts() -> str:
    res = _load(_results() / "real_drafts.json")
    if not res:
        return "_Run `python simulations/train_real_draft.py` and `python simulations/real_drafts.py` (the `real` extra)._\n"
    lines = [
        f"Measured (`python simulations/real_drafts.py`; `docs/real_model.md`; fig35), target {res['target']}, "
        f"{res['paths']} target paths of {res['horizon']} tokens after {len(res['prompts'])} held-out prompts, "
        f"one CPU thread, batch 1 for the speedups ({res['speed_prompts']} prompts; their SE by the delta method). "
        "Acceptance: exact 1 - E[TV] along the target's paths (SE over paths); c: draft step / target step; "
        "gamma: the best predicted; tokens per call predicted along the paths vs the decoder's "
        f"({res['sequences']} sequences).",
        "",
        "| draft | family | acceptance | c | gamma | tokens/call predicted | measured (z) | speedup predicted | measured |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        se = r["measured_speedup_se"]
        lines.append(
            f"| {r['draft']} | {r['family']} | {r['alpha']:.4f} +- {r['alpha_se']:.4f} | {r['cost_ratio']:.3g} | "
            f"{r['gamma']} | {r['predicted_tokens_per_call']:.3f} +- {r['predicted_tokens_per_call_se']:.3f} | "
            f"{r['measured_tokens_per_call']:.3f} +- {r['measured_tokens_per_call_se']:.3f} ({r['z']:+.2f}) | "
            f"{r['predicted_speedup']:.3f} | {r['measured_speedup']:.3f} +- {'n/a' if se is None else f'{se:.3f}'} |"
        )
    info = res.get("distillation")
    if info:
        runs = info["runs"]
        parts = ", ".join(
            f"{o} {r['curve'][0]['alpha']:.4f} -> {r['heldout_alpha']:.4f} (tokens/call at gamma = {r['gamma']}: "
            f"{r['heldout_tokens_per_call']:.4f})"
            for o, r in sorted(runs.items())
        )
        any_run = next(iter(runs.values()))
        lines += [
            "",
            f"Distillation objectives (`simulations/train_real_draft.py`, {any_run['steps']} steps of "
            f"{any_run['batch_size']} target paths each, one thread): held-out acceptance from the 2-layer early "
            f"exit {parts}; shipped: {info['default']}.",
        ]
    return "\n".join(lines) + "\n"


def block_realspeed(name: str = "real_speed.json") -> str:
    res = _load(_results() / name)
    if not res:
        return "_Run `python benchmarks/real_speed.py` (the `real` extra)._\n"
    lines = [
        f"Measured (`{res['command']}`), {res['model']} in float32 on {res['device']}, {res['threads']} "
        f"thread(s), {res['new_tokens']} new tokens after each prompt, median of {res['repeats']} interleaved "
        f"repeats ({res['date'][:10]}; time needed: {_minutes(res['wall_seconds'])}). Seconds per prompt set; speedup over the package's autoregressive decoder; package / HF "
        "speed (> 1: the package is faster); the cost model's predicted / measured decoding time:",
        "",
        "| prompts, temperature | configuration | seconds | tokens per call | speedup vs ar | package / HF | cost model |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for key, r in res["results"].items():
        hf = r["package_over_hf"]
        cm = r["cost_model"]["predicted_over_measured"]
        for c, sec in r["seconds"].items():
            lines.append(
                f"| {key} | {c} | {sec:.2f} | {r['tokens_per_call'][c]:.2f} | {r['speedup_vs_ar'][c]:.2f} | "
                + (f"{hf[c]:.2f}" if c in hf else "")
                + " | "
                + (f"{cm[c]:.2f}" if c in cm else "")
                + " |"
            )
    return "\n".join(lines) + "\n\n" + _realspeed_summary(res) + "\n"


def _realspeed_summary(res: dict) -> str:
    """The block's reading, every number from the file: the plain decoders' ratio (the same
    algorithm on both sides: the run's noise floor), the draft rows', prompt lookup's, and how
    many cost predictions fall within 10%."""

    def span(values: list) -> str:
        return f"{min(values):.2f}-{max(values):.2f}"

    rs = res["results"].values()
    plain = [r["package_over_hf"]["ar"] for r in rs]
    if all("package_over_hf_range" in r for r in rs):  # the pairs' own spread, not their medians'
        plain = [x for r in rs for x in r["package_over_hf_range"]["ar"]]
    pl = [r["package_over_hf"]["pl"] for r in rs]
    drafted = [v for r in rs for c, v in r["package_over_hf"].items() if c.startswith("spec_")]
    cost = [v for r in rs for v in r["cost_model"]["predicted_over_measured"].values()]
    near = sum(abs(v - 1) <= 0.1 for v in cost)
    table = ""
    if all("predicted_over_measured_rounds_only" in r["cost_model"] for r in rs):  # the drafted-token term
        only = [v for r in rs for v in r["cost_model"]["predicted_over_measured_rounds_only"].values()]
        table = (
            f", with the loop's work per drafted token fitted on the same configuration's other "
            f"sets; without that term {span(only)}, {sum(abs(v - 1) <= 0.1 for v in only)} within 10%"
        )
    if all("predicted_over_measured_table" in r["cost_model"] for r in rs):  # without the speed scale
        raw = [v for r in rs for v in r["cost_model"]["predicted_over_measured_table"].values()]
        paired = all("predicted_over_measured_medians" in r["cost_model"] for r in rs)
        per_repeat = all("target_width_tables" in r.get("per_repeat", {}) for r in rs)
        tables = (
            "each repeat's tables alone give"
            if per_repeat
            else "the table alone, measured before the runs, gives"
        )
        if all("predicted_over_measured_ar_scale" in r["cost_model"] for r in rs):
            ar = [v for r in rs for v in r["cost_model"]["predicted_over_measured_ar_scale"].values()]
            table += (
                f"; scaled by a probe of the machine's speed just before each run: the autoregressive "
                f"run's speed for every run of its repeat gives {span(ar)}, {tables} {span(raw)}"
            )
        else:
            when = "run of the same repeat" if paired else "runs of the same set"
            table += f"; scaled by the machine's speed during the autoregressive {when}: {tables} {span(raw)}"
    # the package's largest speedup over its own autoregressive decoder, whichever row it is
    best_key, best_cfg = max(
        (
            (key, c)
            for key, r in res["results"].items()
            for c in r["speedup_vs_ar"]
            if c == "pl" or c.startswith("spec_")
        ),
        key=lambda kc: res["results"][kc[0]]["speedup_vs_ar"][kc[1]],
    )
    best_row = res["results"][best_key]
    pairs = [
        (r["tokens_per_call"][c], r["tokens_per_call"][h])
        for key, r in res["results"].items()
        if key.endswith("T=0")
        for c, h in _hf_pairs(r)
        if c.startswith("spec_")
    ]
    same = sum(abs(a - b) < 1e-9 for a, b in pairs)
    loops = ""
    if all("outside_forwards_seconds" in r for r in rs):  # the loops' own work, pair by pair
        share = [
            r["outside_forwards_seconds"][c] / r["outside_forwards_seconds"][h]
            for r in rs
            for c, h in _hf_pairs(r)
            if r["outside_forwards_seconds"][h] > 0
        ]
        loops = (
            f" Outside the models' forwards (the loops' own work, which the machine's load moves "
            f"far less than the total) the package spends {span(share)} of the time HF does, "
            f"pair by pair."
        )
    extra = ""
    if all("draft_forwards" in r for r in rs):  # where the loops' work differs: draft forwards
        # HF re-fits its confidence threshold online when scikit-learn is installed: then the
        # confidence-rule pairs run different schedules and only the fixed-length pairs compare
        refit = bool(res.get("hf_confidence_refit"))

        def diffs(same_schedule: bool) -> list:  # greedy sets only: both sides' rounds determined
            return [
                r["draft_forwards"][c] - r["draft_forwards"][h]
                for key, r in res["results"].items()
                if key.endswith("T=0")
                for c, h in _hf_pairs(r)
                if c.startswith("spec_") and (not refit or "policy" not in c) == same_schedule
            ]

        matched = diffs(True)
        extra = (
            " At greedy decoding the package makes exactly HF's number of draft-model forwards in "
            "every pair of the same configuration (medians over repeats; it drafts with HF's "
            "horizon, below)."
            if not any(matched)
            else f" At greedy decoding the package makes {min(matched):+g} to {max(matched):+g} "
            "draft-model forwards per prompt set against HF in the same configuration (medians "
            "over repeats; the horizon convention below)."
        )
        if refit:
            other = diffs(False)
            extra += (
                " HF re-fitted its confidence threshold online in this run (scikit-learn was "
                "installed), so the confidence-rule pairs ran different schedules there: "
                f"{min(other):+g} to {max(other):+g} draft-model forwards per set."
            )
    return (
        f"Reading: the two plain decoders run the same algorithm, and their ratio spans {span(plain)} "
        "over the repeats: that is this run's noise for a ratio. With a draft model the package runs at "
        f"{span(drafted)} of HF's speed; at greedy, where both sides' rounds are determined, "
        f"{same} of {len(pairs)} pairs take the same tokens per call. Its prompt lookup runs at "
        f"{span(pl)} of HF's. The largest speedup on {res['device']} is {best_cfg}'s: "
        f"{best_row['speedup_vs_ar'][best_cfg]:.2f}x the package's autoregressive decoder on "
        f"{best_key} ({best_row['tokens_per_call'][best_cfg]:.2f} tokens a call). The cost model predicts "
        f"{near} of {len(cost)} package runs' decoding times within 10% (predicted / measured "
        f"{span(cost)}{table}).{loops}{extra}"
    )


def block_realspeedgpu() -> str:
    """The same benchmark's GPU run (``real_speed_gpu.json``, from ``scripts/gpu_session.sh``)."""
    if not (_results() / "real_speed_gpu.json").exists():
        return "_No GPU run yet: step `real_speed` of `scripts/gpu_session.sh` on a lent device._\n"
    return block_realspeed("real_speed_gpu.json")


def _hf_pairs(r: dict) -> list:
    """Each package configuration of a results row and its HF counterpart."""
    out = [(c, h) for c, h in (("ar", "hf_ar"), ("pl", "hf_pl")) if c in r["seconds"] and h in r["seconds"]]
    for c in r["package_over_hf"]:
        h = c.replace("spec_g", "hf_assist_g").replace("spec_policy", "hf_assist_default")
        if c.startswith("spec_") and h in r["seconds"]:
            out.append((c, h))
    return out

"""The theory's blocks: accepted lengths, block drafters, lossy rules, verification schedules."""

from __future__ import annotations

from .common import _load, _results


def block_al() -> str:
    res = _load(_results() / "acceptance_length.json")
    if not res:
        return "_Run `python simulations/acceptance_length.py`._\n"
    syn, ex = res["synthetic"], res["example"]
    lat, ctl = syn["latency"], syn["controller"]
    checker = res["checker"]
    flagged = {name: [r for r in rows if r["verdict"] not in ("ok",)] for name, rows in checker.items()}
    worst = flagged["last row from a worse drafter"]
    return (
        f"Exact (`python simulations/acceptance_length.py`; `docs/acceptance_length.md`; fig29): on "
        f"{res['n_chains']} random chains, AL(K) for K = 1..{res['ks'][-1]} falls on {res['falls']} "
        f"(the theorem: never, for prefix-only drafters) and is non-concave on {res['nonconcave']}; "
        f"the two-token chain gives {ex[0]:.4g}, {ex[1]:.4g}, {ex[2]:.4g} at K = 1, 2, 3 (not concave). "
        f"The checker flags {len(flagged['honest'])} row(s) of a simulated honest table and "
        f"{len(worst)} of one whose last row came from a worse drafter"
        + (f" ({worst[0]['verdict']})" if worst else "")
        + f". At i.i.d. alpha = {syn['alpha']}, K = {syn['k']}, a request of {syn['n_tokens']} tokens needs "
        f"p99 {lat['true']['p99']} target calls under the true accepted-count law and "
        f"{lat['min-variance']['p99']} under the min-variance synthetic schedule of the same mean "
        f"(sd {lat['true']['sd']:.2f} vs {lat['min-variance']['sd']:.2f}); HF's adaptive schedule "
        f"drafts {ctl['true']['mean_length']:.2f} tokens a round in the long run under the true law, "
        f"{ctl['min-variance']['mean_length']:.2f} under the synthetic one.\n"
    )


def block_blockdraft() -> str:
    res = _load(_results() / "block_drafters.json")
    if not res:
        return "_Run `python simulations/block_drafters.py`._\n"
    K, c = res["ks"][-1], res["curves"]
    worst = max(abs(m["z"]) for m in res["monte_carlo"])
    fall = res["falling_example"]
    return (
        f"Exact (`python simulations/block_drafters.py`; `docs/block_drafters.md`; fig34), a random "
        f"{res['shown_chain']['vocab']}-token chain at K = {K}: tokens per target call "
        + ", ".join(f"{v[-1]:.3f} ({name})" for name, v in c.items())
        + f"; exact = Monte Carlo for every head (worst |z| {worst:.2f}). On {res['n_chains']} random chains "
        f"the acceptance-LP head beats the oracle marginal head on {res['wins']['LP over oracle marginals']}: "
        f"cross-entropy's optimum is not a parallel head's ceiling. A round-start head's AL(K) can fall: "
        f"{fall[2]:.4g} at K = 3, {fall[3]:.4g} (19/6) at K = 4."
        + _head_trees_sentence(res)
        + _block_heads_sentence()
        + "\n"
    )


def _head_trees_sentence(res: dict) -> str:
    trees = res.get("head_trees")
    if not trees:
        return ""
    n = res["tree_sizes"][-1]
    cells = ", ".join(f"{v[-1]:.3f} ({name})" for name, v in trees.items())
    return (
        f" DDTree-style trees of {n} nodes grown from the heads' per-depth laws (exact, "
        f"T = {res['tree_horizon']}), tokens per call: {cells}."
    )


def _block_heads_sentence() -> str:
    res = _load(_results() / "decoder_block_heads.json")
    if not res:
        return " _Run `python simulations/decoder_block_heads.py` for the Medusa heads in the decoder._"
    rows = res["rows"]
    worst = max(abs(r["z"]) for r in rows)
    cells = ", ".join(
        f"K = {r['gamma']} at T = {r['temperature']:g}: {r['tokens_per_call_predicted']:.2f} / "
        f"{r['tokens_per_call_measured']:.2f}"
        for r in rows
    )
    return (
        f" In the real decoder (`python simulations/decoder_block_heads.py`), the shipped Medusa heads as "
        f"block rounds, tokens per call predicted along target paths / measured over {res['sequences']} "
        f"sequences of {res['horizon']} tokens: {cells} (worst |z| {worst:.2f} over the calls' combined SE)."
    )


def block_lossy() -> str:
    res = _load(_results() / "lossy_rules_front.json")
    if not res:
        return "_Run `python simulations/lossy_rules_front.py`._\n"
    lines = [
        f"Exact (`python simulations/lossy_rules_front.py`; `docs/sequence_front.md`; fig31), random "
        f"{res['vocab']}-token chain {res['chains'][0]['seed']}, T = {res['horizon']}, bonus off for the fronts, "
        f"gamma = {res['gamma']} with the bonus for tokens per call:",
        "",
        "| rule | setting | rejections | sequence TV | TV front | sequence KL | KL front | tokens per call |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in res["rows"]:
        if r["chain"] != res["chains"][0]["seed"]:
            continue
        lines.append(
            f"| {r['family']} | {r['param']} | {r['rejections']:.4f} | {r['sequence_tv']:.4f} | "
            f"{r['tv_front']:.4f} | {r['sequence_kl']:.4f} | {r['kl_front']:.4f} | {r['tokens_per_call']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def block_schedules() -> str:
    res = _load(_results() / "verification_schedules.json")
    if not res:
        return "_Run `python simulations/verification_schedules.py`._\n"
    B = res["batches"]
    cost = res["cost"]
    lines = [
        f"Exact (`{res['command']}`; `docs/verification_schedules.md`; fig33): a step takes "
        f"{', '.join(f'{t:g}' for t in cost['times'])} time units padded to "
        f"{', '.join(map(str, cost['buckets']))} scored positions; "
        f"gamma = {res['gamma']}; throughput of each schedule over that of the best non-anticipating "
        f"(sequential admission) schedule, mean of {res['n_instances']} random batches per B, and on a batch "
        f"of {len(res['chain_batch']['states'])} chain rows (gamma = {res['chain_batch']['gamma']}); the kit's "
        "verdict on its exact output law:",
        "",
        "| schedule | " + " | ".join(f"B = {b}" for b in B) + " | chain rows | kit |",
        "|---|" + "---|" * (len(B) + 2),
    ]
    for label, kit in res["kit"].items():
        cells = " | ".join(f"{res['ratio'][str(b)][label]['mean']:.3f}" for b in B)
        verdict = "lossless" if kit["passed"] else f"biased (TV {kit['max_tv']})"
        lines.append(f"| {label} | {cells} | {res['chain_batch']['ratio'][label]:.3f} | {verdict} |")
    app, cal = res["appendix_a"], res["calibration"]
    lines += [
        "",
        f"DSpark's Appendix A: the retrospective search's first token has law "
        f"{' / '.join(app['first_token_law']['retrospective argmax'])} (target 7/10 / 3/10), and so has the "
        f"argmax on live survival without the break on a row whose confidence depends on its first draft; "
        f"dropping a verified draft whose own draft probability is below 1/2 gives P(y2 = 0 | y1 = 0) = "
        f"{app['drop_by_own_probability']['p_y2_0_given_y1_0']} (target 7/10). Exact calibration for the next "
        f"slot's acceptance (ECE / AUROC): per-state acceptance {cal['conf']['ece']:.3f} / {cal['conf']['auroc']:.3f}, "
        f"max probability {cal['max_prob']['ece']:.3f} / {cal['max_prob']['auroc']:.3f}, top-2 margin "
        f"{cal['margin']['ece']:.3f} / {cal['margin']['auroc']:.3f}, 1 - normalised entropy "
        f"{cal['entropy']['ece']:.3f} / {cal['entropy']['auroc']:.3f}; chained against the exact prefix survival, "
        f"the chained per-state acceptance has ECE {cal['conf']['survival_ece']:.3f}.",
    ]
    return "\n".join(lines) + "\n"

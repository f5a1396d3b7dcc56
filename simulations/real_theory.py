"""The theory on a real pretrained LLM (SmolLM2-135M, V = 49,152; issue 38, item 3): lossless output law, along-path predictions against the decoder, and the exact engine on the model's sparse Markov abstraction.

1. Lossless: the package's two-token check (spectheory.validation.lossless_check) on pooled
   cells (spectheory.validation.pooled_law: the first tokens of probability >= 5/n, their
   continuations of joint probability >= 5/n, rest cells; exact probabilities from the target's
   forward passes) at fixed short English prompts, n decoder samples each: the real rule must
   pass (p > 1e-4); a rule drawing the correction from the draft must fail (p < 1e-6); a rule
   drawing it from the target is reported with the exact TV of its first-token law on the cells
   and the smallest TV the test detects at n (kit's detectable_tv): against a draft that almost
   never agrees with the target it is nearly lossless and need not fail.
2. Along target paths (spectheory.validation.compare_theory, bonus on): tokens per call,
   rejections and draft tokens predicted by the exact round bookkeeping along target paths
   against the decoder's measured runs per gamma, agreement |z| < 5 over the combined SE; time
   predicted by spectheory.tuning.cost_insitu.predict_held_out (forwards fitted on the other
   configurations' logged calls, the rounds law along the same paths) against the measured
   decoder calls (mean and SE over repeats).
3. The last-token Markov abstraction at V = 49,152 (spectheory.abstraction.sparse_markov: states
   = the last token seen along the target paths + one back-off state, rows = averages of the
   models' exact laws over the visited positions, top-k entries per position, the dropped mass as
   tails): chain.protocol(T=256, gamma=8) timed, its exact tokens per call at the decoder's
   horizon beside the measured ones, and the certified truncation intervals.

Figure (figures/fig32_real_theory.py): predicted against measured tokens per call per gamma, with
5-SE bars, and the abstraction's exact value with its certified interval.

Usage: python simulations/real_theory.py [--quick] [--out DIR] [--drafts NAME] [--samples N]
"""

from __future__ import annotations

import time

import numpy as np
import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result

P_PASS, P_FAIL, Z_MAX = 1e-4, 1e-6, 5.0
TARGET = "smollm2-135m"
LOSSLESS_PROMPTS = ("Once upon a", "The capital of France is")
PATH_PROMPTS = (
    "Once upon a time, in a small village",
    "The capital of France is a city that",
    "Here is a short recipe for pancakes:",
    "The weather today is sunny and the",
)


def load_draft(target, name: str):
    """The draft ``name``: made from the loaded ``target`` when it is one of the target's named
    drafts (``smollm2-135m:exit2``: the early exit sharing its weights), else loaded by name."""
    from spectheory.decoder import load_model
    from spectheory.decoder.real_drafts import is_draft_name, make_draft

    return (make_draft(target, name) if is_draft_name(name) else load_model(name)), name


def lossless(target, draft, tok, n: int, gamma: int, rules, seed: int = 0) -> list[dict]:
    from spectheory.decoder.logits import logits_to_probs
    from spectheory.testing.stat_tests import detectable_tv
    from spectheory.validation import lossless_check
    from spectheory.validation.pooled_law import exact_cell_law

    rows = []
    for text in LOSSLESS_PROMPTS:
        prompt = tok.encode(text)
        law = exact_cell_law(target, prompt, 2, mass=5.0 / n)
        one = exact_cell_law(target, prompt, 1, mass=5.0 / n)
        with torch.inference_mode():
            ids = torch.tensor([prompt])
            p = logits_to_probs(target(ids)[0, -1].double()).numpy()
            q = logits_to_probs(draft(ids)[0, -1].double()).numpy()
        overlap, tv = np.minimum(p, q), 0.5 * np.abs(p - q).sum()
        first_laws = {None: p, "target_correction": overlap + tv * p, "draft_correction": overlap + tv * q}
        idx = one.cell_index(np.arange(p.size))
        for rule in rules:
            t0 = time.perf_counter()
            r = lossless_check(target, draft, prompt, n, gamma, seed=seed, rule=rule, law=law, batch_size=256)
            cells_tv = 0.5 * np.abs(
                np.bincount(idx, weights=first_laws[rule], minlength=one.n_cells) - one.probs
            )
            effect = float(cells_tv.sum())
            detect = detectable_tv(r["dof"], n, P_FAIL)
            expect = "pass" if rule is None else ("fail" if effect >= detect else "undetectable")
            ok = r["pvalue"] > P_PASS if rule is None else (r["pvalue"] < P_FAIL or expect == "undetectable")
            r.update(
                prompt=text,
                expected=expect,
                ok=bool(ok),
                first_token_tv_on_cells=effect,
                detectable_tv=float(detect),
                acceptance=float(overlap.sum()),
                seconds=time.perf_counter() - t0,
            )
            rows.append(r)
            print(
                f"lossless {text!r:28s} {r['rule']:18s} cells {r['cells']:4d} chi2 {r['statistic']:9.1f} "
                f"p {r['pvalue']:.2e}  TV(first, cells) {effect:.4f} (detectable {detect:.4f})  "
                f"{expect}: {'ok' if ok else 'UNEXPECTED'}"
            )
    return rows


def token_prompts(tok, texts) -> np.ndarray:
    enc = [tok.encode(t) for t in texts]
    L = min(len(e) for e in enc)
    return np.array([e[:L] for e in enc], dtype=np.int64)


def tokens_per_call(rows: list[dict], T: int, gammas) -> list[dict]:
    """Tokens per call ``T / calls`` from the target-call rows (SE by the delta method)."""
    out = []
    for r in rows:
        if r["stat"] != "target_calls":
            continue
        pm, ps, mm, ms = r["predicted"], r["predicted_se"], r["measured"], r["measured_se"]
        out.append(
            {
                "gamma": r["gamma"],
                "predicted": T / pm,
                "predicted_se": T * ps / pm**2,
                "measured": T / mm,
                "measured_se": T * ms / mm**2,
                "z": r["z"],
                "agree": r["agree"],
            }
        )
    return out


def timed(
    target, draft, prompts, T: int, gammas, n_paths: int, batch: int, repeats: int
) -> tuple[list[dict], object]:
    from spectheory.kinds import PathRound
    from spectheory.tuning.cost_insitu import measure_logged, predict_held_out
    from spectheory.tuning.cost_predict import sample_target_paths
    from spectheory.validation.path_stats import zscore

    sample = sample_target_paths(target, draft, prompts, T, n_paths=n_paths, rng=0, trees=False)
    rows = [list(p) for p in prompts]
    configs = [None] + [PathRound(g) for g in gammas]
    runs, order = [], []
    for rep in range(repeats):
        for rnd in configs:
            run, _ = measure_logged(target, draft, rows, T, rnd, batch, repeat=rep, seed=rep)
            runs.append(run)
            order.append(rnd)
    out = []
    for g in gammas:
        mine = [(run, rnd) for run, rnd in zip(runs, order) if rnd is not None and rnd.gamma == g]
        preds = [predict_held_out(sample, rnd, run, runs, rng=0) for run, rnd in mine]
        measured = np.array([run.seconds for run, _ in mine])
        pm, ps = (
            float(np.mean([p["seconds"] for p in preds])),
            float(np.mean([p["seconds_se"] for p in preds])),
        )
        mm, ms = float(measured.mean()), float(measured.std(ddof=1) / np.sqrt(len(measured)))
        z = float(zscore(pm, ps, mm, ms))
        out.append(
            {
                "gamma": g,
                "batch": batch,
                "predicted": pm,
                "predicted_se": ps,
                "measured": mm,
                "measured_se": ms,
                "z": z,
                "agree": bool(abs(z) < Z_MAX),
                "repeats": repeats,
            }
        )
        print(
            f"time gamma={g}: predicted {pm:.2f} +- {ps:.2f} s, measured {mm:.2f} +- {ms:.2f} s (z = {z:+.2f})"
        )
    return out, sample


def abstraction(target, draft, sample, T: int, gammas, top_k: int) -> dict:
    from spectheory.abstraction.sparse_markov import fit_last_token_chain

    t0 = time.perf_counter()
    chain = fit_last_token_chain(target, draft, sample.paths, sample.prompt_len, top_k=top_k)
    fit_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    res = chain.protocol(256, 8)
    protocol_s = time.perf_counter() - t0
    bound = chain.truncation_bound(256, 8)
    at_T = []
    for g in gammas:
        r = chain.protocol(T, g)
        lo, hi = chain.truncation_bound(T, g).tokens_per_call_interval
        at_T.append({"gamma": g, "tokens_per_call": T / float(r.target_calls), "certified": [lo, hi]})
    out = {
        "construction": "states = last token seen along the target paths + 1 back-off state; rows = "
        "averages of the models' exact laws over the visited positions, top-k per position, tails = "
        "average dropped mass",
        "vocab_size": chain.vocab_size,
        "n_states": chain.n_states,
        "top_k": top_k,
        "nnz_per_row": float(chain.nnz_per_row),
        "max_target_tail": float(chain.target_tail.max()),
        "max_draft_tail": float(chain.draft_tail.max()),
        "mean_target_tail": float(chain.target_tail[:-1] @ chain.visits[:-1] / chain.visits[:-1].sum()),
        "mean_draft_tail": float(chain.draft_tail[:-1] @ chain.visits[:-1] / chain.visits[:-1].sum()),
        "fit_seconds": fit_s,
        "protocol_seconds": protocol_s,
        "protocol_T256_gamma8": {
            "target_calls": float(res.target_calls),
            "tokens_per_call": 256 / float(res.target_calls),
            "certified_tokens_per_call": list(bound.tokens_per_call_interval),
        },
        "at_decoder_horizon": at_T,
    }
    print(
        f"abstraction: S = {chain.n_states}, V = {chain.vocab_size}, protocol(256, 8) in {protocol_s:.2f} s: "
        f"{out['protocol_T256_gamma8']['tokens_per_call']:.4f} tokens/call, certified "
        f"{out['protocol_T256_gamma8']['certified_tokens_per_call']}"
    )
    return out


def main(argv=None):
    from spectheory.decoder import load_model, pretrained

    t_start = time.perf_counter()
    ap = decoder_script_parser(__doc__, threads=1)
    ap.add_argument("--samples", type=int, default=None, help="decoder samples per lossless check")
    args = ap.parse_args(argv)
    if not pretrained.is_available(TARGET):
        print(f"real_theory: skipped: {pretrained.INSTALL_HINT}")
        return 0
    torch.set_num_threads(args.threads)
    q = args.quick
    n = args.samples or (120 if q else 400)
    gammas = [1, 2] if q else [1, 2, 4]
    T, N = (6, 4) if q else (24, 32)
    target = load_model(TARGET, device=args.device)
    tok = target.tokenizer
    draft, draft_name = load_draft(target, args.drafts or f"{TARGET}:exit2")
    print(f"target {TARGET} (V = {target.vocab_size}), draft {draft_name}")
    rules = [None, "draft_correction"] + ([] if q else ["target_correction"])
    loss_rows = lossless(target, draft, tok, n, 1, rules)
    prompts = token_prompts(tok, PATH_PROMPTS[: 2 if q else 4])
    t0 = time.perf_counter()
    from spectheory.validation import compare_theory

    theory = compare_theory(
        target, draft, prompts, T, gammas, N, seed=0, bonus_settings=(True,), batch_size=16, z_max=Z_MAX
    )
    theory["seconds"] = time.perf_counter() - t0
    tpc = tokens_per_call(theory["rows"], T, gammas)
    for r in tpc:
        print(
            f"tokens/call gamma={r['gamma']}: predicted {r['predicted']:.4f} +- {r['predicted_se']:.4f}, "
            f"measured {r['measured']:.4f} +- {r['measured_se']:.4f} (z = {r['z']:+.2f})"
        )
    time_rows, sample = timed(target, draft, prompts, T, gammas, N, len(prompts), 2 if q else 3)
    abst = abstraction(target, draft, sample, T, gammas, 16 if q else 256)
    theory_ok = all(r["agree"] for r in theory["rows"])
    heads = [
        {
            "name": "real LLM lossless (pooled cells, V = 49,152): min p-value of the real rule",
            "value": min(r["pvalue"] for r in loss_rows if r["rule"] == "decoder"),
            "note": f"{n} two-token samples per check, pass if > {P_PASS}",
        },
        {
            "name": "real LLM lossless: max p-value of the draft-correction rule",
            "value": max(r["pvalue"] for r in loss_rows if r["rule"] == "draft_correction"),
            "note": f"must be < {P_FAIL}",
        },
        {
            "name": "real LLM along-path predictions within 5 SE",
            "value": f"{sum(r['agree'] for r in theory['rows'])}/{len(theory['rows'])}",
            "note": f"calls, rejections, draft tokens, accepted counts; gammas {gammas}, T = {T}, {N} sequences",
        },
        {
            "name": "real LLM sparse Markov abstraction: chain.protocol(T=256, gamma=8) seconds",
            "value": abst["protocol_seconds"],
            "note": f"{abst['n_states']} states at V = {abst['vocab_size']}",
        },
    ]
    data = {
        "target": TARGET,
        "draft": draft_name,
        "lossless": {"samples": n, "gamma": 1, "rows": loss_rows},
        "along_path": {
            "gammas": gammas,
            "horizon": T,
            "sequences": N,
            "prompts": [tok.decode(p) for p in prompts],
            "tokens_per_call": tpc,
            "time": time_rows,
            "rows": theory["rows"],
            "acceptance_predicted": theory["acceptance_predicted"],
            "all_agree": theory_ok,
        },
        "abstraction": abst,
        "wall_seconds": time.perf_counter() - t_start,
    }
    path = write_result(args.out, "real_theory", data, heads, device=args.device)
    print("wrote", path)
    ok = all(r["ok"] for r in loss_rows) and theory_ok
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

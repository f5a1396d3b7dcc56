"""Losslessness of the real decoder, measured (issue 4, validation 1).

For a fixed held-out prompt, the target's exact joint law of the next two bytes (all
256**2 pairs, by batched forward passes) is compared by a pooled Pearson chi-square test
with the two bytes the speculative decoder emits, per draft model and gamma in {1, 2}; a
deliberately broken rule (correction drawn from the target instead of the residual, and
from the draft) must fail the same test. Pass: p > 1e-4 for the decoder, p < 1e-6 for the
broken rules (fixed seeds).

Usage: python simulations/decoder_lossless.py [--quick] [--out DIR] [--target NAME] [--drafts a,b]
"""

from __future__ import annotations

import time

import torch

from spectheory.app.decoder_scripts import decoder_script_parser, write_result
from spectheory.decoder import load_model
from spectheory.decoder.corpus import heldout_windows
from spectheory.validation import exact_two_token_law, lossless_check, resolve_models
from spectheory.validation.lossless import BROKEN_RULES

P_PASS, P_FAIL = 1e-4, 1e-6


def main(argv=None):
    ap = decoder_script_parser(__doc__)
    ap.add_argument("--samples", type=int, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    target_name, drafts = resolve_models(args.target, args.drafts)
    n = args.samples or (3000 if args.quick else 10000)
    gammas = [1] if args.quick else [1, 2]
    target = load_model(target_name, device=args.device)
    prompt = heldout_windows(1, 12 if args.quick else 32)[0].tolist()
    law = exact_two_token_law(target, prompt, device=args.device)
    rows = []
    print(f"target={target_name}  prompt={bytes(prompt)!r}  samples={n}")
    print(
        f"{'draft':12s} {'gamma':>5s} {'rule':18s} {'chi2':>10s} {'dof':>5s} {'p-value':>10s} {'TV(emp)':>8s}  verdict"
    )
    for name in drafts:
        draft = load_model(name, device=args.device)
        for g in gammas:
            # the broken rules only need to fail once each: on the first draft at the first gamma
            rules = [None, *BROKEN_RULES] if (name == drafts[0] and g == gammas[0]) else [None]
            for rule in rules:
                t0 = time.perf_counter()
                r = lossless_check(
                    target, draft, prompt, n, g, seed=1000 * g, rule=rule, law=law, device=args.device
                )
                ok = r["pvalue"] > P_PASS if rule is None else r["pvalue"] < P_FAIL
                r.update(
                    draft=name,
                    expected="pass" if rule is None else "fail",
                    ok=bool(ok),
                    seconds=time.perf_counter() - t0,
                )
                rows.append(r)
                print(
                    f"{name:12s} {g:5d} {r['rule']:18s} {r['statistic']:10.1f} {r['dof']:5d} {r['pvalue']:10.2e} "
                    f"{r['tv_empirical']:8.4f}  {'ok' if ok else 'UNEXPECTED'}"
                )
    real = [r for r in rows if r["rule"] == "decoder"]
    broken = [r for r in rows if r["rule"] != "decoder"]
    headline = [
        {
            "name": "decoder lossless: min chi-square p-value (real rule)",
            "value": min(r["pvalue"] for r in real),
            "note": f"{len(real)} tests, {n} two-token samples each, pass if > {P_PASS}",
        },
        {
            "name": "decoder lossless: max p-value of broken rules",
            "value": max(r["pvalue"] for r in broken),
            "note": f"{len(broken)} tests, must be < {P_FAIL}",
        },
        {
            "name": "decoder lossless: all verdicts as expected",
            "value": all(r["ok"] for r in rows),
            "note": "",
        },
    ]
    path = write_result(
        args.out,
        "decoder_lossless",
        {"target": target_name, "prompt": prompt, "samples": n, "rows": rows},
        headline,
        device=args.device,
    )
    print("wrote", path)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())

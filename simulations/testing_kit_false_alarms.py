"""False-alarm rate of the conformance kit: the correct verifier under many seeds.

Runs the full default kit (``check_verifier`` with its defaults: 9 instances x 20,000 rounds,
Bonferroni split of alpha = 1e-4) on the reference verifier under ``--seeds`` different seeds
(default 200) and counts the runs that flag it; the claim is at most one flag in 200 runs
(expected 200 * 1e-4 = 0.02). Also collects every per-test p-value, to show they are
calibrated (about a fraction x of them below x). The batched reference is used for speed
(the same rule as ``reference_verify``); ``--per-round`` uses ``reference_verify`` itself.
Writes ``testing_kit_false_alarms.json`` into ``--out``.

Usage: python simulations/testing_kit_false_alarms.py [--quick] [--seeds N] [--per-round] [--out DIR]
"""
import sys
import time

import numpy as np
from tqdm.auto import tqdm

from spectheory.app.results import headline, script_parser, write_results
from spectheory.testing import as_batched, check_verifier, reference_verify, reference_verify_batch


def run(n_seeds: int, per_round: bool = False, n_samples: int = 20_000, first_seed: int = 10_000):
    """Run the kit ``n_seeds`` times on the reference verifier; return the summary dict."""
    verify = reference_verify if per_round else as_batched(reference_verify_batch)
    flagged, pvals, failed_checks = [], [], {}
    t0 = time.perf_counter()
    n_tests = None
    for s in tqdm(range(first_seed, first_seed + n_seeds), desc="seeds"):
        report = check_verifier(verify, seed=s, n_samples=n_samples, progress=False)
        n_tests = report.n_tests
        if not report.passed:
            flagged.append(s)
            for name in report.failed:
                failed_checks[name] = failed_checks.get(name, 0) + 1
        for c in report.checks:
            pvals += [f.p_value for f in c.findings if np.isfinite(f.p_value)]
    p = np.array(pvals)
    levels = [0.1, 0.01, 1e-3, 1e-4]
    return {
        "verifier": "reference_verify" if per_round else "reference_verify_batch",
        "n_seeds": n_seeds, "n_samples": n_samples, "alpha": 1e-4, "tests_per_run": n_tests,
        "runs_flagged": len(flagged), "flagged_seeds": flagged, "failed_checks": failed_checks,
        "expected_flags": n_seeds * 1e-4,
        "p_values": {"count": int(p.size),
                     "fraction_below": {str(a): float(np.mean(p < a)) for a in levels},
                     "min": float(p.min()) if p.size else None},
        "seconds": round(time.perf_counter() - t0, 1),
    }


def main(argv=None):
    ap = script_parser(__doc__)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--per-round", action="store_true", help="use reference_verify (slower)")
    args = ap.parse_args(argv)
    res = run(10 if args.quick else args.seeds, per_round=args.per_round)
    write_results(__file__, res, args.out, argv, [
        headline("conformance kit: runs flagging the correct verifier", f"{res['runs_flagged']}/{res['n_seeds']}",
                 note=f"expected {res['expected_flags']:.3g} (alpha = 1e-4 per run)"),
    ])
    print(f"{res['runs_flagged']} of {res['n_seeds']} runs flagged the correct verifier "
          f"(expected {res['expected_flags']:.3g}); {res['p_values']['count']} p-values, fraction below "
          + ", ".join(f"{a}: {v:.4f}" for a, v in res["p_values"]["fraction_below"].items()))
    return res


if __name__ == "__main__":
    sys.exit(0 if main()["runs_flagged"] <= 1 else 1)

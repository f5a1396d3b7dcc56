"""False-alarm rate of the conformance kit: correct samplers under many seeds.

Runs the full default kit (``check_verifier`` with its defaults: 9 instances, Bonferroni
split of alpha = 1e-4, torch draws routed through the kit) on correct samplers under
``--seeds`` different seeds (default 200) and counts the runs that flag them; the claim is at
most one flag in 200 runs (expected 200 * 1e-4 = 0.02). Also collects every per-test
p-value, to show they are calibrated (about a fraction x of them below x). Samplers:

* ``numpy`` -- the batched reference (the token Verifier's rule), 20,000 rounds per instance;
* ``torch`` -- ``torch_reference_sampler`` through ``from_torch_sampler``, ``--torch-samples``
  rounds per instance (default 2,000);
* ``hf`` -- the installed HuggingFace ``_speculative_sampling`` through
  ``hf_speculative_sampling()`` (skipped without transformers), ``--hf-samples`` rounds per
  instance (default 100: it runs one round per call, 0.3-0.7 ms each, so 200 seeds at
  20,000 would take hours on 2 cores).

The smaller sizes keep a full run within about half an hour on a shared 2-core machine; the
Bonferroni level per test does not depend on the sample size, and the chi-square tests pool
cells to at least 20 expected counts, so the false-alarm bound holds at any size. Its acceptance test ``r <= p/q`` with float32
  ``torch.rand_like`` accepts a draft of target probability 0 when ``r == 0`` (probability
  2**-24 per draw): the exact ``forced_uniforms`` check flags that in every run, as a true
  finding; the false-alarm count for it is over the other checks, and the forced finding is
  reported apart.

``--hostile`` runs the hostile-numerics families instead (``spectheory.testing.hostile``:
masked drafts, masked targets, ``-inf`` logits, a NaN, float16 / bfloat16, ties, denormals;
``families=HOSTILE_SET``, 8 instances) on the correct samplers -- ``numpy`` and ``rounds``
(``reference_verify`` one round per call, ``--rounds-samples`` rounds per instance, default
300: about 2 s a seed on a shared core) -- and merges them into the ``testing_kit_false_alarms.json`` already in ``--out`` under
``hostile_runs`` (each with its command; a later ``--hostile`` run adds or replaces samplers), leaving the
default runs as they were. The refusal of the
NaN input (a ``ValueError``) is correct there and counts as no flag.

``--timing`` adds a timing run of the whole kit on the HuggingFace function at the default
20,000 samples (``jobs`` = 1 and 2); ``simulations/testing_kit_hf_timing.py`` is the
dedicated measurement. Writes
``testing_kit_false_alarms.json`` into ``--out``.

Usage: python simulations/testing_kit_false_alarms.py [--quick] [--seeds N] [--samplers numpy,torch,hf]
       [--hf-samples N] [--torch-samples N] [--jobs J] [--processes P] [--timing] [--out DIR]
       python simulations/testing_kit_false_alarms.py --hostile [--samplers numpy,rounds] [--seeds N] [--out DIR]
"""

import sys
import time
from pathlib import Path

import numpy as np
from tqdm.auto import tqdm

from spectheory.app.results import headline, script_parser, write_results
from spectheory.testing import as_batched, check_verifier, reference_verify, reference_verify_batch
from spectheory.testing.hostile import HOSTILE_SET

TRUE_FINDINGS = {"hf": {"forced_uniforms"}}
DEFAULT_SAMPLERS = "numpy,torch,hf"


def make(name):
    """The sampler called ``name``, or None where its package is missing."""
    if name == "numpy":
        return as_batched(reference_verify_batch)
    if name == "rounds":
        return reference_verify
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    if name == "torch":
        from spectheory.testing.torch_adapter import from_torch_sampler, torch_reference_sampler

        return from_torch_sampler(torch_reference_sampler)
    if name == "hf":
        try:
            from spectheory.testing.adapters import hf_speculative_sampling

            return hf_speculative_sampling()
        except ImportError:
            return None
    raise ValueError(f"samplers: unknown {name!r}")


def run(
    n_seeds: int,
    sampler: str = "numpy",
    n_samples: int = 20_000,
    first_seed: int = 10_000,
    jobs: int = 1,
    families=None,
):
    """Run the kit ``n_seeds`` times on one correct sampler (on ``families``, default the kit's);
    return the summary dict (None if unavailable)."""
    verify = make(sampler)
    if verify is None:
        return None
    expected_true = TRUE_FINDINGS.get(sampler, set())
    flagged, true_flags, pvals, failed_checks = [], 0, [], {}
    t0 = time.perf_counter()
    n_tests = None
    for s in tqdm(range(first_seed, first_seed + n_seeds), desc=f"seeds ({sampler})"):
        report = check_verifier(
            verify, rng=s, n_samples=n_samples, progress=False, jobs=jobs, families=families
        )
        n_tests = report.n_tests
        false = [c for c in report.failed if c not in expected_true]
        true_flags += any(c in expected_true for c in report.failed)
        if false:
            flagged.append(s)
        for name in report.failed:
            failed_checks[name] = failed_checks.get(name, 0) + 1
        for c in report.checks:
            pvals += [f.p_value for f in c.findings if np.isfinite(f.p_value)]
    p = np.array(pvals)
    levels = [0.1, 0.01, 1e-3, 1e-4]
    return {
        "sampler": sampler,
        "verifier": getattr(verify, "__name__", sampler),
        "families": families,
        "n_seeds": n_seeds,
        "n_samples": n_samples,
        "alpha": 1e-4,
        "tests_per_run": n_tests,
        "runs_flagged": len(flagged),
        "flagged_seeds": flagged,
        "failed_checks": failed_checks,
        "true_findings_expected": sorted(expected_true),
        "runs_with_true_findings": true_flags,
        "expected_flags": n_seeds * 1e-4,
        "p_values": {
            "count": int(p.size),
            "fraction_below": {str(a): float(np.mean(p < a)) for a in levels},
            "min": float(p.min()) if p.size else None,
        },
        "seconds": round(time.perf_counter() - t0, 1),
    }


def summary_fields(out: dict) -> dict:
    """Top-level ``runs_flagged``, ``n_seeds``, ``expected_flags`` of the reference (numpy) run, as the
    README generator reads them, and the largest false-flag count over all samplers."""
    ref = out["runs"].get("numpy") or next(iter(out["runs"].values()), None)
    if ref:
        out.update({k: ref[k] for k in ("runs_flagged", "n_seeds", "expected_flags", "n_samples")})
        out["max_runs_flagged_any_sampler"] = max(r["runs_flagged"] for r in out["runs"].values())
    return out


def _run_task(n_seeds, sampler, n_samples, jobs, families=None):
    return run(n_seeds, sampler, n_samples=n_samples, jobs=jobs, families=families)


def hostile(args, argv):
    """``--hostile``: the correct samplers on the hostile families, merged into the results in ``--out``."""
    import json

    from spectheory.app.results import default_results_dir

    seeds = 3 if args.quick else args.seeds
    names = args.samplers.split(",") if args.samplers != DEFAULT_SAMPLERS else ["numpy", "rounds"]
    sizes = {
        "numpy": 20_000,
        "rounds": args.rounds_samples,
        "torch": args.torch_samples,
        "hf": args.hf_samples,
    }
    runs = {}
    for name in names:
        res = run(seeds, name, 1000 if args.quick else sizes[name], families=list(HOSTILE_SET))
        if res is not None:
            runs[name] = res
            print(f"hostile, {name}: {res['runs_flagged']} of {res['n_seeds']} runs flagged falsely")
    path = (
        default_results_dir(__file__) if args.out is None else Path(args.out)
    ) / "testing_kit_false_alarms.json"
    old = json.loads(path.read_text())
    shown = list(sys.argv[1:] if argv is None else argv)
    if "--out" in shown:  # where the output went is not part of what made it
        del shown[shown.index("--out") : shown.index("--out") + 2]
    command = " ".join(["python simulations/testing_kit_false_alarms.py", *shown])
    for r in runs.values():
        r["command"] = command
    old["hostile_runs"] = {**old.get("hostile_runs", {}), **runs}  # a later run adds or replaces samplers
    old["hostile_command"] = command
    old["hostile_runs_flagged"] = max(r["runs_flagged"] for r in old["hostile_runs"].values())
    keep = {k: v for k, v in old.items() if k not in ("date", "machine", "command", "headline")}
    heads = [headline(h["name"], h["value"], note=h.get("note")) for h in old.get("headline", [])]
    heads = [h for h in heads if "hostile families" not in h["name"]] + [
        headline(
            f"conformance kit: runs falsely flagging {r['verifier']} on the hostile families",
            f"{r['runs_flagged']}/{r['n_seeds']}",
            note=f"{r['n_samples']} samples per instance; expected {r['expected_flags']:.3g}",
        )
        for r in old["hostile_runs"].values()
    ]
    write_results(__file__, keep, args.out, old["command"].split()[2:], heads)
    return {"runs": runs}


def time_hf(n_samples: int = 20_000, jobs=(1, 2)):
    """Wall and CPU seconds of one whole kit run on the HuggingFace function (None without it)."""
    verify = make("hf")
    if verify is None:
        return None
    check_verifier(verify, n_samples=10, progress=False)  # imports and warm-up
    out = []
    for j in jobs:
        t, c = time.perf_counter(), time.process_time()
        report = check_verifier(verify, n_samples=n_samples, rng=0, progress=False, jobs=j)
        out.append(
            {
                "jobs": j,
                "n_samples": n_samples,
                "wall_seconds": round(time.perf_counter() - t, 1),
                "parent_cpu_seconds": round(time.process_time() - c, 1),
                "failed": report.failed,
                "rounds": n_samples * report.config["n_instances"],
            }
        )
    return out


def main(argv=None):
    ap = script_parser(__doc__)
    ap.add_argument("--seeds", type=int, default=200)
    ap.add_argument("--samplers", default=DEFAULT_SAMPLERS)
    ap.add_argument("--hostile", action="store_true", help="the hostile families; merged into --out")
    ap.add_argument("--rounds-samples", type=int, default=300)
    ap.add_argument("--hf-samples", type=int, default=100)
    ap.add_argument("--torch-samples", type=int, default=2000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument(
        "--timing", action="store_true", help="also time HF at 20,000 samples (see testing_kit_hf_timing.py)"
    )
    ap.add_argument(
        "--no-timing",
        action="store_true",
        help="no timing run (the default; kept so recorded commands rerun)",
    )
    ap.add_argument("--processes", type=int, default=1, help="samplers run in parallel processes")
    args = ap.parse_args(argv)
    if args.hostile:
        return hostile(args, argv)
    seeds = 3 if args.quick else args.seeds
    runs = {}
    names = args.samplers.split(",")
    tasks = [
        (
            seeds,
            name,
            (100 if name == "hf" else 1000)
            if args.quick
            else {"hf": args.hf_samples, "torch": args.torch_samples}.get(name, 20_000),
            args.jobs,
        )
        for name in names
    ]
    if args.processes > 1:  # one forked process per sampler
        import multiprocessing as mp

        with mp.get_context("fork").Pool(min(args.processes, len(tasks))) as pool:
            results = pool.starmap(_run_task, tasks)
    else:
        results = [_run_task(*t) for t in tasks]
    for name, res in zip(names, results):
        if res is not None:
            runs[name] = res
            print(
                f"{name}: {res['runs_flagged']} of {res['n_seeds']} runs flagged falsely "
                f"(expected {res['expected_flags']:.3g}); true findings in {res['runs_with_true_findings']} runs"
            )
    timing = time_hf() if (args.timing and not args.quick) else None
    out = summary_fields(
        {"runs": runs, "hf_timing": timing, "note": "machine shared by several jobs: timings are noisy"}
    )
    heads = [
        headline(
            f"conformance kit: runs falsely flagging {r['verifier']}",
            f"{r['runs_flagged']}/{r['n_seeds']}",
            note=f"{r['n_samples']} samples per instance; expected {r['expected_flags']:.3g}",
        )
        for r in runs.values()
    ]
    if timing:
        heads.append(
            headline(
                "conformance kit: whole kit on HuggingFace _speculative_sampling, 20,000 samples",
                " / ".join(f"{t['wall_seconds']} s (jobs={t['jobs']})" for t in timing),
                note="wall clock on a shared 2-core machine",
            )
        )
    write_results(__file__, out, args.out, argv, heads)
    return out


if __name__ == "__main__":
    sys.exit(0 if all(r["runs_flagged"] <= 1 for r in main()["runs"].values()) else 1)

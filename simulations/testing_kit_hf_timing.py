"""Cost of one whole conformance-kit run on HuggingFace's ``_speculative_sampling``, and of seeding torch.

Runs ``check_verifier(hf_speculative_sampling(), n_samples=20_000)`` (9 instances, about
180,000 calls of the per-round function, torch draws routed through the kit) with
``jobs`` = 2 forked workers (``--jobs``), and records the wall-clock seconds and the CPU
seconds of the parent and its workers (``resource.getrusage``): on a machine shared with
other jobs the wall clock overstates the cost, the CPU seconds divided by the workers do
not. Also times the two ways to seed torch per call: ``torch.manual_seed`` (seeds every
device) and ``torch.default_generator.manual_seed`` (the CPU generator only).
Needs torch and transformers (exits with a message otherwise). Writes
``testing_kit_hf_timing.json`` into ``--out``.

Usage: python simulations/testing_kit_hf_timing.py [--quick] [--jobs J] [--out DIR]
"""

import resource
import time

from spectheory.app.results import headline, script_parser, write_results


def cpu_seconds() -> float:
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def seeding_cost(n: int = 2000) -> dict:
    """Microseconds per call of the two ways to seed torch."""
    import torch

    out = {}
    for name, fn in (
        ("torch.manual_seed", torch.manual_seed),
        ("torch.default_generator.manual_seed", torch.default_generator.manual_seed),
    ):
        t = time.perf_counter()
        for i in range(n):
            fn(i)
        out[name] = round((time.perf_counter() - t) / n * 1e6, 2)
    return out


def main(argv=None):
    ap = script_parser(__doc__)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args(argv)
    try:
        from spectheory.testing import check_verifier
        from spectheory.testing.adapters import hf_speculative_sampling

        verify = hf_speculative_sampling()
    except ImportError as exc:
        print(f"skipped: {exc}")
        return None
    n = 200 if args.quick else 20_000
    check_verifier(verify, n_samples=10, progress=False)  # imports and warm-up
    c0, t0 = cpu_seconds(), time.perf_counter()
    report = check_verifier(verify, n_samples=n, rng=0, jobs=args.jobs)
    wall, cpu = time.perf_counter() - t0, cpu_seconds() - c0
    res = {
        "n_samples": n,
        "jobs": args.jobs,
        "rounds": n * report.config["n_instances"],
        "wall_seconds": round(wall, 1),
        "cpu_seconds": round(cpu, 1),
        "cpu_seconds_per_worker": round(cpu / args.jobs, 1),
        "us_per_round_cpu": round(cpu / (n * report.config["n_instances"]) * 1e6, 1),
        "failed": report.failed,
        "seeding_us_per_call": seeding_cost(),
        "note": "machine shared with other jobs: the wall clock is inflated; cpu_seconds_per_worker is "
        "the wall time the run would take on 2 free cores",
    }
    write_results(
        __file__,
        res,
        args.out,
        argv,
        [
            headline(
                f"conformance kit on HuggingFace _speculative_sampling, {n} samples: CPU seconds per worker "
                f"(jobs={args.jobs})",
                res["cpu_seconds_per_worker"],
                note=f"wall {res['wall_seconds']} s on a shared machine",
            ),
            headline(
                "seeding torch per call: manual_seed vs default_generator.manual_seed (us)",
                f"{res['seeding_us_per_call']['torch.manual_seed']} vs "
                f"{res['seeding_us_per_call']['torch.default_generator.manual_seed']}",
            ),
        ],
    )
    print(res)
    return res


if __name__ == "__main__":
    main()

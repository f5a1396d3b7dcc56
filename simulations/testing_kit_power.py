"""Statistical power of the conformance kit: samples needed to catch each bug class.

For every buggy verifier in ``spectheory.testing.gallery.GALLERY``, runs the default kit
(``check_verifier``, all instance families) with ``n_samples`` rounds per instance on a grid
(50, 100, 200, ..., 20,000) and reports the smallest ``n_samples`` at which the kit flags
the bug under every one of ``--repeats`` seeds (default 5), with the checks that flagged it
(in any of the runs, most frequent first).
A second column repeats the search with only the families that have no exact zeros
(:data:`ZERO_FREE`), where the exact zero-probability check cannot help: it measures the
power of the statistical law and efficiency tests alone.
The field bugs (``spectheory.testing.gallery_field.FIELD_BUGS``: verifier bugs that shipped
in real engines, with the issue or PR that reported each; the torch one is skipped without
torch) and the whole-sampler glue bugs (``spectheory.testing.gallery_samplers.SAMPLER_BUGS``,
run through ``check_sampler``) are searched the same way, each with its kit options.
The engine bugs (``spectheory.testing.gallery_engines.ENGINE_BUGS``: bug classes met running
the kit on real engines; the torch ones are skipped without torch) are searched on the shorter
grid :data:`ENGINE_GRID` and over all families only (their findings are exact or large, and a
correct entry -- ``torchscript_residual_draw``, expected to pass with at most an
"uncontrolled randomness" note -- runs every size of the grid), which keeps their cost to
about 15 s. The samplers that call the target more than once a round
(``spectheory.testing.gallery_samplers.MULTI_CALL_SAMPLERS``: naive HSD on Sun et al.'s binary
example, run through ``check_sampler``, whose multi-call protocol counts the calls) are searched
the same way, on the engine grid and their own instances; so are the 2026 field's bug classes
(``spectheory.testing.gallery_2026.GALLERY_2026``, verifiers and whole samplers). Every row also records the notes of its deciding run (the flagging run at the
smallest size, or the last passing run), so the table can state a passing row's verdict.
Prints a table and writes ``testing_kit_power.json`` into ``--out``. ``--only NAME ...``
measures only the named rows and merges them into the ``testing_kit_power.json`` already in
``--out`` (the other rows, the grid and the recorded command stay; ``updates`` records each
partial run's command, rows and time), so a new gallery entry does not rerun the whole table.

Usage: python simulations/testing_kit_power.py [--quick] [--repeats R] [--only NAME ...] [--out DIR]
"""

import time
from pathlib import Path

from tqdm.auto import tqdm

from spectheory.app.results import headline, script_parser, write_results
from spectheory.testing import check_sampler, check_verifier
from spectheory.testing.gallery import GALLERY
from spectheory.testing.gallery_2026 import GALLERY_2026
from spectheory.testing.gallery_engines import ENGINE_BUGS
from spectheory.testing.gallery_engines import available as engine_bugs_available
from spectheory.testing.gallery_field import FIELD_BUGS
from spectheory.testing.gallery_samplers import MULTI_CALL_SAMPLERS, SAMPLER_BUGS

GRID = (50, 100, 200, 500, 1000, 2000, 5000, 10_000, 20_000)
#: The grid of the engine bugs (``ENGINE_BUGS``).
ENGINE_GRID = (50, 200, 1000, 2000)
#: Instance families without exact zeros in the laws.
ZERO_FREE = ("equal", "tiny", "flatter_draft", "sharper_draft", "positions")


def smallest_detecting_n(
    verify, repeats: int, grid=GRID, first_seed: int = 500, families=None, kit=check_verifier, **options
):
    """``(n, checks, notes)``: the smallest ``n`` in ``grid`` at which all ``repeats`` runs flag ``verify``.

    ``checks`` are the checks that failed in those runs (most frequent first), ``notes`` the
    checks that carried a note in the deciding run (the last flagging one; where nothing flags,
    the last passing one). ``n`` is None (and ``checks`` empty) when no size flags it.
    """
    notes: list[str] = []
    for n in grid:
        failed = {}
        for r in range(repeats):
            report = kit(
                verify, n_samples=n, rng=first_seed + r, progress=False, families=families, **options
            )
            notes = sorted(report.notes)
            if report.passed:
                break
            for name in report.failed:
                failed[name] = failed.get(name, 0) + 1
        else:
            return n, sorted(failed, key=lambda name: (-failed[name], name)), notes  # most frequent first
    return None, [], notes


def main(argv=None):
    ap = script_parser(__doc__)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", nargs="+", default=None, help="measure only these rows; merge into --out")
    args = ap.parse_args(argv)
    repeats = 2 if args.quick else args.repeats
    grid = (50, 500, 2000) if args.quick else GRID
    rows = []
    t0 = time.perf_counter()
    entries = [(name, verify, desc, "", {}, check_verifier) for name, (verify, desc, _) in GALLERY.items()]
    entries += [
        (name, verify, desc, by, opts, check_verifier)
        for name, (verify, desc, _, by, opts) in FIELD_BUGS.items()
        if name != "leq_float32_torch" or _has_torch()
    ]
    entries += [
        (name, sampler, desc, by, opts, check_sampler)
        for name, (sampler, desc, _, by, opts) in SAMPLER_BUGS.items()
    ]
    entries = [(*e, grid, True, False) for e in entries]
    engine_grid = tuple(n for n in ENGINE_GRID if n <= grid[-1])
    for name in engine_bugs_available():
        verify, desc, must_fail, _, opts = ENGINE_BUGS[name]
        entries.append((name, verify, desc, "", opts, check_verifier, engine_grid, False, not must_fail))
    for name, (sampler, desc, _, by, opts) in MULTI_CALL_SAMPLERS.items():
        entries.append((name, sampler, desc, by, opts, check_sampler, engine_grid, False, False))
    for name, (obj, desc, _, by, opts, kit_name) in GALLERY_2026.items():
        kit = check_verifier if kit_name == "check_verifier" else check_sampler
        entries.append((name, obj, desc, by, opts, kit, engine_grid, False, False))
    if args.only is not None:
        unknown = set(args.only) - {e[0] for e in entries}
        if unknown:
            raise SystemExit(f"--only: unknown rows {sorted(unknown)}")
        entries = [e for e in entries if e[0] in args.only]
    for name, verify, desc, by, opts, kit, sizes, zero_free, must_pass in tqdm(entries, desc="bugs"):
        n, checks, notes = smallest_detecting_n(verify, repeats, sizes, kit=kit, **opts)
        row = {
            "bug": name,
            "description": desc,
            "reported_by": by,
            "kit": kit.__name__,
            "options": recorded_options(opts),
            "grid": list(sizes),
            "smallest_n_samples": n,
            "flagged_by": checks,
            "notes": notes,
            "expected_to_pass": must_pass,
        }
        if zero_free:
            n0, checks0, _ = smallest_detecting_n(verify, repeats, sizes, families=ZERO_FREE, kit=kit, **opts)
            row.update(zero_free_smallest_n_samples=n0, zero_free_flagged_by=checks0)
        rows.append(row)
    res = {
        "repeats": repeats,
        "grid": list(grid),
        "engine_grid": list(engine_grid),
        "rows": rows,
        "kit": "check_verifier defaults except n_samples",
        "zero_free_families": list(ZERO_FREE),
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if args.only is not None:
        res, argv = merged(res, [e[0] for e in entries], args.out, argv)
        rows = res["rows"]
    bugs = [r for r in rows if not r["expected_to_pass"]]
    caught = [r for r in bugs if r["smallest_n_samples"] is not None]
    field = [r for r in rows if r["reported_by"]]
    write_results(
        __file__,
        res,
        args.out,
        argv,
        [
            headline(
                "conformance kit: field bugs flagged at <= 2,000 samples in every seed",
                f"{sum(1 for r in field if (r['smallest_n_samples'] or 10**9) <= 2000)}/{len(field)}",
            ),
            headline("conformance kit: buggy verifiers flagged", f"{len(caught)}/{len(bugs)}"),
            headline(
                "conformance kit: correct engine-style samplers passing (notes at most)",
                f"{sum(1 for r in rows if r['expected_to_pass'] and r['smallest_n_samples'] is None)}"
                f"/{sum(1 for r in rows if r['expected_to_pass'])}",
            ),
            headline(
                "conformance kit: largest samples per instance needed to flag a bug",
                max((r["smallest_n_samples"] for r in caught), default=None),
            ),
        ],
    )
    print(table(res))
    return res


def merged(res: dict, names: list, out, argv) -> tuple[dict, list]:
    """``res`` (rows ``names`` only) merged into the results already in ``out``: ``(results, argv)``.

    The old rows keep their place, a re-measured row replaces its namesake, a new one is
    appended; the old command's arguments come back (the table is still that run's), and the
    partial run is recorded under ``updates``.
    """
    import json
    import sys

    from spectheory.app.results import default_results_dir

    path = (default_results_dir(__file__) if out is None else Path(out)) / "testing_kit_power.json"
    old = json.loads(path.read_text())
    new = {r["bug"]: r for r in res["rows"]}
    rows = [new.pop(r["bug"], r) for r in old["rows"]] + list(new.values())
    shown = list(sys.argv[1:] if argv is None else argv)
    if "--out" in shown:  # where the output went is not part of what made it
        del shown[shown.index("--out") : shown.index("--out") + 2]
    update = {"command": " ".join(["python simulations/testing_kit_power.py", *shown]), "rows": names}
    update.update(repeats=res["repeats"], seconds=res["seconds"])
    keep = {k: v for k, v in old.items() if k not in ("date", "machine", "command", "headline")}
    keep.update(rows=rows, updates=[*old.get("updates", []), update])
    return keep, old["command"].split()[2:]


def recorded_options(opts: dict) -> dict:
    """A row's kit options as JSON: instances by their names."""
    return {k: [i.name for i in v] if k == "instances" else v for k, v in opts.items()}


def verdict(row) -> str:
    """The kit's verdict on one row: the checks that flagged it, or "passes"; then its notes."""
    notes = row.get("notes") or []
    note = f" (note: {', '.join(notes)})" if notes else ""
    if row["smallest_n_samples"] is None:
        return "passes" + note
    return ", ".join(row["flagged_by"]) + note


def table(res) -> str:
    """Markdown table of the power results."""
    lines = [
        "| bug class | reported by | n_samples to flag it (all families) | verdict | "
        "n_samples, families without zeros | flagged by |",
        "|---|---|---:|---|---:|---|",
    ]
    for r in res["rows"]:
        big = "> " + str(r.get("grid", res["grid"])[-1])
        n = r["smallest_n_samples"]
        if "zero_free_smallest_n_samples" in r:
            n0 = r["zero_free_smallest_n_samples"]
            zf = f"{n0 if n0 is not None else big} | {', '.join(r['zero_free_flagged_by'])}"
        else:
            zf = "— | —"
        lines.append(
            f"| {r['description']} | {r.get('reported_by') or '(gallery)'} | "
            f"{n if n is not None else big} | {verdict(r)} | {zf} |"
        )
    return "\n".join(lines)


def _has_torch() -> bool:
    try:
        import torch  # noqa: F401
    except ImportError:
        return False
    return True


if __name__ == "__main__":
    main()

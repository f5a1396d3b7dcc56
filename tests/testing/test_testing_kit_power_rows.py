"""The power table's engine rows (results/testing_kit_power.json, shown in docs/testing_kit.md)
are what simulations/testing_kit_power.py computes, and the issue-23 claims they back.

Every seed is fixed (the script's seeds 500, 501, ...), so rerunning a row's deciding size
reproduces its verdict exactly; the fast tests rerun that one size, the slow one the whole
search of every engine row. The README table itself is checked against the JSON by
tests/app/test_readme.py (``update_readme.py --check``).
"""

import importlib.util
import json
import pathlib

import pytest

from spectheory.testing.gallery_engines import ENGINE_BUGS, available

ROOT = pathlib.Path(__file__).resolve().parents[2]
POWER = json.loads((ROOT / "results" / "testing_kit_power.json").read_text())
ENGINE_ROWS = {r["bug"]: r for r in POWER["rows"] if r["bug"] in ENGINE_BUGS}


def _power_script():
    spec = importlib.util.spec_from_file_location(
        "testing_kit_power", ROOT / "simulations" / "testing_kit_power.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_engine_bug_has_a_row_with_its_grid():
    sim = _power_script()
    assert set(ENGINE_ROWS) == set(ENGINE_BUGS)
    for name, row in ENGINE_ROWS.items():
        assert row["grid"] == list(sim.ENGINE_GRID) and row["options"] == ENGINE_BUGS[name][4]
        assert row["expected_to_pass"] == (not ENGINE_BUGS[name][2])
        assert "zero_free_smallest_n_samples" not in row  # searched over all families only


@pytest.mark.parametrize("name", available())
def test_engine_row_reproduces_at_its_deciding_size(name):
    sim, row = _power_script(), ENGINE_ROWS[name]
    verify, _, _, _, opts = ENGINE_BUGS[name]
    n = row["smallest_n_samples"]
    size = n if n is not None else row["grid"][0]
    got = sim.smallest_detecting_n(verify, POWER["repeats"], (size,), **opts)
    if n is None:  # a passing row: it passes there too, with the same notes
        assert got == (None, [], row["notes"])
    else:
        assert got == (n, row["flagged_by"], row["notes"])


def test_the_torchscript_row_passes_with_a_randomness_note_at_most():
    row = ENGINE_ROWS["torchscript_residual_draw"]
    assert row["smallest_n_samples"] is None and row["flagged_by"] == []
    assert set(row["notes"]) <= {"uncontrolled_randomness"}
    assert _power_script().verdict(row) == "passes (note: uncontrolled_randomness)"


def test_the_flagged_engine_rows_name_their_findings():
    rows = ENGINE_ROWS
    assert "reseeding" in rows["manual_seed_each_draw"]["flagged_by"]
    assert rows["python_random_leq"]["flagged_by"] == ["forced_uniforms"]
    assert rows["leq_bfloat16_torch"]["flagged_by"] == ["forced_uniforms"]
    assert rows["greedy_stops_early"]["flagged_by"] == ["greedy_acceptance"]  # lossless: efficiency only
    assert all(r["smallest_n_samples"] is not None for r in rows.values() if not r["expected_to_pass"])


@pytest.mark.slow
@pytest.mark.parametrize("name", available())
def test_engine_row_is_the_scripts_full_search(name):
    sim, row = _power_script(), ENGINE_ROWS[name]
    verify, _, _, _, opts = ENGINE_BUGS[name]
    got = sim.smallest_detecting_n(verify, POWER["repeats"], tuple(row["grid"]), **opts)
    assert got == (row["smallest_n_samples"], row["flagged_by"], row["notes"])


def test_the_2026_rows_are_in_the_table_and_only_merges_rows(tmp_path):
    """Every 2026 bug class has a row; ``--only`` re-measures one row into a copy of the table and
    leaves the other rows and the recorded command as they were."""
    from spectheory.testing.gallery_2026 import GALLERY_2026

    rows = {r["bug"]: r for r in POWER["rows"]}
    assert set(GALLERY_2026) <= set(rows)
    assert all(rows[n]["smallest_n_samples"] is not None for n in GALLERY_2026)
    (tmp_path / "testing_kit_power.json").write_text(json.dumps(POWER))
    _power_script().main(["--quick", "--only", "point_mass_draft", "--out", str(tmp_path)])
    new = json.loads((tmp_path / "testing_kit_power.json").read_text())
    assert [r["bug"] for r in new["rows"]] == [r["bug"] for r in POWER["rows"]]
    assert new["command"] == POWER["command"] and new["grid"] == POWER["grid"]
    assert new["updates"][-1]["rows"] == ["point_mass_draft"] and "--out" not in new["updates"][-1]["command"]
    changed = [r["bug"] for r, o in zip(new["rows"], POWER["rows"]) if r != o]
    assert set(changed) <= {"point_mass_draft"}

"""Every exact value recorded before the one-entry-point refactor (issue 20) is unchanged.

``tests/data/value_snapshots.json`` was written by ``tests/data/make_value_snapshots.py`` from
the code before ``chain.protocol(T, round)`` and the shared result vocabulary; each case is
recomputed here with the current code and must agree to 1e-12 (relative and absolute).
"""

import importlib.util
import json
import pathlib

import numpy as np
import pytest

DATA = pathlib.Path(__file__).resolve().parents[1] / "data"
_spec = importlib.util.spec_from_file_location("make_value_snapshots", DATA / "make_value_snapshots.py")
snapshots = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(snapshots)
RECORDED = json.loads((DATA / "value_snapshots.json").read_text())


def test_every_case_recorded():
    assert sorted(RECORDED) == sorted(snapshots.CASES)


@pytest.mark.parametrize("case", sorted(snapshots.CASES))
def test_values_unchanged(case):
    got, want = snapshots.CASES[case](), RECORDED[case]
    assert sorted(got) == sorted(want), case
    for name, value in want.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-12, atol=1e-12, err_msg=f"{case}: {name}")

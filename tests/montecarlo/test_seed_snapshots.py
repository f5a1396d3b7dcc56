"""Seed snapshots: the one round driver reproduces the old simulators draw for draw.

``tests/data/seed_snapshots.json`` was recorded (``tests/data/make_seed_snapshots.py``) from the
five Monte Carlo loops as they were before issue 20 merged them into one driver: the single-path
simulator (token and block verifiers, bonus on and off, tokens kept, a chain with stochastic
transitions, an inhomogeneous chain, a vocabulary wide enough for several chunks), the tree
simulator (every tree verifier) and the draft-length policy simulator (a fixed length, a
threshold, a schedule with memory, under a cost). For the same seeds every per-run array, the
accepted-count histogram and the tokens must be IDENTICAL (same sum, same SHA-256).

Batch decoding with ``M`` drafts is the exception. The old simulators stepped every run one
position at a time (a round of one run interleaved with the rounds of the others), the driver
plays whole rounds of a tree of ``M`` paths, so the uniforms are consumed in another order and
no seed gives the same runs. For those cases the new per-run means must agree with the recorded
old means within 5 combined standard errors, and with the exact expectations
(:func:`~spectheory.analysis.batch_expected_rejections` for the first-token reading,
:func:`~spectheory.kinds.batch.exact.batch_tree_expected` for the tree reading) within 5 SE.
"""

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

DATA = Path(__file__).resolve().parent.parent / "data"
_spec = importlib.util.spec_from_file_location("make_seed_snapshots", DATA / "make_seed_snapshots.py")
snap = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(snap)

RECORDED = json.loads(snap.SNAPSHOT.read_text())
CHAINS = snap._chains()
CASES = snap.cases()
BATCH = snap.batch_cases()


def test_every_recorded_case_is_run():
    assert sorted(CASES) == sorted(RECORDED["identical"])
    assert sorted(BATCH) == sorted(RECORDED["batch_reference"])


@pytest.mark.parametrize("name", sorted(CASES))
def test_same_seed_same_runs(name):
    chain, run = CASES[name]
    got = snap.record(run(CHAINS[chain]))
    want = RECORDED["identical"][name]
    missing = sorted(set(want) - set(got))
    assert not missing, f"{name}: the result lost {missing}"
    for field, fp in want.items():
        assert got[field] == fp, f"{name}.{field}: {got[field]} != recorded {fp}"


def _exact(name, chain):
    from spectheory.analysis import batch_expected_rejections
    from spectheory.kinds.batch.exact import batch_tree_expected

    T, gamma, M, bonus = {
        "batch_first_token": (8, 2, 3, False),
        "batch_first_token_bonus": (8, 3, 2, True),
        "batch_first_token_to_horizon": (6, None, 3, False),
        "batch_tree": (8, 2, 3, False),
        "batch_tree_bonus": (8, 3, 2, True),
        "batch_tree_to_horizon": (6, None, 3, False),
    }[name]
    if name.startswith("batch_tree"):
        e = batch_tree_expected(chain, T, M, gamma=gamma, bonus=bonus)
        return {
            "rejections": e.rejections,
            "target_calls": e.target_calls,
            "accepted": e.accepted,
            "draft_tokens": e.draft_tokens,
        }
    e = batch_expected_rejections(chain, T, M, gamma=gamma, bonus=bonus)
    return {"rejections": e.total, "target_calls": e.target_calls, "draft_tokens": e.draft_tokens}


@pytest.mark.parametrize("name", sorted(BATCH))
def test_batch_agrees_with_the_old_runs_and_the_exact_values(name):
    chain_name, run = BATCH[name]
    chain = CHAINS[chain_name]
    per_run = run(chain)
    exact = _exact(name, chain)
    for stat, old in RECORDED["batch_reference"][name].items():
        v = np.asarray(per_run[stat], dtype=np.float64)
        mean, se = v.mean(), v.std(ddof=1) / np.sqrt(v.size)
        assert abs(mean - old["mean"]) <= 5 * np.hypot(se, old["se"]) + 1e-12, (name, stat, mean, old)
        if stat in exact:
            assert abs(mean - exact[stat]) <= 5 * se + 1e-12, (name, stat, mean, exact[stat])

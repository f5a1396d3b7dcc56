"""Naive HSD through the kit's multi-call protocol: check_sampler runs it as a whole sampler that
calls the target several times a round, counts those calls, and flags its bias; the lossless HSD
(the paper's equations, one call a round) passes on the same instance.

Instance: Sun et al.'s binary example at gamma = 3 (``SUN_K3``), where naive HSD's first four
tokens are at TV 2/27 from the target's (``docs/sequence_rules.md``, Theorem 4), chi-square
divergence 0.0501: at 3,000 samples Pearson's statistic (15 degrees of freedom, level 1e-4 / 5)
misses it with probability about 8e-10 (noncentral chi-square), so the fixed seed is no luck.
"""

import importlib.util
import json
import pathlib
import re
from fractions import Fraction as F

import numpy as np
import pytest
from scipy.stats import chi2, ncx2

from spectheory.testing import check_sampler
from spectheory.testing.gallery_samplers import MULTI_CALL_SAMPLERS, SUN_K3, hsd_sampler
from spectheory.verifiers.hsd_naive import _outcomes, naive_hsd_round_law
from spectheory.verifiers.round_laws import generation_law, target_law

ROOT = pathlib.Path(__file__).resolve().parents[2]
N = 3000
SUN = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])


def test_the_sample_size_has_power_essentially_one():
    t, d = SUN
    law = generation_law(lambda c, k: naive_hsd_round_law(t, d, 2, k, c), 3, 4)
    p = target_law(t, 2, 4)
    div = float(sum((law.get(z, 0) - w) ** 2 / w for z, w in p.items()))
    level = 1e-4 / (SUN_K3.k + 2)  # the kit's Bonferroni split over one instance's tests
    assert ncx2.cdf(chi2.ppf(1 - level, 15), 15, N * div) < 1e-9


def test_kit_flags_naive_hsd_and_counts_its_target_calls():
    report = check_sampler(hsd_sampler(), instances=[SUN_K3], n_samples=N, rng=0)
    assert "sequence_law" in report.failed
    outcomes = list(_outcomes(*SUN, 2, 3, ()))
    mean = sum(w * c for _, w, c, _ in outcomes)
    sd = float(sum(w * c * c for _, w, c, _ in outcomes) - mean**2) ** 0.5
    assert mean == F(47, 27)
    note = report.notes["target_calls"]
    got, most = re.search(r"called ([\d.]+) times a round on average \(at most (\d+)\)", note).groups()
    assert abs(float(got) - float(mean)) < 5 * sd / np.sqrt(N) + 0.005 and most == "3"  # 3 digits shown
    over = check_sampler(hsd_sampler(), instances=[SUN_K3], n_samples=200, rng=0, target_calls=1)
    assert "target_calls" in over.failed  # a declared budget of one call a round fails
    assert (
        "target_calls"
        not in check_sampler(hsd_sampler(), instances=[SUN_K3], n_samples=200, rng=0, target_calls=3).failed
    )


def test_kit_passes_the_lossless_hsd_on_the_same_instance():
    """The paper's equations (``"hsd"``, block verification), one call a round: no false alarm."""
    report = check_sampler(hsd_sampler("hsd", forward=False), instances=[SUN_K3], n_samples=N, rng=0)
    assert report.passed and "target_calls" not in report.notes


@pytest.mark.slow
def test_kit_flags_the_clever_listing_with_one_call_a_round():
    """The authors' "HSD (clever)" is the single-call listing: biased too (Theorem 2), one call."""
    report = check_sampler(hsd_sampler(forward=False), instances=[SUN_K3], n_samples=N, rng=0)
    assert "sequence_law" in report.failed and "target_calls" not in report.notes


def _power_script():
    spec = importlib.util.spec_from_file_location(
        "testing_kit_power", ROOT / "simulations/testing_kit_power.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(MULTI_CALL_SAMPLERS))
def test_power_row_is_the_scripts_search(name):
    """The power table's row (searched on the engine grid): flagged at 2,000 samples, with the note."""
    sim = _power_script()
    sampler, _, must_fail, _, opts = MULTI_CALL_SAMPLERS[name]
    got = sim.smallest_detecting_n(sampler, 5, sim.ENGINE_GRID, kit=check_sampler, **opts)
    assert got[0] == 2000 and set(must_fail) <= set(got[1]) and got[2] == ["target_calls"]
    rows = [
        r
        for r in json.loads((ROOT / "results/testing_kit_power.json").read_text())["rows"]
        if r["bug"] == name
    ]
    if rows:  # recorded by the main job's testing_kit_power step
        assert (rows[0]["smallest_n_samples"], rows[0]["flagged_by"], rows[0]["notes"]) == got
        assert rows[0]["options"] == sim.recorded_options(opts)

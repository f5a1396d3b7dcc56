"""Ragged and mixed greedy/sampled batches: a correct sampler passes, planted batch bugs are caught per row."""

import numpy as np
import pytest

from spectheory.testing.instances import make_instance
from spectheory.testing.ragged import (
    RaggedRow,
    check_ragged_batch,
    default_layout,
    reference_ragged_sampler,
)

N = 4000


def _rows(report):
    return {r["row"]: r for r in report.config["rows"]}


def greedy_row_sampled(tl, dl, x, lengths, temps, rng):
    """Greedy rows verified as if sampled at temperature 1 (a sampled draw leaks into greedy rows)."""
    return reference_ragged_sampler(tl, dl, x, lengths, np.where(temps == 0, 1.0, temps), rng)


def padding_read_as_drafts(tl, dl, x, lengths, temps, rng):
    """Every row verified over the batch's longest draft length (padding drafts read as token 0)."""
    return reference_ragged_sampler(
        tl, dl, np.where(x < 0, 0, x), np.full_like(lengths, x.shape[1]), temps, rng
    )


def first_row_temperature(tl, dl, x, lengths, temps, rng):
    """One temperature for the batch (the first row's): a row's setting leaks into its neighbours."""
    return reference_ragged_sampler(tl, dl, x, lengths, np.full_like(temps, temps[0]), rng)


def test_reference_passes_with_per_row_verdicts():
    report = check_ragged_batch(reference_ragged_sampler, n_samples=N, rng=1)
    assert report.passed, str(report)
    rows = report.config["rows"]
    assert [r["row"] for r in rows] == [0, 1, 3, 4]  # row 2 is padding
    assert {r["temperature"] for r in rows} == {0.0, 0.7, 1.0, 1.5}
    assert "greedy_acceptance" in [c.name for c in report.checks]
    assert "sequence_law" in [c.name for c in report.checks]
    assert "row 1 T=0" in str(report)


def test_greedy_row_leaking_a_sampled_draw_is_caught_on_the_greedy_row_only():
    report = check_ragged_batch(greedy_row_sampled, n_samples=N, rng=2)
    rows = _rows(report)
    assert not rows[1]["passed"] and "zero_probability" in rows[1]["failed"]
    assert all(rows[b]["passed"] for b in (0, 3, 4)), str(report)


def test_padding_read_as_drafts_fails_the_short_rows():
    report = check_ragged_batch(padding_read_as_drafts, n_samples=N, rng=3)
    rows = _rows(report)
    assert "output_format" in rows[0]["failed"] and "output_format" in rows[3]["failed"]
    assert "into padding" in report["output_format"].statistic or "past" in str(report)
    assert rows[4]["passed"] and rows[1]["passed"]  # the rows of full length K are right


def test_batch_wide_temperature_is_caught():
    report = check_ragged_batch(first_row_temperature, n_samples=N, rng=4)
    rows = _rows(report)
    assert not report.passed
    assert rows[0]["passed"]  # the first row's own temperature is right
    assert not rows[1]["passed"] and not rows[3]["passed"] and not rows[4]["passed"]


def test_greedy_first_row_makes_sampled_rows_greedy():
    r = np.random.default_rng(5)
    layout = [
        RaggedRow(make_instance("markov", 4, 2, r), 0.0),
        RaggedRow(make_instance("markov", 4, 3, r), 1.0),
    ]
    report = check_ragged_batch(first_row_temperature, layout=layout, n_samples=N, rng=5)
    rows = _rows(report)
    assert rows[0]["passed"] and not rows[1]["passed"]
    assert "sequence_law" in rows[1]["failed"]


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="layout"):
        check_ragged_batch(reference_ragged_sampler, layout=[RaggedRow(None)])
    with pytest.raises(ValueError, match="temperature"):
        RaggedRow(None, -1.0)
    with pytest.raises(ValueError, match="sampler"):
        check_ragged_batch(3)  # type: ignore[arg-type]
    bad = check_ragged_batch(lambda *a: np.zeros((2, 2), np.int64), n_samples=50)
    assert "runs_without_error" in bad.failed


def test_default_layout_is_ragged_and_mixed():
    rows = default_layout(0)
    ks = {r.instance.k for r in rows if r.instance is not None}
    assert len(ks) > 1 and any(r.instance is None for r in rows)
    assert any(r.temperature == 0 for r in rows) and any(r.temperature > 0 for r in rows)

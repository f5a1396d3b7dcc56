"""The lossless check on pooled cells (spectheory.validation.pooled_law) against the full check.

Small first-order chains made torch models (``chain_models``): the full ``V x V`` law and the
pooled cells both fit, so the two checks run on the same decoder samples. Exact parts compare
to 1e-12; the verdicts use the thresholds of ``simulations/decoder_lossless.py`` (pass:
p > 1e-4, broken: p < 1e-6) at fixed seeds.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spectheory as st  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402
from spectheory.validation.lossless import (  # noqa: E402
    decoder_two_token_samples,
    exact_two_token_law,
    lossless_check,
    pooled_chisquare,
)
from spectheory.validation.pooled_law import CellLaw, exact_cell_law  # noqa: E402

P_PASS, P_FAIL = 1e-4, 1e-6


@pytest.fixture(scope="module")
def models():
    chain = st.DecodingChain.random(12, rng=3, concentration=0.3)
    return chain_models(chain)


@pytest.mark.parametrize("mass", [0.0, 0.01, 0.05, 0.3])
def test_cells_are_a_coarsening_of_the_full_law(models, mass):
    target, _ = models
    full = exact_two_token_law(target, [4])
    cells = CellLaw.from_dense(full, mass)
    assert cells.probs.sum() == pytest.approx(1.0, abs=1e-12)
    # every pair falls in exactly one cell, and the cells' probabilities are the sums over their pairs
    pairs = np.stack(np.meshgrid(np.arange(12), np.arange(12), indexing="ij"), -1).reshape(-1, 2)
    idx = cells.cell_index(pairs)
    assert (idx >= 0).all()
    np.testing.assert_allclose(
        np.bincount(idx, weights=full.ravel(), minlength=cells.n_cells), cells.probs, atol=1e-12
    )
    if mass > 0:  # the direct computation (no V x V table) gives the same cells
        direct = exact_cell_law(target, [4], 2, mass)
        np.testing.assert_array_equal(direct.first, cells.first)
        np.testing.assert_array_equal(direct.second, cells.second)
        np.testing.assert_allclose(direct.probs, cells.probs, atol=1e-6)


def test_one_token_cells_match_the_first_token_marginal(models):
    target, _ = models
    full = exact_two_token_law(target, [2]).sum(1)
    cells = exact_cell_law(target, [2], 1, mass=0.05)
    idx = cells.cell_index(np.arange(12))
    np.testing.assert_allclose(
        np.bincount(idx, weights=full, minlength=cells.n_cells), cells.probs, atol=1e-6
    )
    with pytest.raises(ValueError, match="tokens must lie"):
        cells.cell_index([12])
    with pytest.raises(ValueError, match="mass"):
        exact_cell_law(target, [2], 1, mass=0.0)


def test_mass_zero_pooled_check_equals_the_full_check(models):
    target, draft = models
    samples = decoder_two_token_samples(target, draft, [4], 2000, 2, seed=7)
    full = exact_two_token_law(target, [4])
    a = pooled_chisquare(samples, full, 5.0)
    cells = CellLaw.from_dense(full, 0.0)
    b = pooled_chisquare(cells.cell_index(samples), cells.probs, 5.0)
    assert (a["statistic"], a["dof"]) == pytest.approx((b["statistic"], b["dof"]), rel=1e-9)


def test_pooled_and_full_checks_agree_on_the_real_and_broken_rules(models):
    target, draft = models
    full = exact_two_token_law(target, [4])
    for rule, expect_pass in ((None, True), ("draft_correction", False), ("target_correction", False)):
        verdicts = []
        for law in (full, None):  # None: the pooled cells, forced by mass
            r = lossless_check(
                target,
                draft,
                [4],
                3000,
                2,
                seed=11,
                rule=rule,
                law=law,
                mass=None if law is not None else 2e-3,
            )
            verdicts.append(r["pvalue"] > P_PASS if expect_pass else r["pvalue"] < P_FAIL)
        assert verdicts == [True, True], (rule, verdicts)

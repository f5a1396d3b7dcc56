"""Batch decoding with M drafts: the first-token construction and the tree reading (issue 11).

Exact values of two independent engines are compared (the first-token construction of
spectheory.verifiers against tree_rrs on the M-path tree), the tree reading against its own
Monte Carlo with real draft sequences (5 standard errors, fixed seeds: a false failure is
about one in a million), and the readings against each other on 100 random chains.
"""

import numpy as np
import pytest

import spectheory as st
from spectheory.analysis import batch_expected_rejections
from spectheory.trees import DraftTree, tree_protocol
from spectheory.trees.batch_tree import (
    batch_readings,
    batch_tree_expected,
    batch_tree_limit_mass,
    simulate_batch_tree,
)

try:  # holey_chain moves next to the chain constructors
    from spectheory.chain.examples import holey_chain
except ImportError:  # pragma: no cover - before the move
    from spectheory.verifiers import holey_chain


@pytest.mark.parametrize("gamma,bonus", [(None, False), (2, False), (2, True)])
def test_first_token_construction_is_tree_rrs_on_paths(gamma, bonus):
    chain = st.DecodingChain.random(3, horizon=6, rng=1)
    for M in (1, 3):
        first = batch_expected_rejections(chain, 6, M, gamma=gamma, bonus=bonus)
        paths = tree_protocol(
            chain, 6, DraftTree.paths(M, 6 if gamma is None else gamma), "tree_rrs", bonus=bonus
        )
        assert paths.rejections == pytest.approx(first.total, abs=1e-12)
        assert paths.target_calls == pytest.approx(first.target_calls, abs=1e-12)


def test_tree_reading_never_above_first_token_on_100_chains():
    worst = -np.inf
    for seed in range(100):
        # homogeneous chains, and every tenth one position-dependent
        chain = st.DecodingChain.random(3, horizon=5 if seed % 10 == 0 else None, concentration=0.5, rng=seed)
        for M in (2, 4):
            for gamma in (None, 2):
                first = batch_expected_rejections(chain, 5, M, gamma=gamma).total
                tree = batch_tree_expected(chain, 5, M, gamma=gamma).rejections
                worst = max(worst, tree - first)
    assert worst <= 1e-12


def test_M_equal_one_is_standard_decoding():
    chain = st.DecodingChain.random(4, rng=2)
    for gamma, bonus in ((None, False), (3, True)):
        res = batch_tree_expected(chain, 8, 1, gamma=gamma, bonus=bonus)
        first = batch_expected_rejections(chain, 8, 1, gamma=gamma, bonus=bonus)
        assert res.rejections == pytest.approx(first.total, abs=1e-12)
        assert res.target_calls == pytest.approx(first.target_calls, abs=1e-12)
        if gamma is not None:
            assert res.rejections == pytest.approx(
                chain.expected_rejections(8, gamma, bonus=bonus), abs=1e-12
            )
            assert res.target_calls == pytest.approx(
                chain.expected_target_calls(8, gamma, bonus=bonus), abs=1e-12
            )


def test_limit_is_target_mass_outside_draft_support():
    hc = holey_chain()
    lim = batch_tree_expected(hc, 50, np.inf).rejections
    assert lim == pytest.approx(batch_tree_limit_mass(hc, 50), abs=1e-12)
    assert lim == pytest.approx(3.7397478, abs=1e-6)
    full = st.DecodingChain.random(3, rng=0)
    assert batch_tree_expected(full, 6, np.inf).rejections == pytest.approx(0.0, abs=1e-15)
    # finite M decreases towards the limit, and stays above it
    vals = batch_readings(hc, 12, [1, 2, 8, 32, np.inf])["tree"]
    assert all(a >= b - 1e-12 for a, b in zip(vals, vals[1:]))


@pytest.mark.parametrize("gamma,bonus", [(None, False), (2, True)])
def test_tree_reading_monte_carlo(gamma, bonus):
    # 5 standard errors, fixed seed
    chain = st.DecodingChain.random(3, horizon=6, rng=4)
    exact = batch_tree_expected(chain, 6, 3, gamma=gamma, bonus=bonus)
    sim = simulate_batch_tree(chain, 6, 3, 6000, gamma=gamma, rng=9, bonus=bonus)
    for name in ("rejections", "target_calls", "accepted"):
        x = sim[name]
        se = x.std(ddof=1) / np.sqrt(x.size)
        assert abs(x.mean() - getattr(exact, name)) <= 5 * se, name


def test_bad_M():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="M"):
        batch_tree_expected(chain, 5, 0)

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
from spectheory.chain.examples import holey_chain
from spectheory.kinds.batch.exact import batch_readings, batch_tree_expected, batch_tree_limit_mass
from spectheory.kinds.batch.verifier import BATCH_TREE
from spectheory.trees import BatchRound, DraftTree, TreeRound, tree_protocol


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


@pytest.mark.parametrize("bonus", [False, True])
def test_tree_reading_never_above_first_token_on_100_chains(bonus):
    # a check, not a proof (docs/trees.md says so)
    worst = -np.inf
    for seed in range(100):
        # homogeneous chains, and every tenth one position-dependent
        chain = st.DecodingChain.random(3, horizon=5 if seed % 10 == 0 else None, concentration=0.5, rng=seed)
        for M in (2, 4):
            for gamma in (None, 2):
                first = batch_expected_rejections(chain, 5, M, gamma=gamma, bonus=bonus).total
                tree = batch_tree_expected(chain, 5, M, gamma=gamma, bonus=bonus).rejections
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


@pytest.mark.parametrize("gamma,bonus", [(None, False), (2, True), (3, False)])
def test_tree_reading_monte_carlo(gamma, bonus):
    """Both ways of playing the tree reading -- BatchRound's lazy position-by-position play and
    the generic tree round on the full M-path tree with the batch_tree verifier -- agree with
    the extended-state recursion (5 standard errors, fixed seeds)."""
    chain = st.DecodingChain.random(3, horizon=6, rng=4)
    exact = batch_tree_expected(chain, 6, 3, gamma=gamma, bonus=bonus)
    lazy = st.simulate(chain, 6, BatchRound(3, gamma, reading="tree"), 6000, rng=9, bonus=bonus)
    full = st.simulate(
        chain, 6, TreeRound(DraftTree.paths(3, gamma or 6), BATCH_TREE), 6000, rng=9, bonus=bonus
    )
    for sim in (lazy, full):
        for name in ("rejections", "target_calls", "accepted", "draft_tokens"):
            m, se = sim.mean_se(name)
            assert abs(m - getattr(exact, name)) <= 5 * se + 1e-12, (sim.round, name, m, getattr(exact, name))
        np.testing.assert_array_equal(sim.accepted_counts.sum(1), sim.target_calls)


@pytest.mark.parametrize("gamma,bonus", [(None, False), (2, True)])
def test_first_token_reading_is_tree_rrs_on_paths_by_monte_carlo(gamma, bonus):
    """BatchRound(M, gamma) (first-token reading, lazy play), TreeRound(DraftTree.paths(M, gamma),
    "tree_rrs") (generic play) and the first-token construction's exact values agree (5 SE)."""
    chain = st.DecodingChain.random(3, horizon=6, rng=5)
    exact = batch_expected_rejections(chain, 6, 3, gamma=gamma, bonus=bonus)
    tree = DraftTree.paths(3, gamma or 6)
    for rnd in (BatchRound(3, gamma), TreeRound(tree, "tree_rrs")):
        sim = st.simulate(chain, 6, rnd, 6000, rng=13, bonus=bonus)
        for name, value in (("rejections", exact.total), ("target_calls", exact.target_calls)):
            m, se = sim.mean_se(name)
            assert abs(m - value) <= 5 * se + 1e-12, (rnd, name, m, value)
        assert sim.verifier == "tree_rrs"


def test_batch_round_arguments_and_names():
    assert BatchRound(2, 3).name == "batch(M=2, gamma=3, reading=first_token)"
    assert BatchRound(2, None, "tree").tree_for(5) == DraftTree.paths(2, 5)
    assert BatchRound(2, 3).tree == DraftTree.paths(2, 3) and BatchRound(2).max_depth is None
    for bad, match in (
        ({"M": 0}, "M"),
        ({"M": 2, "gamma": 0}, "gamma"),
        ({"M": 2, "reading": "x"}, "reading"),
    ):
        with pytest.raises(ValueError, match=match):
            BatchRound(**bad)
    with pytest.raises(ValueError, match="paths"):
        st.simulate(
            st.DecodingChain.random(2, rng=0), 4, TreeRound(DraftTree.from_branching([2, 2]), BATCH_TREE), 5
        )


def test_bad_M():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="M"):
        batch_tree_expected(chain, 5, 0)


def test_readings_are_objects_built_once_from_their_names():
    """``reading="gls"`` is mapped once to its reading object, which carries the tree verifier
    and the exact coupling; names, reprs and the verifier are those of the string argument."""
    from spectheory.kinds.batch.gls_tree import GLS
    from spectheory.kinds.batch.readings import FirstToken, GLSReading, TreeReading
    from spectheory.kinds.batch.verifier import BATCH_TREE

    for name, cls, verifier, coupling in (
        ("first_token", FirstToken, "tree_rrs", None),
        ("tree", TreeReading, "batch_tree", "rrs"),
        ("gls", GLSReading, "gls", "gls"),
    ):
        rnd = BatchRound(2, 3, reading=name)
        assert type(rnd.reading) is cls and str(rnd.reading) == name
        assert rnd.verifier.name == verifier and rnd.reading.coupling == coupling
        assert rnd.name == f"batch(M=2, gamma=3, reading={name})"
        assert repr(rnd) == f"BatchRound(M=2, gamma=3, reading={name!r})"
        assert BatchRound(2, 3, reading=cls()).name == rnd.name
    assert BatchRound(2, 3, reading="tree").verifier is BATCH_TREE
    assert BatchRound(2, 3, reading="gls").verifier is GLS
    with pytest.raises(ValueError, match="reading: expected one of"):
        BatchRound(2, 3, reading="first-token")

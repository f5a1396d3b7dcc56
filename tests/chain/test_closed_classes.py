"""Reducible chains: closed classes found, and no ``LinAlgError`` reaches a user (issue 27).

A stationary law or a long-run rate is unique only when the states reach one closed class;
every public function that needs one refuses a chain with two closed classes with a
``ValueError`` naming them, and the finite-horizon engines, which need neither, still run.
"""

import numpy as np
import pytest

import spectheory as st
from spectheory.chain import closed_classes, require_one_closed_class
from spectheory.stopping import (
    FixedGamma,
    compare_policies,
    evaluate_policy,
    long_run_optimum,
    optimal_policy,
)
from spectheory.stopping.optimal import long_run_rate
from spectheory.trees import DraftTree, exact_tree_value, optimal_tree_search, positional_vector
from spectheory.trees.sequoia import stationary_law

# states 0 and 1 absorb; state 2 is transient (first-order chain: state = last token)
TARGET = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.3, 0.3, 0.4]])
DRAFT = np.array([[0.5, 0.5, 0.0], [0.0, 0.5, 0.5], [0.3, 0.3, 0.4]])


def reducible():
    return st.DecodingChain(TARGET, DRAFT)


def test_closed_classes_of_small_matrices():
    assert [c.tolist() for c in closed_classes(TARGET)] == [[0], [1]]
    assert [c.tolist() for c in closed_classes(np.eye(3))] == [[0], [1], [2]]
    ring = np.roll(np.eye(4), 1, axis=1)  # periodic, irreducible
    assert [c.tolist() for c in closed_classes(ring)] == [[0, 1, 2, 3]]
    unichain = np.array([[0.5, 0.5, 0.0], [0.0, 0.2, 0.8], [0.0, 0.6, 0.4]])
    assert [c.tolist() for c in closed_classes(unichain)] == [[1, 2]]
    with pytest.raises(ValueError, match="square"):
        closed_classes(np.ones((2, 3)))


def test_message_names_the_classes():
    with pytest.raises(ValueError, match=r"2 closed classes of states, \{0\}, \{1\}"):
        require_one_closed_class(TARGET, "x")
    many = np.eye(7)
    with pytest.raises(ValueError, match=r"\{3\} and 3 more, which never communicate; do this"):
        require_one_closed_class(many, "x", "do this")
    require_one_closed_class(np.array([[0.5, 0.5], [0.0, 1.0]]), "x")  # transient state: fine


LONG_RUN = {
    "long_run_optimum": lambda c: long_run_optimum(c, 0.1, max_depth=4),
    "long_run_rate": lambda c: long_run_rate(c, 2, 0.1),
    "long_run_rate per state": lambda c: long_run_rate(c, [1, 2, 3], 0.1),
    "stationary_law": stationary_law,
    "positional_vector": lambda c: positional_vector(c, 2),
    "positional_vector sampled": lambda c: positional_vector(c, 2, n_samples=100, rng=0),
    "exact_tree_value": lambda c: exact_tree_value(c, DraftTree.from_branching([2])),
    "optimal_tree_search": lambda c: optimal_tree_search(c, 2),
}


@pytest.mark.parametrize("name", list(LONG_RUN))
def test_long_run_functions_refuse_a_reducible_chain_clearly(name):
    with pytest.raises(ValueError, match=r"closed classes of states, \{0\}, \{1\}"):
        LONG_RUN[name](reducible())


def test_a_given_state_law_or_a_finite_horizon_still_works():
    chain = reducible()
    law = np.array([0.0, 0.0, 1.0])
    assert exact_tree_value(chain, DraftTree.from_branching([2]), states=law) > 1.0
    assert positional_vector(chain, 2, states=law).shape == (2,)
    res = chain.protocol(8, 2)
    assert res.target_calls > 0
    assert evaluate_policy(chain, FixedGamma(2), 8, 0.1).time() > 0
    assert optimal_policy(chain, 8, 0.1, max_depth=3).time() > 0
    rows = compare_policies(chain, [FixedGamma(2)], 8, 0.1, information=("state",), max_depth=3)
    assert rows[0]["ratio_state"] >= 1.0 - 1e-12
    sim = st.simulate(chain, 8, 2, 200, rng=0)
    assert sim.mean("target_calls") > 0


def test_unichain_with_transient_states_has_a_long_run_rate():
    # state 0 is transient; {1, 2} is the one closed class
    t = np.array([[0.2, 0.4, 0.4], [0.0, 0.5, 0.5], [0.0, 0.7, 0.3]])
    d = np.array([[0.3, 0.3, 0.4], [0.0, 0.6, 0.4], [0.0, 0.5, 0.5]])
    chain = st.DecodingChain(t, d)
    pi = stationary_law(chain)
    assert pi[0] < 1e-12 and pi @ t == pytest.approx(pi, abs=1e-12)
    res = long_run_optimum(chain, 0.1, max_depth=6)
    assert res.rate == pytest.approx(long_run_rate(chain, res.lengths, 0.1), rel=1e-12)


def test_policy_whose_round_starts_split_is_refused_clearly():
    # period 2 and draft = target: one drafted token is always accepted, rounds advance 2
    flip = np.array([[0.0, 1.0], [1.0, 0.0]])
    chain = st.DecodingChain(flip, flip)
    with pytest.raises(ValueError, match="these draft lengths.*periodic"):
        long_run_rate(chain, 1, 0.1)
    assert long_run_rate(chain, 2, 0.1) == pytest.approx(3 / 1.2)

"""Greedy multi-draft drafting (top tokens plus random ones): optimal acceptance, exact and LP-checked."""

import numpy as np
import pytest

from spectheory.analysis.drafting_laws import (
    greedy_optimal_acceptance,
    greedy_tuple_law,
    top_tokens,
    tuple_law_optimal_acceptance,
)
from spectheory.analysis.optimal_transport import optimal_multidraft_acceptance
from spectheory.verifiers.optimal_coupling import draft_tuple_law, optimal_coupling_lp


def pairs(n, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(n):
        V = int(rng.integers(2, 6))
        t, d = rng.dirichlet(np.full(V, 0.6)), rng.dirichlet(np.full(V, 0.6))
        if rng.random() < 0.3:
            d[rng.integers(V)] = 0.0
            d /= d.sum()
        yield t, d


@pytest.mark.parametrize("replacement", [True, False])
def test_closed_form_equals_exhaustive_equals_lp(replacement):
    for t, d in pairs(25, seed=int(replacement)):
        for k in (1, 2, 3):
            if k > t.size:
                continue
            law = greedy_tuple_law(d, k, replacement=replacement)
            assert abs(law[1].sum() - 1) < 1e-12
            exhaustive = tuple_law_optimal_acceptance(t, *law)
            closed = greedy_optimal_acceptance(t, d, k, replacement=replacement)
            lp = optimal_coupling_lp(t, d, k, replacement, tuple_law=law)
            assert abs(closed - exhaustive) < 1e-12
            assert abs(lp.acceptance - exhaustive) < 1e-8
            np.testing.assert_allclose(lp.output_law, t, atol=1e-9)  # the LP's coupling is lossless


def test_more_top_tokens_by_lp_and_no_top_tokens_is_plain_sampling():
    for t, d in pairs(10, seed=7):
        k = min(3, t.size)
        for n_top in range(k + 1):
            law = greedy_tuple_law(d, k, n_top, replacement=False)
            lp = optimal_coupling_lp(t, d, k, False, tuple_law=law).acceptance
            assert abs(greedy_optimal_acceptance(t, d, k, n_top, replacement=False) - lp) < 1e-8
        for replacement in (True, False):
            got = greedy_optimal_acceptance(t, d, k, 0, replacement)
            assert abs(got - optimal_multidraft_acceptance(t, d, k, replacement)) < 1e-12
            tup, pr = draft_tuple_law(d, k, replacement)
            assert abs(tuple_law_optimal_acceptance(t, tup, pr) - got) < 1e-12


def test_sun_example_greedy_is_below_iid_and_wo():
    t, d = [1 / 3, 2 / 3], [2 / 3, 1 / 3]
    assert top_tokens(d, 1).tolist() == [0]
    assert abs(greedy_optimal_acceptance(t, d, 2) - 2 / 3) < 1e-12  # q(T) - p(T) = 1/3
    assert abs(optimal_multidraft_acceptance(t, d, 2) - 8 / 9) < 1e-12  # 1 - (4/9 - 1/3)
    assert abs(greedy_optimal_acceptance(t, d, 2, replacement=False) - 1.0) < 1e-12
    assert abs(optimal_multidraft_acceptance(t, d, 2, replacement=False) - 1.0) < 1e-12


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="n_top"):
        greedy_tuple_law([0.5, 0.5], 2, 3)
    with pytest.raises(ValueError, match="tuple_law"):
        optimal_coupling_lp([0.5, 0.5], [0.5, 0.5], 2, tuple_law=(np.array([[0]]), np.array([1.0])))

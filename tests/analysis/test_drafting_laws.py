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


@pytest.mark.parametrize("seed", range(6))
def test_acceptance_by_drafting_law_lp_checked_and_rules_below_optimum(seed):
    from spectheory.analysis.drafting_laws import acceptance_by_drafting_law

    rng = np.random.default_rng(100 + seed)
    V = 3 + seed % 2
    t, d = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
    for k in (2, 3):
        tab = acceptance_by_drafting_law(t, d, k)
        laws = {
            "iid": draft_tuple_law(d, k, True),
            "without_replacement": draft_tuple_law(d, k, False),
            "greedy_iid": greedy_tuple_law(d, k, replacement=True),
            "greedy_wo": greedy_tuple_law(d, k, replacement=False),
        }
        for name, law in laws.items():
            lp = optimal_coupling_lp(t, d, k, name != "iid", tuple_law=law).acceptance
            assert tab[name]["optimal"] == pytest.approx(lp, abs=1e-9), name
            for rule, value in tab[name].items():
                assert value <= tab[name]["optimal"] + 1e-12, (name, rule)


def test_greedy_children_run_as_a_tree_round():
    """Greedy drafting as a child policy: its drafted sets are greedy_tuple_law's, recursive
    rejection over them stays below the law's optimum, and st.simulate matches the exact engine."""
    import spectheory as st
    from spectheory.children import Greedy
    from spectheory.trees import DraftTree, TreeRound
    from spectheory.verifiers import get_verifier

    rng = np.random.default_rng(7)
    t, d = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
    k = 3
    x = Greedy().draw(np.tile(d, (20_000, 1)), k, rng)
    tup, pr = greedy_tuple_law(d, k)
    sets = {}
    for row, w in zip(tup, pr):
        key = frozenset(int(v) for v in row)
        sets[key] = sets.get(key, 0.0) + w
    for key, w in sets.items():
        freq = np.mean([frozenset(r.tolist()) == key for r in x])
        assert abs(freq - w) <= 5 * np.sqrt(w * (1 - w) / len(x)) + 1e-12
    A, R = Greedy().node_laws(t[None], d[None], k)
    np.testing.assert_allclose(A.sum(0)[0] + R[0], t, atol=1e-12)
    assert A.sum() <= greedy_optimal_acceptance(t, d, k) + 1e-12
    chain = st.DecodingChain.random(3, rng=0)
    rnd = TreeRound(DraftTree.from_branching([3, 1]), get_verifier("tree_greedy"))
    ex = chain.protocol(8, rnd)
    sim = st.simulate(chain, 8, rnd, 3000, rng=1)
    m, se = sim.mean_se("target_calls")
    assert abs(m - ex.target_calls) <= 5 * se

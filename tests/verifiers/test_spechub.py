"""SpecHub (Sun et al., EMNLP 2024): exact plan in Fractions, LP-checked optimum, Monte Carlo.

Exact = the four-stage transport plan of ``spechub_plan`` in Fractions: lossless (output law =
target exactly), acceptance = the closed form ``1 - (E - p_a)_+`` = the exhaustive and LP optima
of its drafting law; beside recursive rejection on i.i.d. drafts and the i.i.d. optimum at
``k = 2``; the authors' sampler and staged verifier sampled within 5 SE of the exact values.
"""

from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_within_se

from spectheory.analysis.drafting_laws import (
    acceptance_by_drafting_law,
    greedy_optimal_acceptance,
    greedy_tuple_law,
    tuple_law_optimal_acceptance,
)
from spectheory.analysis.optimal_transport import optimal_multidraft_acceptance
from spectheory.verifiers.multidraft import rrs_acceptance
from spectheory.verifiers.optimal_coupling import optimal_coupling_lp
from spectheory.verifiers.spechub import (
    hub_token,
    spechub_acceptance,
    spechub_output_law,
    spechub_plan,
    spechub_tuple_law,
)
from spectheory.verifiers.spechub_sampling import spechub_draw, spechub_rule, spechub_verify

P, Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]


def rand_law(rng, V):
    w = rng.integers(0, 4, size=V) + (rng.random(V) < 0.5)
    w[0] += w.sum() == 0
    return [F(int(x), int(w.sum())) for x in w]


def closed_form(p, q):
    """``1 - (E - p_a)_+`` of the module's theorem, by hand (q not a point mass)."""
    a = hub_token(q)
    rest = 1 - q[a]
    E = sum(max(q[i] / rest - p[i], 0) for i in range(len(p)) if i != a)
    return 1 - max(E - p[a], 0)


@pytest.mark.parametrize("seed", range(10))
def test_exact_plan_is_lossless_and_optimal_for_its_drafting_law(seed):
    rng = np.random.default_rng(seed)
    V = 2 + seed % 4
    p, q = rand_law(rng, V), rand_law(rng, V)
    tup, law, plan = spechub_plan(p, q)
    assert list(plan.sum(1)) == list(law) and sum(law) == 1
    assert list(spechub_output_law(p, q)) == p  # exact TV from the target: 0
    acc = spechub_acceptance(p, q)
    assert isinstance(acc, F)
    if max(q) < 1:
        assert acc == closed_form(p, q)
    t, d = np.array(p, dtype=float), np.array(q, dtype=float)
    tl = spechub_tuple_law(d)
    assert abs(float(acc) - tuple_law_optimal_acceptance(t, *tl)) < 1e-12
    assert abs(float(acc) - greedy_optimal_acceptance(t, d, 2, replacement=False)) < 1e-12
    if tup.shape[0] > 1:
        lp = optimal_coupling_lp(t, d, 2, tuple_law=tl)
        assert abs(float(acc) - lp.acceptance) < 1e-8
        np.testing.assert_allclose(lp.output_law, t, atol=1e-9)
    assert abs(spechub_acceptance(t, d) - float(acc)) < 1e-12  # float path agrees


def test_drafted_sets_are_greedy_without_replacement():
    rng = np.random.default_rng(3)
    for _ in range(10):
        d = rng.dirichlet(np.ones(4))
        d[rng.integers(4)] *= rng.random() < 0.3
        d /= d.sum()

        def sets(law):
            out = {}
            for row, w in zip(*law):
                key = frozenset(int(v) for v in row if v >= 0)
                out[key] = out.get(key, 0.0) + w
            return out

        a, b = sets(spechub_tuple_law(d)), sets(greedy_tuple_law(d, 2, replacement=False))
        assert a.keys() == b.keys()
        for key in a:
            assert abs(a[key] - b[key]) < 1e-12


def test_sun_example_and_point_mass_draft():
    tup, law, plan = spechub_plan(P, Q)
    assert tup.tolist() == [[1, 0], [0, 1]] and list(law) == [F(1, 3), F(2, 3)]
    assert spechub_acceptance(P, Q) == 1  # V = 2: the pair is the vocabulary
    assert rrs_acceptance([1 / 3, 2 / 3], [2 / 3, 1 / 3], 2) == pytest.approx(7 / 9, abs=1e-12)
    assert optimal_multidraft_acceptance([1 / 3, 2 / 3], [2 / 3, 1 / 3], 2) == pytest.approx(8 / 9)
    p, q = [F(1, 4), F(1, 2), F(1, 4)], [F(0), F(1), F(0)]
    tup, law, plan = spechub_plan(p, q)
    assert tup.tolist() == [[1, -1]] and list(plan.sum(0)) == p
    assert spechub_acceptance(p, q) == F(1, 2)
    acc, tok = spechub_verify(np.array(p, dtype=float), np.array(q, dtype=float), 20_000, rng=2)
    assert_within_se(acc.mean(), np.sqrt(0.25 / 20_000), 0.5, "point-mass draft")


def test_against_iid_recursive_rejection_and_the_iid_optimum():
    """Neither drafting law dominates: SpecHub (optimal on its own drafts) falls below recursive
    rejection on i.i.d. drafts on some instances and beats even the i.i.d. optimum on others."""
    rng = np.random.default_rng(11)
    below_rrs = above_opt = 0
    for _ in range(300):
        V = int(rng.integers(3, 6))
        t, d = rng.dirichlet(np.full(V, 0.6)), rng.dirichlet(np.full(V, 0.6))
        s = spechub_acceptance(t, d)
        below_rrs += s < rrs_acceptance(t, d, 2) - 1e-9
        above_opt += s > optimal_multidraft_acceptance(t, d, 2) + 1e-9
    assert below_rrs > 0 and above_opt > 0
    t, d = np.array([0.5, 0.3, 0.2]), np.array([0.2, 0.5, 0.3])
    assert spechub_acceptance(t, d) == pytest.approx(0.9, abs=1e-12)
    assert spechub_acceptance(t, d) > optimal_multidraft_acceptance(t, d, 2) > rrs_acceptance(t, d, 2)


def test_acceptance_by_drafting_law_has_spechub_at_two_drafts_only():
    t, d = np.array([0.1, 0.2, 0.3, 0.4]), np.array([0.4, 0.1, 0.2, 0.3])
    tab = acceptance_by_drafting_law(t, d, 2)
    assert tab["spechub"]["spechub"] == pytest.approx(tab["spechub"]["optimal"], abs=1e-12)
    assert tab["spechub"]["optimal"] == pytest.approx(tab["greedy_wo"]["optimal"], abs=1e-12)
    assert "spechub" not in acceptance_by_drafting_law(t, d, 3)


def test_monte_carlo_within_5_se():
    """The authors' sampler (cnets.py) and staged verifier (utils.py) against the exact plan."""
    p = [F(1, 8), F(3, 8), F(1, 4), F(1, 4)]
    q = [F(1, 2), F(1, 8), F(1, 4), F(1, 8)]
    t, d = np.array(p, dtype=float), np.array(q, dtype=float)
    n = 200_000
    rng = np.random.default_rng(5)
    x = spechub_draw(d, n, rng)
    tup, law, plan = spechub_plan(p, q)
    freq = np.array([np.mean((x == row).all(1)) for row in tup])
    ex = np.array(law, dtype=float)
    assert_within_se(freq, np.sqrt(ex * (1 - ex) / n), ex, "pair law")
    acc, tok = spechub_rule(t, d, x, rng.random((n, 3)))
    joint = np.zeros((tup.shape[0], 4))
    codes = {tuple(r): i for i, r in enumerate(tup.tolist())}
    rows = np.array([codes[tuple(r)] for r in x.tolist()])
    np.add.at(joint, (rows, tok), 1.0 / n)
    pe = np.array(plan, dtype=float)
    assert_within_se(joint, np.sqrt(pe * (1 - pe) / n), pe, "plan")
    a = float(spechub_acceptance(p, q))
    assert_within_se(acc.mean(), np.sqrt(a * (1 - a) / n), a, "acceptance")
    assert np.array_equal(acc, (x == tok[:, None]).any(1))
    acc2, tok2 = spechub_verify(t, d, n, rng=6)
    assert_within_se(acc2.mean(), np.sqrt(a * (1 - a) / n), a, "spechub_verify")
    out = np.bincount(tok2, minlength=4) / n
    assert_within_se(out, np.sqrt(t * (1 - t) / n), t, "output law")


def test_arguments_are_checked():
    with pytest.raises(ValueError, match="target and draft"):
        spechub_plan([0.5, 0.5], [1.0])
    with pytest.raises(ValueError, match="target and draft"):
        spechub_plan([F(1, 2), F(1, 3)], [F(1, 2), F(1, 2)])
    with pytest.raises(ValueError, match="hub"):
        spechub_rule([0.5, 0.5], [0.6, 0.4], np.array([[1, 1]]), np.zeros((1, 3)))
    with pytest.raises(ValueError, match="candidates, u"):
        spechub_rule([0.5, 0.5], [0.6, 0.4], np.array([[0, 1]]), np.zeros((1, 2)))
    with pytest.raises(ValueError, match="n"):
        spechub_draw([0.5, 0.5], 0)

"""The optimal multi-draft acceptance: the prefix-set theorem against all subsets and the transport LP,
its marginal-gain lemma, and the drafted-set law."""

import itertools

import numpy as np
import pytest

from spectheory.analysis.optimal_transport import drafted_set_law, optimal_multidraft_acceptance, ratio_order
from spectheory.verifiers.optimal_coupling import (
    draft_tuple_law,
    optimal_coupling_lp,
)


def law_pair(seed, vmax=5):
    """Random (target, draft) including zeros, one-hots and equal laws, from an integer seed."""
    rng = np.random.default_rng(seed)
    V = int(rng.integers(2, vmax + 1))
    kind = seed % 5

    def one():
        a = rng.dirichlet(np.full(V, rng.choice([0.2, 1.0, 5.0])))
        if kind == 1:  # zeros
            a[rng.random(V) < 0.4] = 0.0
            if a.sum() == 0:
                a[rng.integers(V)] = 1.0
            a /= a.sum()
        if kind == 2 and rng.random() < 0.5:  # one-hot
            a = np.eye(V)[rng.integers(V)]
        return a

    t = one()
    d = t.copy() if kind == 3 else one()
    return t, d


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("replacement", [True, False])
def test_optimum_prefix_equals_subsets_and_lp(seed, replacement):
    t, d = law_pair(seed, vmax=4)
    V = t.size
    for k in range(1, V + 1):
        pre = optimal_multidraft_acceptance(t, d, k, replacement)
        sub = optimal_multidraft_acceptance(t, d, k, replacement, method="subsets")
        cp = optimal_coupling_lp(t, d, k, replacement)
        assert pre == pytest.approx(sub, abs=1e-12)
        assert pre == pytest.approx(cp.acceptance, abs=1e-8)  # HiGHS feasibility tolerance
        np.testing.assert_allclose(cp.output_law, t, atol=1e-8)
        np.testing.assert_allclose(cp.plan.sum(1), cp.tuple_law, atol=1e-8)


@pytest.mark.parametrize("seed", range(40))
def test_marginal_gain_lemma_without_replacement(seed):
    """The lemma behind the prefix claim without replacement (module docstring), on every
    (R, y, z) of a random instance: [f(R+y+z) - f(R+y)]/q(z) >= [f(R+y) - f(R)]/q(y)."""
    rng = np.random.default_rng(seed)
    V = int(rng.integers(3, 6))
    d = rng.dirichlet(np.full(V, rng.choice([0.3, 1.0, 3.0])))
    d = np.maximum(d, 1e-3)
    d /= d.sum()
    k = int(rng.integers(1, V + 1))
    masks, probs = drafted_set_law(d, k)
    f = lambda S: probs[(masks & ~S) == 0].sum()  # noqa: E731  D(all in S)
    for y, z in itertools.permutations(range(V), 2):
        rest = [x for x in range(V) if x not in (y, z)]
        for r in range(len(rest) + 1):
            for R in itertools.combinations(rest, r):
                Rm = sum(1 << x for x in R)
                a = f(Rm | 1 << y) - f(Rm)
                b = f(Rm | 1 << y | 1 << z) - f(Rm | 1 << y)
                assert b / d[z] >= a / d[y] - 1e-10


def test_drafted_set_law_against_tuples():
    d = np.array([0.1, 0.4, 0.2, 0.3])
    for k in (1, 2, 3, 4):
        masks, probs = drafted_set_law(d, k)
        tup, law = draft_tuple_law(d, k, replacement=False)
        codes = (np.int64(1) << tup).sum(1)
        agg = {m: 0.0 for m in masks.tolist()}
        for c, p in zip(codes.tolist(), law):
            agg[c] += p
        np.testing.assert_allclose([agg[m] for m in masks.tolist()], probs, atol=1e-14)
        assert probs.sum() == pytest.approx(1.0, abs=1e-14)


def test_ratio_order_puts_zero_draft_last():
    assert ratio_order([0.5, 0.2, 0.3], [0.0, 0.5, 0.5]).tolist() == [1, 2, 0]

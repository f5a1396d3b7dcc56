"""Biased acceptance: optimal rejection law, the Pareto line, naive law above it, sequence level."""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_frequencies, law_pair
from hypothesis import given, settings
from hypothesis import strategies as hst

import spectheory as st
from spectheory.analysis.pareto import (
    all_sequences,
    pareto_front,
    sequence_front,
)
from spectheory.verifiers.biased import (
    additive_acceptance,
    biased_rule,
    biased_step,
    lenient_acceptance,
    over_accepts,
    ratio_acceptance,
    sample_biased_step,
    typical_acceptance,
)
from spectheory.verifiers.rejection import rejection_step, standard_rule

SEEDS = hst.integers(0, 2**32 - 1)


def _over_accepting(seed):
    rng = np.random.default_rng(seed + 1)
    e = float(rng.uniform(0, 0.5))
    return [additive_acceptance(e), ratio_acceptance(e), lenient_acceptance(float(rng.uniform(0.05, 1)))]


@settings(max_examples=150, deadline=None)
@given(SEEDS)
def test_over_accepting_rules_lie_on_the_line_and_naive_above(seed):
    t, d = law_pair(seed)
    tv = float(st.tv(t, d))
    front = pareto_front(t, d)
    for acc in _over_accepting(seed):
        assert over_accepts(t, d, acc)
        opt = biased_step(t, d, acc, "optimal")
        np.testing.assert_allclose(opt.rejection + opt.loss, tv, atol=1e-10)  # on the line
        np.testing.assert_allclose(opt.loss, front.loss_at(opt.rejection), atol=1e-10)
        np.testing.assert_allclose(opt.rejection_law, st.residual(t, d), atol=1e-10)
        naive = biased_step(t, d, acc, "target")
        np.testing.assert_allclose(naive.rejection, opt.rejection, atol=1e-15)
        a, rho = naive.accepted, float(naive.rejection)
        # strictly above iff rho > 0 and a > (1 - rho) t somewhere on supp(t)  (module docstring)
        strict = rho > 1e-9 and np.any((t > 0) & (a - (1 - rho) * t > 1e-9))
        if strict:
            assert naive.excess > 1e-12
        else:
            np.testing.assert_allclose(naive.excess, 0.0, atol=1e-9)
        assert naive.excess >= -1e-12


@settings(max_examples=150, deadline=None)
@given(SEEDS)
def test_optimal_law_beats_any_law_and_bound_holds_for_any_b(seed):
    t, d = law_pair(seed)
    rng = np.random.default_rng(seed)
    b = rng.random(t.size) * (rng.random(t.size) < 0.8)
    opt = biased_step(t, d, b, "optimal")
    assert opt.rejection + opt.loss >= float(st.tv(t, d)) - 1e-12  # Theorem 5 bound
    np.testing.assert_allclose(opt.loss, np.maximum(d * b - t, 0).sum(), atol=1e-12)
    for _ in range(5):
        P = rng.dirichlet(np.ones(t.size))
        assert rejection_step(t, d, b, P).loss >= opt.loss - 1e-12  # P* is optimal


def test_biased_step_against_fractions():
    t = [F(1, 10), F(3, 5), F(3, 10)]
    d = [F(1, 2), F(1, 5), F(3, 10)]
    eps = F(1, 20)
    b = [min(F(1), (t[x] + eps) / d[x]) for x in range(3)]
    a = [d[x] * b[x] for x in range(3)]
    rho = 1 - sum(a)
    gap = [max(t[x] - a[x], F(0)) for x in range(3)]
    out = [a[x] + rho * gap[x] / sum(gap) for x in range(3)]
    loss = sum(abs(out[x] - t[x]) for x in range(3)) / 2
    naive_out = [a[x] + rho * t[x] for x in range(3)]
    naive_loss = sum(abs(naive_out[x] - t[x]) for x in range(3)) / 2
    tf, df = np.array(t, dtype=float), np.array(d, dtype=float)
    opt = biased_step(tf, df, additive_acceptance(0.05))
    nai = biased_step(tf, df, additive_acceptance(0.05), "target")
    np.testing.assert_allclose(opt.output, np.array(out, dtype=float), atol=1e-12)
    np.testing.assert_allclose(
        [opt.rejection, opt.loss, nai.loss], [float(rho), float(loss), float(naive_loss)], atol=1e-12
    )


def test_lenience_loss_is_excess_acceptance():
    t, d = np.array([0.05, 0.15, 0.5, 0.3]), np.array([0.4, 0.3, 0.2, 0.1])
    base = np.minimum(t, d).sum()
    for l in (1.0, 0.8, 0.5, 0.2):
        step = biased_step(t, d, lenient_acceptance(l))
        np.testing.assert_allclose(step.loss, np.minimum(t / l, d).sum() - base, atol=1e-12)
    np.testing.assert_allclose(biased_step(t, d, lenient_acceptance(1.0)).loss, 0.0, atol=1e-15)


def test_typical_acceptance_threshold():
    t = np.array([0.7, 0.2, 0.06, 0.04])
    d = np.full(4, 0.25)
    H = -(t * np.log(t)).sum()
    thr = min(0.09, 0.3 * np.exp(-H))  # about 0.09 vs 0.3 e^{-H} = 0.124 -> 0.09
    b = typical_acceptance()(t, d)
    np.testing.assert_array_equal(b, (t > thr).astype(float))
    assert b.tolist() == [1.0, 1.0, 0.0, 0.0]
    step = biased_step(t, d, typical_acceptance(), "target")
    np.testing.assert_allclose(step.rejection, 0.5)
    np.testing.assert_allclose(step.output, 0.25 * b + 0.5 * t)
    assert not over_accepts(t, d, typical_acceptance())
    assert biased_step(t, d, typical_acceptance(), "optimal").excess > 0  # under-accepting: above line


def test_biased_step_sampler():
    t, d = np.array([0.1, 0.0, 0.6, 0.3]), np.array([0.4, 0.2, 0.2, 0.2])
    acc = ratio_acceptance(0.2)
    for rej in ("optimal", "target"):
        step = biased_step(t, d, acc, rej)
        n = 200_000
        tok, r = sample_biased_step(t, d, acc, rej, size=n, rng=3)
        freq = np.bincount(tok, minlength=4) / n
        o = step.output
        assert_frequencies(freq, o, n, "output law")  # seed fixed
        rho = float(step.rejection)
        assert abs(r.mean() - rho) <= 5 * np.sqrt(rho * (1 - rho) / n) + 1e-12


CHAIN = st.DecodingChain.random(3, rng=31)
RULES = [
    standard_rule(),
    biased_rule(additive_acceptance(0.1)),
    biased_rule(additive_acceptance(0.1), "target"),
    biased_rule(lenient_acceptance(0.5)),
    biased_rule(typical_acceptance(), "target"),
]


def test_bad_input():
    with pytest.raises(ValueError, match="eps"):
        additive_acceptance(-0.1)
    with pytest.raises(ValueError, match="eps"):
        ratio_acceptance(-1e-3)
    for bad in (0.0, 1.2, -0.5):
        with pytest.raises(ValueError, match="lenience"):
            lenient_acceptance(bad)
    with pytest.raises(ValueError, match="epsilon"):
        typical_acceptance(epsilon=-0.1)
    with pytest.raises(ValueError, match="delta"):
        typical_acceptance(delta=-0.3)
    with pytest.raises(ValueError, match="rejection"):
        biased_step([0.5, 0.5], [0.9, 0.1], additive_acceptance(0.1), "uniform")
    with pytest.raises(ValueError, match="accept"):
        biased_step([0.5, 0.5], [0.9, 0.1], [0.5, 1.5])
    with pytest.raises(ValueError, match="num"):
        pareto_front([0.5, 0.5], [0.9, 0.1], num=1)
    with pytest.raises(ValueError, match="max_sequences"):
        sequence_front(CHAIN, 4, RULES[:1], max_sequences=10)
    assert list(itertools.islice(all_sequences(2, 2).tolist(), 2)) == [[0, 0], [0, 1]]

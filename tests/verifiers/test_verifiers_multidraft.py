"""Multi-draft verification at one position: RRS (with/without replacement), K-SEQ, optimum.

Independent methods compared: closed forms / recursions in the library, plain-Python
enumeration of every candidate tuple with ``fractions.Fraction``, the transport LP (HiGHS),
the exhaustive search over all token sets, and Monte Carlo.
"""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_frequencies
from hypothesis import given, settings
from hypothesis import strategies as st_
from scipy import stats

from spectheory.analysis.optimal_transport import drafted_set_law, optimal_multidraft_acceptance
from spectheory.verifiers.kseq import (
    kseq_acceptance,
    kseq_beta,
    kseq_output_law,
    kseq_residual,
    kseq_rho,
    kseq_rule,
    kseq_verify,
)
from spectheory.verifiers.multidraft import (
    candidates_from_uniforms,
    rrs_acceptance,
    rrs_output_law,
    rrs_rule,
    rrs_verify,
)
from spectheory.verifiers.optimal_coupling import (
    optimal_coupling_lp,
    optimal_rule,
    optimal_verify,
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


# ---------------------------------------------------------------- Fraction enumerations
def frac_tuples(draft, k, replacement):
    """All candidate tuples with their (Fraction) probabilities, by plain enumeration."""
    V = len(draft)
    out = []
    for tup in itertools.product(range(V), repeat=k):
        p, removed = F(1), set()
        for x in tup:
            if not replacement and x in removed:
                p = 0
                break
            rem = 1 if replacement else 1 - sum((draft[y] for y in removed), F(0))
            p *= draft[x] / rem
            removed.add(x)
        if p:
            out.append((tup, p))
    return out


def frac_norm_excess(r, d):
    ex = [max(a - b, 0) for a, b in zip(r, d)]
    s = sum(ex)
    return [e / s for e in ex] if s else list(r)


def frac_rrs(target, draft, k, replacement):
    """Acceptance and output law of RRS by applying the rule to every tuple (Fractions)."""
    V = len(target)
    law = [F(0)] * V
    acc = F(0)
    for tup, p in frac_tuples(draft, k, replacement):
        r, dc = list(target), list(draft)
        done = False
        for x in tup:
            a = min(F(1), r[x] / dc[x])
            law[x] += p * a
            acc += p * a
            p *= 1 - a
            r = frac_norm_excess(r, dc)
            if not replacement:
                dc[x] = F(0)
                s = sum(dc)
                dc = [v / s for v in dc] if s else dc
            if p == 0:
                done = True
                break
        if not done:
            law = [a + p * b for a, b in zip(law, r)]
    return acc, law


def frac_optimum(target, draft, k, replacement):
    """1 - max_S [D(all in S) - t(S)] over all token sets, with D enumerated (Fractions)."""
    V = len(target)
    tuples = frac_tuples(draft, k, replacement)
    best = F(0)
    for r in range(V + 1):
        for S in itertools.combinations(range(V), r):
            D = sum((p for tup, p in tuples if set(tup) <= set(S)), F(0))
            best = max(best, D - sum((target[x] for x in S), F(0)))
    return 1 - best


TINY = [
    ([F(1, 5), F(1, 2), F(3, 10)], [F(3, 5), F(1, 10), F(3, 10)]),
    ([F(1, 3), F(2, 3), F(0)], [F(1, 2), F(1, 4), F(1, 4)]),
    ([F(1, 10), F(2, 5), F(1, 4), F(1, 4)], [F(1, 2), F(1, 8), F(1, 8), F(1, 4)]),
]


@pytest.mark.parametrize("case", range(len(TINY)))
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("replacement", [True, False])
def test_rrs_and_optimum_match_fraction_enumeration(case, k, replacement):
    tf, df = TINY[case]
    t, d = np.array(tf, float), np.array(df, float)
    acc, law = frac_rrs(tf, df, k, replacement)
    assert sum(law) == 1 and law == list(tf)  # exact losslessness, in rationals
    assert rrs_acceptance(t, d, k, replacement) == pytest.approx(float(acc), abs=1e-13)
    np.testing.assert_allclose(rrs_output_law(t, d, k, replacement), np.array(law, float), atol=1e-13)
    opt = frac_optimum(tf, df, k, replacement)
    assert optimal_multidraft_acceptance(t, d, k, replacement) == pytest.approx(float(opt), abs=1e-13)


@pytest.mark.parametrize("case", range(len(TINY)))
@pytest.mark.parametrize("k", [1, 2, 3])
def test_kseq_at_rational_rho_matches_fractions(case, k):
    tf, df = TINY[case]
    t, d = np.array(tf, float), np.array(df, float)
    rho = F(k)  # rho = k is always valid
    a = [min(q, p / rho) for p, q in zip(tf, df)]
    beta = sum(a)
    # enumerate every candidate tuple and apply the rule in rationals
    law = [F(0)] * len(tf)
    accept = F(0)
    c = (1 - (1 - beta) ** k) / beta
    res_num = [p - ai * c for p, ai in zip(tf, a)]
    assert min(res_num) >= 0
    res = [v / sum(res_num) for v in res_num] if sum(res_num) else list(tf)
    for tup, p in frac_tuples(df, k, True):
        for x in tup:
            acc_x = min(F(1), tf[x] / (rho * df[x]))
            law[x] += p * acc_x
            accept += p * acc_x
            p *= 1 - acc_x
        law = [v + p * r for v, r in zip(law, res)]
    assert law == list(tf)
    assert accept == 1 - (1 - beta) ** k
    assert kseq_acceptance(t, d, k, rho=float(rho)) == pytest.approx(float(accept), abs=1e-13)
    np.testing.assert_allclose(kseq_output_law(t, d, k, rho=float(rho)), np.array(law, float), atol=1e-13)


# ---------------------------------------------------------------- optimum: prefix vs subsets vs LP


# ---------------------------------------------------------------- k = 1 and orderings
@given(st_.integers(0, 10_000))
@settings(max_examples=40, deadline=None)
def test_k1_reduces_to_sum_min(seed):
    t, d = law_pair(seed)
    base = np.minimum(t, d).sum()
    for val in (
        rrs_acceptance(t, d, 1),
        rrs_acceptance(t, d, 1, False),
        kseq_acceptance(t, d, 1),
        optimal_multidraft_acceptance(t, d, 1),
        optimal_multidraft_acceptance(t, d, 1, False),
    ):
        assert val == pytest.approx(base, abs=1e-12)


@given(st_.integers(0, 10_000), st_.integers(1, 6))
@settings(max_examples=60, deadline=None)
def test_orderings(seed, k):
    t, d = law_pair(seed, vmax=6)
    opt = optimal_multidraft_acceptance(t, d, k)
    ks = kseq_acceptance(t, d, k)
    assert opt + 1e-12 >= ks >= (1 - (1 - 1 / k) ** k) * opt - 1e-12  # SpecTr Theorem 3
    assert rrs_acceptance(t, d, k) <= opt + 1e-9
    # more drafts never hurt the optimum
    assert optimal_multidraft_acceptance(t, d, k + 1) >= opt - 1e-12
    if k <= t.size:
        opt_wo = optimal_multidraft_acceptance(t, d, k, replacement=False)
        assert opt_wo >= opt - 1e-12
        assert rrs_acceptance(t, d, k, replacement=False) <= opt_wo + 1e-9


@given(st_.integers(0, 10_000), st_.integers(1, 5))
@settings(max_examples=50, deadline=None)
def test_exact_laws_are_the_target(seed, k):
    t, d = law_pair(seed)
    np.testing.assert_allclose(rrs_output_law(t, d, k), t, atol=1e-12)
    np.testing.assert_allclose(kseq_output_law(t, d, k), t, atol=1e-9)
    assert kseq_residual(t, d, k).min() >= 0
    if k <= t.size:
        np.testing.assert_allclose(rrs_output_law(t, d, k, replacement=False), t, atol=1e-12)


@given(st_.integers(0, 10_000), st_.integers(1, 4))
@settings(max_examples=40, deadline=None)
def test_kseq_rho_is_the_smallest_valid(seed, k):
    t, d = law_pair(seed)
    rho = kseq_rho(t, d, k)
    assert 1.0 <= rho <= k
    b = kseq_beta(t, d, rho)
    assert 1 - (1 - b) ** k <= rho * b + 1e-12
    if rho > 1.0:  # slightly smaller rho is invalid
        rl = rho * (1 - 1e-9)
        bl = kseq_beta(t, d, rl)
        assert 1 - (1 - bl) ** k > rl * bl - 1e-12


def test_equal_laws_accept_always():
    t = np.array([0.3, 0.3, 0.4])
    for k in (1, 2, 3):
        assert rrs_acceptance(t, t, k) == pytest.approx(1.0)
        assert rrs_acceptance(t, t, k, False) == pytest.approx(1.0)
        assert kseq_acceptance(t, t, k) == pytest.approx(1.0)
        assert optimal_multidraft_acceptance(t, t, k) == pytest.approx(1.0)


def test_known_values():
    t, d = [0.5, 0.5], [0.9, 0.1]
    # with replacement: P(all rejected) = TV(t, d) * TV((0, 1), d) = 0.4 * 0.9
    assert rrs_acceptance(t, d, 2) == pytest.approx(1 - 0.4 * 0.9)
    # without replacement two candidates cover V = 2: always accepted
    assert rrs_acceptance(t, d, 2, replacement=False) == pytest.approx(1.0)
    # optimum: S = {0}: d(S)^2 - t(S) = 0.81 - 0.5
    assert optimal_multidraft_acceptance(t, d, 2) == pytest.approx(0.69)


# ---------------------------------------------------------------- rules with hand-picked uniforms
def test_rrs_rule_hand_uniforms():
    t, d = np.array([0.5, 0.5]), np.array([0.9, 0.1])
    # candidate 0: ratio 0.5/0.9; residual r_2 = (0, 1): candidate 0 then has ratio 0.
    idx, tok = rrs_rule(
        t, d, [[0, 0], [0, 1], [0, 0]], [[0.5, 0.0], [0.6, 0.99], [0.6, 0.0]], [0.0, 0.0, 0.3]
    )
    assert idx.tolist() == [0, 1, -1] and tok.tolist() == [0, 1, 1]
    # without replacement: after rejecting 0 the draft is (0, 1), the residual (0, 1): ratio 1
    idx, tok = rrs_rule(t, d, [[0, 1]], [[0.6, 0.999]], [0.0], replacement=False)
    assert idx.tolist() == [1] and tok.tolist() == [1]


def test_kseq_rule_hand_uniforms():
    t, d = np.array([0.5, 0.5]), np.array([0.9, 0.1])
    rho = 2.0  # valid: beta = 0.35, 1 - 0.65^2 = 0.5775 <= 0.7
    # ratio(0) = 0.5 / 1.8 = 0.278, ratio(1) = 0.5 / 0.2 (>= 1)
    idx, tok = kseq_rule(t, d, [[0, 0], [0, 1]], [[0.27, 0.9], [0.28, 0.99]], [0.0, 0.0], rho=rho)
    assert idx.tolist() == [0, 1] and tok.tolist() == [0, 1]


def test_candidates_without_replacement_are_distinct_and_padded():
    d = np.array([0.5, 0.0, 0.3, 0.2])
    c = candidates_from_uniforms(d, 4, np.random.default_rng(0).random((500, 4)), replacement=False)
    assert np.all(c[:, 3] == -1)
    assert np.all(np.sort(c[:, :3], 1) == [0, 2, 3])


# ---------------------------------------------------------------- Monte Carlo (>= 5 SE)
N_MC = 60_000


def chi2_ok(tokens, law):
    """Pearson chi-square goodness of fit; fails with probability 1e-6 under the null."""
    V = law.size
    counts = np.bincount(tokens, minlength=V)
    keep = law > 0
    assert counts[~keep].sum() == 0
    exp = law[keep] * tokens.size
    stat = ((counts[keep] - exp) ** 2 / exp).sum()
    return stat <= stats.chi2.isf(1e-6, max(keep.sum() - 1, 1))


@pytest.mark.parametrize("replacement", [True, False])
def test_rrs_monte_carlo(replacement):
    t, d = np.array([0.1, 0.4, 0.25, 0.25]), np.array([0.5, 0.125, 0.125, 0.25])
    k = 3
    idx, tok = rrs_verify(t, d, k, N_MC, rng=11, replacement=replacement)
    exact = rrs_acceptance(t, d, k, replacement)
    assert_frequencies((idx >= 0).mean(), exact, N_MC, "acceptance")  # seed fixed
    assert chi2_ok(tok, t)


def test_kseq_monte_carlo():
    t, d = np.array([0.1, 0.4, 0.25, 0.25]), np.array([0.5, 0.125, 0.125, 0.25])
    k = 3
    idx, tok = kseq_verify(t, d, k, N_MC, rng=12)
    exact = kseq_acceptance(t, d, k)
    assert_frequencies((idx >= 0).mean(), exact, N_MC, "acceptance")  # seed fixed
    assert chi2_ok(tok, t)


@pytest.mark.parametrize("replacement", [True, False])
def test_optimal_verifier_attains_optimum(replacement):
    t, d = np.array([0.1, 0.4, 0.25, 0.25]), np.array([0.5, 0.125, 0.125, 0.25])
    k = 2
    cp = optimal_coupling_lp(t, d, k, replacement)
    acc, tok = optimal_verify(t, d, k, N_MC, rng=13, replacement=replacement, coupling=cp)
    exact = optimal_multidraft_acceptance(t, d, k, replacement)
    assert_frequencies(acc.mean(), exact, N_MC, "acceptance")  # seed fixed
    assert chi2_ok(tok, t)
    # the rule itself: hand-picked uniform 0 gives the first token of the conditional row
    first = cp.tuples[:1]
    row = cp.conditional()[0]
    assert optimal_rule(cp, first, [0.0])[1][0] == np.flatnonzero(row > 0)[0]


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("fn", [rrs_acceptance, kseq_acceptance, optimal_multidraft_acceptance])
def test_bad_k(fn):
    with pytest.raises(ValueError, match="k"):
        fn([0.5, 0.5], [0.5, 0.5], 0)


@pytest.mark.parametrize("fn", [rrs_acceptance, optimal_multidraft_acceptance])
def test_k_above_vocab_without_replacement(fn):
    with pytest.raises(ValueError, match="k"):
        fn([0.5, 0.5], [0.5, 0.5], 3, replacement=False)


def test_bad_laws_and_rho():
    with pytest.raises(ValueError, match="target"):
        rrs_acceptance([0.5, 0.6], [0.5, 0.5], 2)
    with pytest.raises(ValueError, match="shape"):
        kseq_acceptance([0.5, 0.5], [0.3, 0.3, 0.4], 2)
    with pytest.raises(ValueError, match="rho"):
        kseq_acceptance([0.2, 0.8], [0.8, 0.2], 3, rho=1.0)
    with pytest.raises(ValueError, match="method"):
        optimal_multidraft_acceptance([0.5, 0.5], [0.5, 0.5], 2, method="magic")


# ---------------------------------------------------------------- tiny draft masses
@pytest.mark.parametrize("eps", [1e-9, 1e-14, 1e-16, 1e-20])
def test_tiny_draft_mass_is_still_drafted_without_replacement(eps):
    """A token with tiny positive draft mass is drafted by successive sampling once the rest
    of the support is used up, so with ``k = V`` every token is drafted and acceptance is 1
    (the final residual never emits a drafted token). The exact values must agree with the
    sampler: they used to drop such tokens (mass <= 1e-15) and report 0.8348."""
    t = np.array([0.245, 0.0285, 0.1652, 0.5613])
    t /= t.sum()
    d = np.array([0.9331, 0.066, eps, 0.0009])
    d /= d.sum()
    k = t.size
    assert rrs_acceptance(t, d, k, replacement=False) == pytest.approx(1.0, abs=1e-12)
    acc, fin = rrs_output_law(t, d, k, replacement=False, parts=True)
    np.testing.assert_allclose(acc, t, atol=1e-12)
    for method in ("prefix", "subsets"):
        assert optimal_multidraft_acceptance(t, d, k, False, method) == pytest.approx(1.0, abs=1e-12)
    masks, probs = drafted_set_law(d, k)
    assert masks.tolist() == [2**k - 1] and probs.sum() == pytest.approx(1.0, abs=1e-12)
    idx, tok = rrs_verify(t, d, k, 2000, rng=3, replacement=False)
    assert np.all(idx >= 0)  # probability 1: every token is a candidate
    # k = V - 1 against the rational enumeration of the same (exactly normalised) laws
    tf = [F(x) for x in t]
    df = [F(x) for x in d]
    tf = [x / sum(tf) for x in tf]
    df = [x / sum(df) for x in df]
    fa, _ = frac_rrs(tf, df, k - 1, False)
    assert rrs_acceptance(t, d, k - 1, replacement=False) == pytest.approx(float(fa), abs=1e-12)


def test_rrs_rule_rejects_out_of_range_candidates():
    for bad in ([[5, 0]], [[-2, 0]]):
        with pytest.raises(ValueError, match="candidates"):
            rrs_rule([0.5, 0.5], [0.5, 0.5], bad, [[0.1, 0.1]], [0.1])


@pytest.mark.parametrize("rho", [10.0, 2.0 + 1e-9, 0.5, np.inf, np.nan, "a"])
def test_kseq_rho_outside_one_to_k_raises(rho):
    """SpecTr's division factor lives in [1, k] (rho = 10 with k = 2 used to give 0.19)."""
    t, d = [0.3, 0.7], [0.6, 0.4]
    for fn in (kseq_acceptance, kseq_output_law, kseq_residual):
        with pytest.raises(ValueError, match="rho"):
            fn(t, d, 2, rho=rho)
    with pytest.raises(ValueError, match="rho"):
        kseq_rule(t, d, [[0, 1]], [[0.5, 0.5]], [0.5], rho=rho)
    assert kseq_acceptance(t, d, 2, rho=2.0) == pytest.approx(1 - (1 - kseq_beta(t, d, 2.0)) ** 2)

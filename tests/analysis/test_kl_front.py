"""The exact KL-constrained front (issue 39, item 5) and the shipped lossy rules placed on it:
the per-prefix step against brute force and scipy, weak duality against random laws and every
rule, the KL = 0 end against Theorem 1, and the shipped rules as Verifiers (exact = Monte Carlo)."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

import spectheory as st
from spectheory.analysis.kl_front import kl_front, kl_step, rule_kl, sequence_kl
from spectheory.analysis.sequence_front import optimal_sequence_front
from spectheory.analysis.sequence_front_tree import rule_point
from spectheory.verifiers.shipped_lossy import (
    bild_acceptance,
    cascade_acceptance,
    fsd_acceptance,
    shipped_lossy_rules,
)


def _objective(o, p, q, c, lam):
    with np.errstate(divide="ignore", invalid="ignore"):
        kl = np.where(o > 0, o * np.log(np.where(o > 0, o, 1) / p), 0.0).sum()
    return np.maximum(o - q, 0).sum() + lam * kl + c @ o


def test_kl_step_against_a_grid_and_scipy():
    rng = np.random.default_rng(0)
    for _ in range(5):
        p, q = rng.dirichlet([1, 1]), rng.dirichlet([1, 1])
        c = rng.uniform(0, 1, 2)
        for lam in (0.05, 0.5, 5.0):
            o = kl_step(p[None], q[None], c[None], lam)[0]
            g = np.linspace(1e-9, 1 - 1e-9, 100_001)
            vals = [_objective(np.array([x, 1 - x]), p, q, c, lam) for x in g[::50]]
            best = g[::50][int(np.argmin(vals))]
            assert abs(o[0] - best) < 2e-3
    p, q, c = rng.dirichlet([1, 1, 1]), rng.dirichlet([1, 1, 1]), rng.uniform(0, 1, 3)
    o = kl_step(p[None], q[None], c[None], 0.3)[0]
    res = minimize(
        lambda z: _objective(np.exp(z) / np.exp(z).sum(), p, q, c, 0.3),
        np.log(p),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-13, "maxiter": 20_000},
    )
    assert _objective(o, p, q, c, 0.3) <= res.fun + 1e-9


def test_no_law_beats_the_front_weak_duality():
    chain = st.DecodingChain.random(3, concentration=0.5, similarity=0.5, rng=2)
    front = kl_front(chain, 3, lambdas=np.logspace(-2, 2, 15), start_state=0)
    forest = front.forest
    rng = np.random.default_rng(1)
    for _ in range(300):
        mix = rng.random()
        leaves = mix * rng.dirichlet(np.full(forest.n_leaves, 0.3)) + (1 - mix) * forest.target_mass[-1]
        assert front.duality_slack(forest.rejections_of(leaves), sequence_kl(forest, leaves)) >= -1e-10
    for i in range(front.kl.size):  # the front's own points are tight at their multiplier
        if np.isfinite(front.lambdas[i]):
            lhs = front.rejections[i] + front.lambdas[i] * front.kl[i]
            assert lhs == pytest.approx(front.dual[i], abs=1e-9)


def test_front_ends_and_shape():
    chain = st.DecodingChain.random(3, concentration=0.5, similarity=0.5, rng=5)
    front = kl_front(chain, 3, start_state=1)
    forest = front.forest
    assert front.kl[0] == 0 and front.rejections[0] == pytest.approx(
        forest.rejections_of(forest.target_mass[-1])
    )
    assert np.all(np.diff(front.rejections) <= 1e-9)  # fewer rejections at larger KL
    kl_q = sequence_kl(forest, forest.draft_mass[-1])
    assert front.kl[-1] == pytest.approx(kl_q, rel=1e-3) and front.rejections[-1] < 1e-6
    # a KL-front law is feasible for the TV LP at its own TV: the LP pays no more
    mid = front.kl.size // 2
    tv = forest.sequence_tv_of(front.laws[mid])
    lp = optimal_sequence_front(chain, 3, [max(tv, 1e-6)], start_state=1)
    assert lp.rejections[0] <= front.rejections[mid] + 1e-7
    assert front.lower_bound(front.kl[mid]) <= front.optimum(front.kl[mid]) + 1e-9


def test_shipped_rules_are_verifiers_on_and_above_both_fronts():
    chain = st.DecodingChain.random(3, concentration=0.6, similarity=0.5, rng=0)
    front = kl_front(chain, 3, start_state=0)
    for fam, param, rule in shipped_lossy_rules(quick=True):
        rej, kl = rule_kl(front.forest, rule)
        assert front.duality_slack(rej, kl) >= -1e-10, (fam, param)
    # threshold 0 FSD and alpha < 0-gap cascades are plain speculative sampling: lossless
    point = rule_point(front.forest, st.verifiers.biased_rule(fsd_acceptance(0.0), "optimal"))
    assert point.sequence_tv < 1e-12
    p, q = np.array([[0.6, 0.4]]), np.array([[0.1, 0.9]])
    assert cascade_acceptance(1.0)(p, q).tolist() == [[1.0, 1.0]]
    assert bild_acceptance(np.log(2))(p, q).tolist() == [[1.0, 0.0]]  # keep x iff p(x) >= 1/2


def test_shipped_rule_exact_tokens_per_call_matches_monte_carlo():
    chain = st.DecodingChain.random(4, concentration=0.6, similarity=0.5, rng=3)
    _, _, rule = shipped_lossy_rules(quick=True)[1]  # cascade, alpha = 0.2
    exact = chain.protocol(16, gamma=3, verifier=rule).tokens_per_call
    mean, se = st.simulate(chain, 16, 3, 20_000, rng=4, verifier=rule).mean_se("target_calls")
    assert abs(16 / mean - exact) <= 5 * 16 / mean**2 * se

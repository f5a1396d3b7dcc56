"""Gumbel-max list sampling (GLS): its exact list law, the round, Monte Carlo, the kit.

Exact = the exponential-polynomial integration of ``gls_list_law`` in Fractions; checked against
the paper's single-draft special case, against Algorithm 1 sampled (5 SE), and the round's
exact engine (``batch_tree_expected(coupling="gls")``) against ``st.simulate`` (5 SE).
"""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_within_se

import spectheory as st
from spectheory.testing import check_round
from spectheory.trees import BatchRound
from spectheory.verifiers.gls import gls_acceptance, gls_list_law, gls_round_law, gls_sample
from spectheory.verifiers.round_laws import generation_law, mean_accepted

P, Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]


def rand_law(rng, V):
    w = rng.integers(0, 4, size=V) + (rng.random(V) < 0.5)
    w[0] += w.sum() == 0
    return [F(int(x), int(w.sum())) for x in w]


@pytest.mark.parametrize("seed", range(8))
def test_marginal_is_target_and_single_draft_is_gumbel_coupling(seed):
    rng = np.random.default_rng(seed)
    V = 2 + seed % 3
    p, q = rand_law(rng, V), rand_law(rng, V)
    for c in (1, 2, 3):
        law = gls_list_law(p, q, c)
        assert list(law.sum(1)) == p
    one = gls_list_law(p, q, 1)
    for y in range(V):
        if p[y] and q[y]:
            ref = 1 / sum(max(p[i] / p[y], q[i] / q[y]) for i in range(V))
            assert one[y, 1] == ref


def test_sun_example_acceptance():
    assert [gls_acceptance(P, Q, K) for K in (1, 2, 3)] == [F(2, 3), F(22, 27), F(241, 270)]


def test_list_law_against_algorithm_1_sampled():
    p, q = np.array([0.5, 0.25, 0.25]), np.array([0.125, 0.5, 0.375])
    n = 200_000
    for K in (2, 3):
        x, y = gls_sample(p, q, K, n, rng=K)
        hits = (x == y[:, None]).sum(1)
        freq = np.zeros((3, K + 1))
        np.add.at(freq, (y, hits), 1.0 / n)
        law = gls_list_law(p, q, K)
        assert_within_se(freq, np.sqrt(law * (1 - law) / n), law, f"K={K}")


def test_round_law_lossless_and_k1():
    for M, gamma in itertools.product((1, 2, 3), (1, 2)):
        gen = generation_law(lambda c, k, M=M: gls_round_law(lambda s: P, lambda s: Q, 2, M, k, c), gamma, 3)
        assert gen == {s: np.prod([P[x] for x in s]) for s in itertools.product(range(2), repeat=3)}
    # one draft: the Gumbel coupling accepts 2/3 per position here, as token verification does
    assert mean_accepted(gls_round_law(lambda s: P, lambda s: Q, 2, 1, 2)) == F(10, 9)


def test_round_exact_equals_enumeration_and_monte_carlo():
    chain = st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3])
    ex = chain.protocol(2, BatchRound(2, 2, reading="gls"), bonus=False)
    # T = 2: a second round iff the first emits one token (a correction at position 1)
    law = gls_round_law(lambda s: P, lambda s: Q, 2, 2, 2)
    assert ex.target_calls == pytest.approx(
        1 + float(sum(w for e, w in law.items() if len(e) == 1)), abs=1e-12
    )
    chain = st.DecodingChain.random(3, rng=0)
    for M in (2, 3):
        rnd = BatchRound(M, 2, reading="gls")
        ex = chain.protocol(8, rnd)
        sim = st.simulate(chain, 8, rnd, 3000, rng=M)
        for name in ("target_calls", "accepted", "rejections"):
            m, se = sim.mean_se(name)
            assert_within_se(m, se, getattr(ex, name), name)


def test_kit_passes_gls_and_verify_refuses_uniforms():
    assert check_round(BatchRound(2, 2, reading="gls"), n_samples=3000, rng=0).passed
    rnd = BatchRound(2, 2, reading="gls")
    with pytest.raises(ValueError, match="randomness"):
        rnd.verifier.verify(
            rnd.tree, np.zeros((1, 5), int), np.ones((1, 5, 2)) / 2, np.ones((1, 5, 2)) / 2, 0, 0
        )

"""HedgeSpec's NormalHedge over draft lengths (spectheory.stopping.hedge): the weights solve
NormalHedge's normalisation, the counterfactual losses are the stated ones, the controller
converges where the answer is known, and on a chain its Monte Carlo through the one round
engine agrees with the path-conditional prediction within 5 combined SE (fixed seeds)."""

import numpy as np
import pytest

import spectheory as st
from spectheory.montecarlo import sample_target
from spectheory.stopping import HedgeGamma
from spectheory.stopping.along_paths import chain_path_inputs
from spectheory.stopping.hedge import normalhedge_weights
from spectheory.validation.policy_predict import predict_controller


def test_normalhedge_weights_solve_the_normalisation():
    r = np.array([[3.0, 1.0, -2.0, 0.5], [0.0, -1.0, -3.0, -0.1], [2.0, 2.0, 2.0, 2.0]])
    w = normalhedge_weights(r)
    np.testing.assert_allclose(w.sum(1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(w[1], 0.25)  # no positive regret: uniform
    np.testing.assert_allclose(w[2], 0.25)
    assert w[0, 2] == 0.0 and w[0, 0] > w[0, 3] > 0
    # recover s from the weight ratio of two positive arms and check mean exp(R+^2 / 2s) = e
    a, b = 3.0, 0.5
    # w_a / w_b = (a / b) exp((a^2 - b^2) / (2 s))
    s = (a * a - b * b) / (2 * np.log(w[0, 0] / w[0, 3] / (a / b)))
    pos = np.maximum(r[0], 0.0)
    assert abs(np.mean(np.exp(pos**2 / (2 * s))) - np.e) < 1e-9


def test_counterfactual_losses():
    pol = HedgeGamma((1, 2, 4), cost=0.5)
    time = 0.5 * np.array([1, 2, 4]) + 1.0
    norm = np.max(np.array([2, 3, 5]) / time)
    # drafted 2, accepted 1: arms accept min(1, g) (all observed)
    got = pol.losses([1], [2], [0.5])
    np.testing.assert_allclose(got[0], 1 - 2 / time / norm, rtol=1e-12)
    # drafted 2, all accepted: arm 4 censored, imputed 2 + 0.5 + 0.25
    got = pol.losses([2], [2], [0.5])
    np.testing.assert_allclose(got[0], 1 - np.array([2, 3, 3.75]) / time / norm, rtol=1e-12)
    assert np.all((got >= 0) & (got <= 1))


@pytest.mark.parametrize("target,draft,expect", [([1.0, 0.0], [1.0, 0.0], 4), ([1.0, 0.0], [0.0, 1.0], 1)])
def test_converges_to_the_known_best_arm(target, draft, expect):
    chain = st.DecodingChain.iid(target, draft)
    res = st.simulate(chain, 80, HedgeGamma((1, 2, 4), cost=0.1), 3, rng=0, cost=0.1)
    calls = res.target_calls
    if expect == 4:  # one round of 1 + 1 bonus, then rounds of 4 + 1
        assert int(calls.max()) <= 2 + int(np.ceil(78 / 5)) + 1
    else:  # every round drafts one token and is rejected
        np.testing.assert_array_equal(res.draft_tokens, calls)


def test_chain_monte_carlo_matches_path_conditional_prediction():
    V, T = 4, 24
    chain = st.DecodingChain.random(V, concentration=0.5, similarity=0.5, rng=3)
    chain0 = st.DecodingChain(chain.target, chain.draft, initial=np.eye(V)[0])
    pol = HedgeGamma((1, 2, 4, 6), cost=0.1)
    sim = st.simulate(chain0, T, pol, 3000, rng=1, cost=0.1)
    inputs = chain_path_inputs(chain0, sample_target(chain0, T, 2000, rng=2))
    pred = predict_controller(inputs, pol, c=0.1, n_coins=2, rng=3)
    m, se = sim.mean_se("target_calls")
    a, sa = pred["target_calls"]
    assert abs(m - a) <= 5 * np.hypot(se, sa), (m, a, se, sa)
    dm = (0.1 * sim.draft_tokens + sim.target_calls) / T
    b, sb = pred["time_per_token"]
    assert abs(dm.mean() - b) <= 5 * np.hypot(dm.std(ddof=1) / np.sqrt(dm.size), sb)


def test_bad_arms():
    with pytest.raises(ValueError, match="arms"):
        HedgeGamma((0, 2))

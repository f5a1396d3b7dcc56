"""Monte Carlo simulator: the verification rule on hand-picked uniforms, bad inputs, and the
law of sampled sequences against the exact target law.

Statistical tests use fixed seeds and a chi-square p-value threshold of 1e-6 (a false failure
about one run in a million, the same level as a 5-standard-error bound)."""

import itertools

import numpy as np
import pytest
from _helpers import assert_frequencies
from scipy import stats

import spectheory as st
from spectheory.laws.sampling import sample_categorical
from spectheory.montecarlo import pooled_chisquare, sample_target, simulate
from spectheory.rounds import sampler as sampler_module
from spectheory.verifiers import TokenVerifier, get_verifier

token_rule = get_verifier("token").rule
token_verify_round = get_verifier("token").verify_round


class UnfusedToken(TokenVerifier):
    """Token verification without the simulator's fused fast path (the generic path)."""

    name = "token_unfused"

    def fused_round(self, inputs, rng):
        return NotImplemented


P_MIN = 1e-6  # chi-square p-value threshold, ~ a 5 SE two-sided bound


# --------------------------------------------------------------- sample_categorical
def test_sample_categorical_inverse_cdf_and_zero_weights():
    probs = np.array([0.2, 0.0, 0.3, 0.5, 0.0])
    # CDF: [0.2, 0.2, 0.5, 1.0, 1.0]; u in [0, .2) -> 0, [.2, .5) -> 2, [.5, 1) -> 3
    u = np.array([0.0, 0.1999, 0.2, 0.4999, 0.5, 0.9999999999999999])
    got = sample_categorical(np.broadcast_to(probs, (u.size, 5)), u)
    assert got.tolist() == [0, 0, 2, 2, 3, 3]


def test_sample_categorical_unnormalised_weights_and_shape_check():
    assert sample_categorical([[2.0, 0.0, 6.0]], [0.3]).tolist() == [2]
    assert sample_categorical([[2.0, 0.0, 6.0]], [0.2]).tolist() == [0]
    with pytest.raises(ValueError, match="u"):
        sample_categorical([[0.5, 0.5]], [0.1, 0.2])


# ----------------------------------------------------------------------- token_rule
def _round_instance():
    """R copies of one round with g = 3, V = 3 (see the comments of each test)."""
    target = np.array(
        [
            [0.5, 0.3, 0.2],  # pos 0: t/d(0) = 2 -> always accept token 0
            [0.1, 0.6, 0.3],  # pos 1: t/d(0) = 0.25 -> accept iff u < 0.25
            [0.2, 0.2, 0.6],  # pos 2: t == d -> always accept
            [0.0, 0.0, 1.0],
        ]
    )  # bonus law
    draft = np.array([[0.25, 0.25, 0.5], [0.4, 0.4, 0.2], [0.2, 0.2, 0.6]])
    tokens = np.array([0, 0, 2])
    return target, draft, tokens


def _rep(a, R):
    return np.broadcast_to(a, (R,) + a.shape).copy()


def test_token_rule_hand_picked_uniforms():
    target, draft, tokens = _round_instance()
    R = 6
    tl, dl, x = _rep(target, R), _rep(draft, R), _rep(tokens, R)
    k = np.array([3, 3, 3, 3, 1, 2])
    u_accept = np.array(
        [
            [0.999, 0.2, 0.999],  # all accepted -> j = 3, bonus law [0,0,1] -> 2
            [0.999, 0.3, 0.5],  # rejected at pos 1; residual (0, .2, .1)/.3
            [0.999, 0.3, 0.5],  # same, other u_final
            [0.999, 0.3, 0.5],  # u_final = 0 never picks the zero-weight token 0
            [0.999, 0.99, 0.99],  # k = 1: padding ignored, final from row 1
            [0.0, 0.249, 0.0],
        ]
    )  # k = 2, u = .249 < .25 accepted, final row 2
    u_final = np.array([0.1, 0.5, 0.7, 0.0, 0.05, 0.9])
    j, y = token_rule(tl, dl, x, k, u_accept, u_final)
    assert j.tolist() == [3, 1, 1, 1, 1, 2]
    assert y.tolist() == [2, 1, 2, 1, 0, 2]


def test_token_rule_zero_target_probability_is_never_accepted():
    target = np.array([[[0.0, 0.5, 0.5], [1 / 3, 1 / 3, 1 / 3]]])
    draft = np.array([[[0.5, 0.25, 0.25]]])
    # u_accept = 0: accepting needs 0 * 0.5 < target(0) = 0, false -> rejection;
    # residual (0, .25, .25) -> u_final .49 gives 1, .5 gives 2
    for uf, want in [(0.49, 1), (0.5, 2)]:
        j, y = token_rule(target, draft, [[0]], [1], [[0.0]], [uf])
        assert (j.tolist(), y.tolist()) == ([0], [want])


def test_token_rule_equal_laws_residual_falls_back_to_target():
    law = np.array([0.2, 0.3, 0.5])
    # tiny rounding difference: draft slightly above target everywhere -> empty residual
    draft = law * (1 + 1e-12)
    tl = np.array([[law, law]])
    j, y = token_rule(tl, draft[None, None], [[2]], [1], [[0.9999999999999]], [0.25])
    # accept iff u < 1 / (1 + 1e-12): u = 1 - 1e-13 rejects; the residual is empty, so the
    # final token comes from the target's inverse CDF at 0.25 (token 1), not NaN or garbage
    assert (j.tolist(), y.tolist()) == ([0], [1])


def test_token_rule_bad_inputs():
    target, draft, tokens = _round_instance()
    tl, dl, x = target[None], draft[None], tokens[None]
    with pytest.raises(ValueError, match="k"):
        token_rule(tl, dl, x, [4], [[0.5] * 3], [0.5])
    with pytest.raises(ValueError, match="k"):
        token_rule(tl, dl, x, [0], [[0.5] * 3], [0.5])
    with pytest.raises(ValueError, match="target_laws"):
        token_rule(tl[:, :3], dl, x, [3], [[0.5] * 3], [0.5])
    with pytest.raises(ValueError, match="draft_tokens"):
        token_rule(tl, dl, [[0, 0, 3]], [3], [[0.5] * 3], [0.5])
    with pytest.raises(ValueError, match="u_accept"):
        token_rule(tl, dl, x, [3], [[0.5] * 2], [0.5])
    with pytest.raises(ValueError, match="uniforms"):
        token_rule(tl, dl, x, [3], [[0.5, 1.0, 0.5]], [0.5])


def test_token_verify_round_one_step_law_is_target():
    # one drafted position, k = 1: the final token given a rejection plus the accepted token
    # must follow the target; chi-square at p > 1e-6 (fixed seed)
    rng = np.random.default_rng(5)
    target = np.array([0.1, 0.0, 0.4, 0.5])
    draft = np.array([0.4, 0.3, 0.3, 0.0])
    R = 40_000
    x = sample_categorical(np.broadcast_to(draft, (R, 4)), rng.random(R))[:, None]
    tl = np.broadcast_to(np.stack([target, target]), (R, 2, 4))
    j, y = token_verify_round(tl, np.broadcast_to(draft, (R, 1, 4)), x, np.ones(R, int), rng)
    emitted = np.where(j == 1, x[:, 0], y)
    counts = np.bincount(emitted, minlength=4)
    assert counts[1] == 0
    keep = target > 0
    assert stats.chisquare(counts[keep], R * target[keep]).pvalue > P_MIN
    # acceptance rate = sum min(target, draft) = 0.1 + 0.3 = 0.4, within 5 SE
    assert_frequencies(j.mean(), 0.4, R, "acceptance rate")


# ------------------------------------------------------------------------ simulate
def test_simulate_bad_inputs():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="gamma"):
        simulate(chain, 5, 0, 10)
    with pytest.raises(ValueError, match="horizon"):
        simulate(chain, 0, 2, 10)
    with pytest.raises(ValueError, match="n_runs"):
        simulate(chain, 5, 2, 0)
    with pytest.raises(ValueError, match="verifier"):
        simulate(chain, 5, 2, 10, verifier="nope")
    inh = st.DecodingChain.random(3, horizon=4, rng=0)
    with pytest.raises(ValueError, match="horizon"):
        simulate(inh, 5, 2, 10)
    with pytest.raises(ValueError, match="n_runs"):
        sample_target(chain, 3, 0)


def test_simulate_rejects_a_verifier_with_bad_output():
    chain = st.DecodingChain.random(3, rng=0)

    class Bad(UnfusedToken):
        name = "bad"

        def _rule(self, t, d, x, k, u_accept, u_final):
            return k + 1, np.zeros_like(k)

    with pytest.raises(ValueError, match="verifier"):
        simulate(chain, 5, 2, 10, verifier=Bad())
    with pytest.raises(ValueError, match="verifier"):
        simulate(chain, 5, 2, 10, verifier=lambda *a: None)  # a bare function is not a Verifier


def test_block_verifier_by_name():
    chain = st.DecodingChain.random(3, rng=0)
    res = simulate(chain, 5, 2, 50, rng=0, verifier="block")
    assert res.verifier == "block"


@pytest.mark.parametrize("tables", [True, False])
def test_fast_token_path_equals_generic_path(monkeypatch, tables):
    # the fused "token" path and the generic path calling token_verify_round consume the same
    # uniforms in the same order, so they must agree run by run and token by token
    if not tables:
        monkeypatch.setattr(sampler_module, "TABLE_LIMIT", 0)
    chain = st.DecodingChain.random(4, n_states=5, horizon=9, rng=3)
    for bonus in (True, False):
        a = simulate(chain, 9, 3, 300, rng=11, bonus=bonus, return_tokens=True)
        b = simulate(chain, 9, 3, 300, rng=11, bonus=bonus, return_tokens=True, verifier=UnfusedToken())
        for name in ("target_calls", "rejections", "draft_tokens", "accepted", "accepted_counts", "tokens"):
            np.testing.assert_array_equal(getattr(a, name), getattr(b, name), err_msg=name)


def test_counters_are_consistent():
    chain = st.DecodingChain.random(5, horizon=17, rng=4)
    T, g = 17, 4
    for bonus in (True, False):
        res = simulate(chain, T, g, 400, rng=2, bonus=bonus)
        np.testing.assert_array_equal(res.accepted_counts.sum(1), res.target_calls)
        np.testing.assert_array_equal(res.accepted_counts @ np.arange(g + 1), res.accepted)
        assert res.accepted_hist.sum() == res.target_calls.sum()
        # every round emits accepted + (rejection or bonus) tokens, T in total
        assert np.all(res.accepted + res.rejections <= T)
        assert np.all(res.draft_tokens <= g * res.target_calls)
        assert np.all(res.draft_tokens >= res.accepted + res.rejections)
        if not bonus:  # every token comes from a draft check: accepted + rejected == T
            np.testing.assert_array_equal(res.accepted + res.rejections, np.full(400, T))


def test_identical_models_never_reject():
    chain = st.DecodingChain.random(4, rng=1, similarity=1.0)
    res = simulate(chain, 20, 3, 200, rng=0, bonus=True)
    assert res.rejections.sum() == 0
    # rounds of gamma + 1 = 4 tokens: 5 rounds of 4
    np.testing.assert_array_equal(res.target_calls, 5)
    np.testing.assert_array_equal(res.draft_tokens, 15)
    res = simulate(chain, 20, 3, 200, rng=0, bonus=False)
    # rounds of 3 tokens: 6 rounds of 3, then one round of k = 2
    np.testing.assert_array_equal(res.target_calls, 7)
    np.testing.assert_array_equal(res.draft_tokens, 20)


def test_summary_and_str():
    chain = st.DecodingChain.random(3, rng=2)
    res = simulate(chain, 10, 2, 300, rng=0)
    s = res.summary()
    assert s["n_runs"] == 300
    m, se = res.mean_se("target_calls")
    assert s["target_calls"] == {"mean": m, "se": se}
    np.testing.assert_allclose(se, res.target_calls.std(ddof=1) / np.sqrt(300))
    np.testing.assert_allclose(s["tokens_per_call"]["mean"], 10 / m)
    text = str(res)
    assert "rejections" in text and "tokens_per_call" in text
    with pytest.raises(ValueError, match="name"):
        res.mean_se("nope")


def test_seeded_determinism():
    chain = st.DecodingChain.random(3, rng=2)
    a = simulate(chain, 10, 2, 50, rng=123, return_tokens=True)
    b = simulate(chain, 10, 2, 50, rng=123, return_tokens=True)
    np.testing.assert_array_equal(a.tokens, b.tokens)
    np.testing.assert_array_equal(sample_target(chain, 6, 20, rng=4), sample_target(chain, 6, 20, rng=4))


# --------------------------------------------------------------- sequence laws
def _exact_target_law(chain, T):
    """P(x_1..x_T) by enumerating sequences with chain.target (independent of the simulator)."""
    V = chain.vocab_size
    seqs = list(itertools.product(range(V), repeat=T))
    law = np.zeros(len(seqs))
    for i, seq in enumerate(seqs):
        for s0 in range(chain.n_states):
            p, s = chain.initial[s0], s0
            for n, x in enumerate(seq):
                kern = chain.target if chain.is_homogeneous else chain.target[n]
                p *= kern[s, x]
                s = chain.next_state[s, x]
            law[i] += p
    return law


def _chisquare_sequences(tokens, law, V):
    res = pooled_chisquare(tokens, np.reshape(law, (V,) * tokens.shape[1]))
    assert res["impossible_samples"] == 0, "a zero-probability sequence was sampled"
    return res["pvalue"]


CHAINS = {
    "homogeneous": lambda: st.DecodingChain.random(3, concentration=0.7, rng=7),
    "inhomogeneous": lambda: st.DecodingChain.random(3, n_states=4, horizon=4, concentration=0.5, rng=8),
    "ngram2": lambda: st.DecodingChain.ngram(
        np.random.default_rng(9).integers(0, 5, (3, 3, 3)) * 1.0,
        np.random.default_rng(10).integers(0, 5, (3, 3, 3)) * 1.0,
        smoothing=0.0,
    ),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_sampled_sequence_laws_match_exact_target_law(name):
    chain = CHAINS[name]()
    T, V, N = 4, 3, 30_000
    law = _exact_target_law(chain, T)
    np.testing.assert_allclose(law.sum(), 1.0, atol=1e-12)
    assert _chisquare_sequences(sample_target(chain, T, N, rng=1), law, V) > P_MIN
    for gamma, bonus in [(1, True), (3, False), (3, True)]:
        res = simulate(chain, T, gamma, N, rng=2, bonus=bonus, return_tokens=True)
        assert _chisquare_sequences(res.tokens, law, V) > P_MIN, (gamma, bonus)


def test_chisquare_detects_a_lossy_verifier():
    # guard against a test that cannot fail: accepting every draft token yields the draft's law
    chain = CHAINS["homogeneous"]()
    law = _exact_target_law(chain, 4)

    class AcceptAll(UnfusedToken):
        name = "accept_all"
        lossless = False

        def _rule(self, t, d, x, k, u_accept, u_final):
            return k.copy(), np.zeros_like(k)

    res = simulate(chain, 4, 3, 30_000, rng=3, bonus=False, return_tokens=True, verifier=AcceptAll())
    assert _chisquare_sequences(res.tokens, law, 3) < P_MIN


@pytest.mark.parametrize("V", [1, 2, 3, 7, 64, 1000])
def test_guide_table_sampling_equals_inverse_cdf(V):
    from spectheory.laws.sampling import CdfTable, normalized_cdf, sample_from_cdf

    rng = np.random.default_rng(V)
    w = rng.dirichlet(np.full(V, 0.3), size=40)
    w[w < 0.01] = 0.0  # zero-weight tokens, also runs of them
    w[w.sum(1) == 0, 0] = 1.0
    table = CdfTable(w)
    rows = rng.integers(0, 40, 5000)
    u = rng.random(5000)
    u[:10], u[10:20] = 0.0, np.nextafter(1.0, 0.0)
    u[20:40] = table.grid[rng.integers(0, V, 20)]  # uniforms exactly on guide cell edges
    got = table.sample(rows, u)
    np.testing.assert_array_equal(got, sample_from_cdf(normalized_cdf(w)[rows], u))
    assert np.all(w[rows, got] > 0)

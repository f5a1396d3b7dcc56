"""Exact analysis on DecodingChains: recursions against closed forms, identities and each other."""

import numpy as np
import pytest

import spectheory as st
import spectheory.exact as analysis
from spectheory.exact import token_accept_survival
from spectheory.verifiers import TokenVerifier


class RoundToken(TokenVerifier):
    """Token verification evaluated through its whole-round transition (the round recursion)."""

    name = "token_by_rounds"

    def phase_masses(self, chain):
        return None

    def round_transition(self, chain):
        return analysis.token_round_transition(chain)


def yin_chain(seed=0, T=50):
    """Time-inhomogeneous 7-state chain as in Yin et al.'s simulation (V=5, random next_state: CSR path)."""
    return st.DecodingChain.random(5, n_states=7, horizon=T, concentration=0.7, rng=seed)


def ngram2_chain(seed=0, V=3):
    rng = np.random.default_rng(seed)
    seqs = [rng.integers(0, V, size=60) for _ in range(3)]
    counts = st.ngram_counts(seqs, order=2, vocab_size=V)
    return st.DecodingChain.ngram(counts, st.ngram_counts(seqs[:1], 2, V), smoothing=0.5)


def tree_chain(T=4):
    def tf(prefix):
        h = (sum(prefix) * 7 + len(prefix)) % 5
        return np.array([0.1 + 0.15 * h, 0.9 - 0.15 * h])

    def df(prefix):
        return np.array([0.6, 0.4]) if len(prefix) % 2 else np.array([0.3, 0.7])

    return st.DecodingChain.prefix_tree(tf, df, 2, T)


CHAINS = {
    "homogeneous": (lambda: st.DecodingChain.random(6, concentration=0.5, rng=1), 30),
    "inhomogeneous-7": (yin_chain, 50),
    "ngram-order2": (ngram2_chain, 25),
    "prefix-tree": (tree_chain, 4),
}


def iid_calls(alpha, T, gamma, bonus):
    """E[calls] on a one-state chain by a scalar renewal recursion over the tokens left."""
    calls = np.zeros(T + 1)
    for m in range(1, T + 1):
        k = min(gamma, m)
        law = st.iid_accepted_count_law(alpha, k)
        adv = np.arange(k + 1) + 1
        adv[k] = k + (1 if bonus and k < m else 0)
        calls[m] = 1.0 + law @ calls[m - adv]
    return calls[T]


# ------------------------------------------------------------------ one-state chain
@pytest.mark.parametrize("gamma", [1, 3, 8])
@pytest.mark.parametrize("bonus", [False, True])
def test_iid_chain_equals_closed_forms(gamma, bonus):
    target, draft = np.array([0.2, 0.5, 0.3]), np.array([0.5, 0.3, 0.2])
    alpha = float(st.acceptance_rate(target, draft))
    chain = st.DecodingChain.iid(target, draft)
    # per-round law of an untruncated round: the capped geometric law
    np.testing.assert_allclose(
        chain.accepted_count_law(100, gamma, per_state=True)[0],
        st.iid_accepted_count_law(alpha, gamma),
        rtol=1e-13,
    )
    # the whole generation, truncation included, against a scalar renewal recursion
    for T in (1, 7, 40):
        np.testing.assert_allclose(
            chain.expected_target_calls(T, gamma, bonus), iid_calls(alpha, T, gamma, bonus), rtol=1e-12
        )
    # long horizon: tokens per call -> Leviathan's formula (bonus) or its no-bonus analogue;
    # E[calls] = T / mean + O(1), so the relative error is O(mean / T)
    T = 3000
    mean = st.iid_tokens_per_call(alpha, gamma) - (0 if bonus else alpha**gamma)
    np.testing.assert_allclose(
        chain.expected_tokens_per_call(T, gamma, bonus), mean, rtol=3 * (gamma + 1) / T
    )
    c = 0.1
    if bonus:
        np.testing.assert_allclose(
            chain.predicted_speedup(T, gamma, c),
            st.iid_speedup(alpha, gamma, c),
            rtol=3 * (gamma + 1) / T,
        )


def test_always_accepted_chain_counts_rounds_by_hand():
    chain = st.DecodingChain.iid([0.25, 0.75], [0.25, 0.75])
    # bonus: rounds at 0, 4, 8 (k = 3, 3, 2) for T = 10, gamma = 3
    assert chain.expected_target_calls(10, 3) == 3.0
    assert chain.expected_draft_tokens(10, 3) == 8.0
    assert chain.expected_rejections(10, 3, bonus=True) == 0.0
    # no bonus: rounds at 0, 3, 6, 9
    assert chain.expected_target_calls(10, 3, bonus=False) == 4.0
    np.testing.assert_allclose(chain.accepted_count_law(10, 3, bonus=False), [0, 1 / 4, 0, 3 / 4])


# ------------------------------------------------------------------ identities on chains
@pytest.mark.parametrize("name", list(CHAINS))
@pytest.mark.parametrize("gamma", [1, 3, 8])
def test_theorem1_phase_recursion_matches_tv_sum(name, gamma):
    make, T = CHAINS[name]
    chain = make()
    tv_sum = chain.tv_profile(T).sum()
    res = chain.protocol(T, gamma, bonus=False)
    np.testing.assert_allclose(res.rejections, tv_sum, rtol=1e-12)
    np.testing.assert_allclose(res.rejection_by_position, chain.tv_profile(T), atol=1e-13)
    np.testing.assert_allclose(chain.expected_rejections(T, gamma, bonus=False), tv_sum, rtol=1e-12)
    assert chain.rejection_lower_bound(T) == tv_sum
    np.testing.assert_allclose(chain.rejection_lower_bound(T), tv_sum, rtol=1e-14)
    # with bonus tokens some positions skip the check: the Theorem 1 sum is an upper bound
    assert chain.expected_rejections(T, gamma, bonus=True) <= tv_sum + 1e-12


@pytest.mark.parametrize("name", list(CHAINS))
@pytest.mark.parametrize("gamma", [1, 3, 8])
@pytest.mark.parametrize("bonus", [False, True])
def test_round_recursion_matches_phase_recursion(name, gamma, bonus):
    make, T = CHAINS[name]
    chain = make()
    ph = chain.protocol(T, gamma, bonus=bonus)
    rd = analysis.round_recursion(chain, T, gamma, bonus, analysis.token_round_transition(chain))
    np.testing.assert_allclose(rd.round_starts, ph.round_starts, atol=1e-13)
    np.testing.assert_allclose(rd.rejection_by_position, ph.rejection_by_position, atol=1e-13)
    np.testing.assert_allclose(rd.accepted_counts, ph.accepted_counts, atol=1e-12)
    np.testing.assert_allclose(rd.bonus_tokens, ph.bonus_tokens, atol=1e-12)
    # token conservation: every position is an accepted draft, a rejection or a bonus token
    np.testing.assert_allclose(ph.accepted + ph.rejections + ph.bonus_tokens, T, rtol=1e-12)
    assert (ph.bonus_tokens == 0.0) == (not bonus or gamma >= T)  # gamma >= T: one round, no bonus
    np.testing.assert_allclose(ph.accepted_count_law.sum(), 1.0, rtol=1e-13)
    assert ph.draft_tokens >= ph.accepted + ph.rejections - 1e-9
    # a Verifier that only provides a round transition goes through the round recursion
    np.testing.assert_allclose(
        chain.expected_target_calls(T, gamma, bonus=bonus, verifier=RoundToken()), ph.target_calls, rtol=1e-12
    )


@pytest.mark.parametrize("gamma", [1, 3, 8])
def test_per_state_law_inhomogeneous_matches_round_transition(gamma):
    chain, T = yin_chain(3, T=12), 12
    law = token_accept_survival(chain, T, gamma)
    assert law.shape == (T, 7, gamma + 1)
    trans = analysis.token_round_transition(chain)
    for n0 in (0, 5, T - 3, T - 1):
        k = min(gamma, T - n0)
        Q = trans(n0, k, False)
        np.testing.assert_allclose(law[n0, :, : k + 1], Q.sum(-1), atol=1e-13)
        assert np.all(law[n0, :, k + 1 :] == 0)


@pytest.mark.parametrize("scale", [0.2, 0.6, 0.95])
@pytest.mark.parametrize("name", ["homogeneous", "inhomogeneous-7", "ngram-order2"])
def test_scaled_verifiers_reject_strictly_more(name, scale):
    """Unbiased verifiers with acceptance s * min(1, t/d): rejections = sum_n E[1 - s(1 - TV_n)]."""
    make, T = CHAINS[name]
    chain = make()
    acc, rej = analysis.scaled_masses(chain, scale)
    tvp = chain.tv_profile(T)
    bound = chain.rejection_lower_bound(T)
    for gamma in (1, 3):
        res = analysis.phase_recursion(chain, T, gamma, False, acc, rej)
        np.testing.assert_allclose(res.rejections, np.sum(1 - scale * (1 - tvp)), rtol=1e-12)
        assert res.rejections > bound + 1e-3 * (1 - scale)
    # the family is unbiased: its exact sequence law is the target's
    small = st.DecodingChain.random(3, rng=7)
    sa, sr = analysis.scaled_masses(small, scale)
    np.testing.assert_allclose(
        analysis.phase_sequence_law(small, 4, 2, True, sa, sr),
        small.sequence_law(4, method="target"),
        atol=1e-15,
    )


# ------------------------------------------------------------------ losslessness
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("gamma", [1, 3, 8])
@pytest.mark.parametrize("bonus", [False, True])
def test_sequence_law_is_target_law(seed, gamma, bonus):
    chain = st.DecodingChain.random(3, n_states=4, horizon=5, concentration=0.4, rng=seed)
    spec = chain.sequence_law(5, gamma=gamma, bonus=bonus)
    target = chain.sequence_law(5, method="target")
    assert spec.shape == (3,) * 5
    np.testing.assert_allclose(spec.sum(), 1.0, rtol=1e-13)
    np.testing.assert_allclose(spec, target, atol=1e-15)


def test_sequence_law_of_a_biased_rule_differs():
    """A lossy rule (accept everything the draft proposes) gives the draft's law, not the target's."""
    chain = st.DecodingChain.random(2, rng=3)
    acc = lambda n, i: chain.draft  # noqa: E731
    rej = lambda n, i: np.zeros_like(chain.draft)  # noqa: E731
    law = analysis.phase_sequence_law(chain, 3, 2, False, acc, rej)
    draft_chain = st.DecodingChain(chain.draft, chain.draft, chain.initial)
    np.testing.assert_allclose(law, draft_chain.sequence_law(3, method="target"), atol=1e-15)
    assert np.abs(law - chain.sequence_law(3, method="target")).max() > 1e-3


# ------------------------------------------------------------------ Leviathan gap
def test_leviathan_gap_iid_and_context_dependent():
    iid = st.DecodingChain.iid([0.2, 0.8], [0.6, 0.4])
    gap = iid.leviathan_gap(2000, 4, c=0.05)
    np.testing.assert_allclose(gap.alpha, 0.6, rtol=1e-14)
    np.testing.assert_allclose(gap.exact, gap.iid_exact, rtol=1e-12)
    np.testing.assert_allclose(gap.formula, st.iid_tokens_per_call(0.6, 4), rtol=1e-14)
    np.testing.assert_allclose(gap.formula_speedup, st.iid_speedup(0.6, 4, 0.05), rtol=1e-14)
    assert abs(gap.relative_error) < 5 * 5 / 2000
    # easy/hard mixture: a state that always agrees, one that never does, and sticky transitions
    target = np.array([[0.9, 0.1, 0.0], [0.1, 0.9, 0.0], [0.0, 0.0, 1.0]])
    draft = np.array([[0.9, 0.1, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]])
    mix = st.DecodingChain(target, draft, [0.5, 0.5, 0.0])
    gap = mix.leviathan_gap(400, 4)
    assert gap.exact == mix.expected_tokens_per_call(400, 4)
    assert abs(gap.relative_error) > 0.05


# ------------------------------------------------------------------ bad inputs
@pytest.mark.parametrize(
    "call, match",
    [
        (lambda c: c.expected_target_calls(5, 0), "gamma"),
        (lambda c: c.expected_draft_tokens(5, 1.5), "gamma"),
        (lambda c: c.expected_rejections(5, 0), "gamma"),
        (lambda c: c.expected_rejections(0, 2), "horizon"),
        (lambda c: c.expected_target_calls(5, 2, verifier="magic"), "verifier"),
        (lambda c: c.predicted_speedup(5, 2, -1.0), "c"),
        (lambda c: c.sequence_law(5), "gamma"),
        (lambda c: c.sequence_law(3, gamma=1, method="greedy"), "method"),
        (lambda c: c.sequence_law(40, gamma=2), "horizon"),
        (lambda c: c.accepted_count_law(5, 0), "gamma"),
    ],
)
def test_bad_inputs_raise(call, match):
    with pytest.raises(ValueError, match=match):
        call(st.DecodingChain.random(3, rng=0))


def test_horizon_beyond_inhomogeneous_chain_raises():
    chain = yin_chain(T=10)
    with pytest.raises(ValueError, match="horizon"):
        chain.expected_target_calls(11, 2)


def test_bad_masses_raise():
    chain = st.DecodingChain.random(3, rng=0)
    acc, rej = analysis.token_masses(chain)
    with pytest.raises(ValueError, match="accept_mass"):
        analysis.phase_recursion(chain, 4, 2, True, acc[:, :2], rej)
    with pytest.raises(ValueError, match="sum to 1"):
        analysis.phase_recursion(chain, 4, 2, True, acc, rej * 0.5)
    with pytest.raises(ValueError, match="scale"):
        analysis.scaled_masses(chain, 0.0)
    with pytest.raises(ValueError, match="round_transition"):
        analysis.round_recursion(chain, 4, 2, True, lambda n0, k, b: np.zeros((3, k, 3)))


def test_leviathan_gap_chain_method_equals_function():
    from spectheory.chain.examples import easy_hard_chain
    from spectheory.exact import iid_gap

    chain = easy_hard_chain(0.9)
    assert chain.leviathan_gap(50, 3) == iid_gap.leviathan_gap(chain, 50, 3)

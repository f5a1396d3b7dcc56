"""DecodingChain construction, validation and state marginals."""

import itertools

import numpy as np
import pytest

import spectheory as st


def test_first_order_default_next_state_and_marginals():
    chain = st.DecodingChain.random(4, rng=1)
    assert chain.is_first_order and chain.is_homogeneous
    m = chain.state_marginals(5)
    np.testing.assert_allclose(m.sum(1), 1.0)
    np.testing.assert_allclose(m[1], chain.initial @ chain.target)


def test_marginals_match_brute_force_on_random_next_state():
    chain = st.DecodingChain.random(3, n_states=4, horizon=3, rng=2)
    marg = np.zeros((3, 4))
    for seq in itertools.product(range(3), repeat=2):
        for s0 in range(4):
            p, s = chain.initial[s0], s0
            marg[0, s] += p if seq == (0, 0) else 0
            for n, x in enumerate(seq):
                p *= chain.target[n, s, x]
                s = chain.next_state[s, x]
                if n == 0 and seq[1] == 0:
                    marg[1, s] += p
                if n == 1:
                    marg[2, s] += p
    np.testing.assert_allclose(chain.state_marginals(3), marg, atol=1e-12)


def test_tv_profile_iid_is_constant():
    t, d = np.array([0.2, 0.5, 0.3]), np.array([0.6, 0.2, 0.2])
    chain = st.DecodingChain.iid(t, d)
    np.testing.assert_allclose(chain.tv_profile(4), np.full(4, st.tv(t, d)))


def test_ngram_counts_and_chain():
    seq = np.array([0, 1, 1, 0, 1, 2, 2, 1])
    counts = st.ngram_counts([seq], order=1, vocab_size=3)
    assert counts.sum() == len(seq) - 1 and counts[1, 1] == 1 and counts[0, 1] == 2
    chain = st.DecodingChain.ngram(counts, counts + 1.0)
    np.testing.assert_allclose(chain.target[0], [0, 1, 0])
    np.testing.assert_allclose(chain.draft[0], [1 / 5, 3 / 5, 1 / 5])
    order2 = st.DecodingChain.ngram(st.ngram_counts([seq], 2, 3), st.ngram_counts([seq], 2, 3), smoothing=1.0)
    assert order2.n_states == 9 and order2.next_state[5, 2] == (5 * 3 + 2) % 9


def test_prefix_tree_matches_model_laws():
    def tf(prefix):
        return np.array([0.7, 0.3]) if sum(prefix) % 2 == 0 else np.array([0.1, 0.9])

    def df(prefix):
        return np.array([0.5, 0.5])

    chain = st.DecodingChain.prefix_tree(tf, df, vocab_size=2, horizon=3)
    assert chain.n_states == 1 + 2 + 4 + 8 and chain.max_horizon == 3
    i = chain.prefixes.index((1, 0))
    np.testing.assert_allclose(chain.target[i], [0.1, 0.9])
    assert chain.prefixes[chain.next_state[i, 1]] == (1, 0, 1)
    with pytest.raises(ValueError, match="max_horizon"):
        chain.tv_profile(4)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(target=[[0.5, 0.5]], draft=[[0.5, 0.5], [0.5, 0.5]]), "shape mismatch"),
        (dict(target=[[0.5, 0.6], [0.5, 0.5]], draft=[[0.5, 0.5], [0.5, 0.5]]), "target.*sum to 1"),
        (dict(target=[[1.0, 0.0]] * 3, draft=[[1.0, 0.0]] * 3), "next_state"),
        (dict(target=[[1.0, 0.0]] * 2, draft=[[1.0, 0.0]] * 2, initial=[1.0]), "initial"),
        (dict(target=[[1.0, 0.0]] * 2, draft=[[1.0, 0.0]] * 2, next_state=[[0, 2], [0, 1]]), "next_state"),
        (dict(target=[0.5, 0.5], draft=[0.5, 0.5]), "target"),
    ],
)
def test_bad_chains_raise(kwargs, match):
    with pytest.raises(ValueError, match=match):
        st.DecodingChain(**kwargs)


def test_bad_horizon():
    chain = st.DecodingChain.random(3, rng=0)
    for h in [0, -1, 1.5]:
        with pytest.raises(ValueError, match="horizon"):
            chain.tv_profile(h)

"""Certified Markov abstractions (issue 16): exact inequalities on enumerable prefix trees.

The prefix-tree chain (state = whole prefix) is the true model; its exact coarsenings
(kernels averaged under the target's exact prefix law, one per position) must satisfy, up to
float rounding (1e-12):
- lower bound: coarse Theorem-1 sum <= the true expected rejections (bonus off);
- monotonicity: a refinement (order k+1 vs k, a context tree vs its subtree) never lowers it;
and other statistics inherit no bound (explicit counterexamples for target calls).
"""

import zlib

import numpy as np
import pytest

import spectheory as st
from spectheory.abstraction.certified import bootstrap_weights, coarsen, prefix_tree_labels
from spectheory.abstraction.context_tree import ContextTree
from spectheory.abstraction.fitting import fit_abstraction, plugin_bound, state_sums

EPS = 1e-12


def _law(prefix, salt, V, conc):
    rng = np.random.default_rng(zlib.crc32(repr((salt, prefix)).encode()))
    return rng.dirichlet(np.full(V, conc))


def _random_tree_chain(seed, V=3, T=5, conc=0.5):
    return st.DecodingChain.prefix_tree(
        lambda p: _law(p, (seed, 1), V, conc), lambda p: _law(p, (seed, 2), V, conc), V, T
    )


def _order_k_tree(k, V):
    return ContextTree([(k, key) for key in range(V**k)], V)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_order_k_coarsenings_are_monotone_lower_bounds(seed):
    V, T = 3, 5
    fine = _random_tree_chain(seed, V, T)
    truth = fine.tv_profile(T).sum()
    bounds = []
    for k in range(T):
        tree = _order_k_tree(k, V)
        lab = prefix_tree_labels(fine, tree)
        coarse = coarsen(fine, T, lab, tree.n_states)
        # the coarse chain's state marginals are the exact laws of the coarse state
        agg = np.stack(
            [np.bincount(lab, weights=m, minlength=tree.n_states) for m in fine.state_marginals(T)]
        )
        np.testing.assert_allclose(coarse.state_marginals(T), agg, atol=1e-13)
        bounds.append(coarse.tv_profile(T).sum())
    bounds = np.array(bounds)
    assert np.all(bounds <= truth + EPS)
    assert np.all(np.diff(bounds) >= -EPS)
    np.testing.assert_allclose(bounds[-1], truth, rtol=1e-12)  # order T-1 sees the whole prefix
    assert bounds[0] < truth - 1e-3  # and the bound is not trivial


def test_order_zero_coarsening_is_the_per_position_average():
    V, T = 2, 3
    fine = _random_tree_chain(7, V, T)
    coarse = coarsen(fine, T, np.zeros(fine.n_states, dtype=int))
    marg = fine.state_marginals(T)
    for n in range(T):
        t, d = fine.kernels(n)
        np.testing.assert_allclose(coarse.target[n, 0], marg[n] @ t, atol=1e-14)
        np.testing.assert_allclose(coarse.tv_profile(T)[n], st.tv(marg[n] @ t, marg[n] @ d), atol=1e-14)


@pytest.mark.parametrize("seed", [3, 4])
def test_variable_order_trees_refine_monotonically(seed):
    # random closed context trees, each grown from the previous by one context: nested partitions
    V, T = 3, 5
    fine = _random_tree_chain(seed, V, T)
    truth = fine.tv_profile(T).sum()
    rng = np.random.default_rng(seed)
    contexts, prev = [], -1.0
    for _ in range(12):
        length = int(rng.integers(1, 4))
        contexts.append((length, int(rng.integers(V**length))))
        tree = ContextTree(contexts, V)
        val = coarsen(fine, T, prefix_tree_labels(fine, tree), tree.n_states).tv_profile(T).sum()
        assert prev - EPS <= val <= truth + EPS
        prev = val


def test_labels_not_closed_under_transitions_are_refused():
    V, T = 2, 3
    fine = _random_tree_chain(5, V, T)
    # "the first token" is not a function of (last token, next token) -- but the prefix length
    # parity of a prefix tree is; use a label that mixes prefixes of different futures
    lab = np.array([hash(p[:1]) % 2 if len(p) == 2 else 0 for p in fine.prefixes])
    with pytest.raises(ValueError, match="labels"):
        coarsen(fine, T, lab)


def _phase_chain(T):
    """Token 1 fixes the phase; then positions alternate hard (TV 1) / easy (TV 0), out of phase."""

    def hard(p):
        return (len(p) % 2 == 1) if p[0] == 0 else (len(p) % 2 == 0)

    def tf(p):
        return np.array([0.5, 0.5]) if not p else np.array([1.0, 0.0])

    def df(p):
        return np.array([0.5, 0.5]) if not p else (np.array([0.0, 1.0]) if hard(p) else np.array([1.0, 0.0]))

    return st.DecodingChain.prefix_tree(tf, df, 2, T)


def test_target_calls_inherit_no_bound_in_either_direction():
    T, gamma = 5, 1
    # (a) coarse over-predicts: the bonus token skips the hard positions of each phase
    fine = _phase_chain(T)
    coarse = coarsen(fine, T, np.zeros(fine.n_states, dtype=int))
    np.testing.assert_allclose(coarse.tv_profile(T).sum(), fine.tv_profile(T).sum(), rtol=1e-12)
    np.testing.assert_allclose(fine.expected_target_calls(T, gamma, bonus=True), 3.0, rtol=1e-12)
    np.testing.assert_allclose(coarse.expected_target_calls(T, gamma, bonus=True), 3.25, rtol=1e-12)
    # (b) coarse under-predicts: an easy/hard mixture of whole paths (convexity of calls in alpha)
    mix = st.DecodingChain.prefix_tree(
        lambda p: np.array([0.5, 0.5]) if not p else np.array([1.0, 0.0]),
        lambda p: np.array([0.5, 0.5]) if not p else (np.array([0.0, 1.0]) if p[0] else np.array([1.0, 0.0])),
        2,
        T,
    )
    cm = coarsen(mix, T, np.zeros(mix.n_states, dtype=int))
    assert (
        cm.expected_target_calls(T, gamma, bonus=True) < mix.expected_target_calls(T, gamma, bonus=True) - 0.1
    )


def _random_paths(seed, N=60, L=4, T=6, V=4):
    rng = np.random.default_rng(seed)
    paths = rng.integers(0, V, size=(N, L + T))
    tl = rng.dirichlet(np.ones(V), size=(N, T))
    dl = rng.dirichlet(np.ones(V), size=(N, T))
    return paths, tl, dl


def test_context_tree_transitions_agree_with_assignment():
    # transition-closure: the state after token x is next_state[state, x], along every path
    V, L = 4, 4
    paths, tl, dl = _random_paths(0, V=V, L=L)
    for tree in (
        ContextTree.order_k(paths, L, 2, V),
        ContextTree.grow(paths, L, tl, dl, budget=25, max_order=4, min_count=2, vocab_size=V),
    ):
        s = tree.assign(paths, L)
        np.testing.assert_array_equal(s[:, 1:], tree.next_state[s[:, :-1], paths[:, L:-1]])
        np.testing.assert_array_equal(s[:, 0], tree.initial_states(paths[:, :L]))


def test_grown_trees_are_nested_and_their_plugin_bounds_monotone():
    V, L = 4, 4
    paths, tl, dl = _random_paths(1, V=V, L=L)
    rb = (0.5 * np.abs(tl - dl).sum(-1)).sum(1).mean()
    _, order = ContextTree.grow(
        paths, L, tl, dl, budget=40, max_order=4, min_count=2, vocab_size=V, return_order=True
    )
    prev = -1.0
    for b in range(1, len(order) + 1, 3):
        tree = ContextTree(order[:b], V)
        assert tree.n_states == b  # every prefix of the growth is closed
        for pp in (False, True):
            val = plugin_bound(tree.assign(paths, L), tl, dl, tree.n_states, per_position=pp)
            assert val <= rb + EPS  # in-sample Jensen: <= Rao-Blackwell
        pooled = plugin_bound(tree.assign(paths, L), tl, dl, tree.n_states, per_position=False)
        assert pooled >= prev - EPS
        prev = pooled


def test_fit_abstraction_kernels_are_state_averages():
    V, L = 4, 4
    paths, tl, dl = _random_paths(2, V=V, L=L)
    tree = ContextTree.order_k(paths, L, 1, V)
    s = tree.assign(paths, L)
    chain = fit_abstraction(
        s,
        tree.next_state,
        s[:, 0],
        tl,
        dl,
        per_position=True,
        fallback=tree.subtree_kernels(paths, L, tl, dl),
    )
    sums, counts = state_sums(s, tl, tree.n_states, per_position=True)
    n, k = np.argwhere(counts > 0)[3]
    np.testing.assert_allclose(chain.target[n, k], sums[n, k] / counts[n, k], rtol=1e-12)
    # with unit path weights the weighted fit is the plain fit
    again = fit_abstraction(
        s,
        tree.next_state,
        s[:, 0],
        tl,
        dl,
        per_position=True,
        fallback=tree.subtree_kernels(paths, L, tl, dl),
        weights=np.ones(len(paths)),
    )
    np.testing.assert_allclose(again.tv_profile(6), chain.tv_profile(6), rtol=1e-12)


def test_bootstrap_weights_resample_within_prompt_groups():
    groups = np.arange(30) % 3
    w = bootstrap_weights(groups, 50, rng=0)
    for g in range(3):
        np.testing.assert_array_equal(w[:, groups == g].sum(1), 10)
    with pytest.raises(ValueError, match="n_boot"):
        bootstrap_weights(groups, 0)


def test_hidden_states_give_the_laws_and_cluster_transitions():
    torch = pytest.importorskip("torch")
    from spectheory.abstraction.hidden_states import HiddenStateAbstraction, kmeans, path_laws
    from spectheory.decoder.model import GPT, GPTConfig

    torch.manual_seed(0)  # the tiny model's initial weights only
    model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32)).eval()
    rng = np.random.default_rng(0)
    paths = rng.integers(0, 256, size=(6, 10))
    laws, hidden = path_laws(model, paths, 4, hidden=True)
    assert laws.shape == (6, 6, 256) and hidden.shape == (6, 6, 16)
    # the hook reads the state the head uses: softmax(h W^T) is the model's law
    logits = torch.as_tensor(hidden) @ model.wte.weight.detach().T
    np.testing.assert_allclose(torch.softmax(logits, -1).numpy(), laws, atol=1e-5)
    # clusters: separated blobs are found; a deterministic cluster sequence is learnt exactly
    _, lab = kmeans(np.r_[np.zeros((20, 3)), 5 + np.zeros((20, 3))], 2, rng=1)
    assert len(set(lab[:20])) == 1 and len(set(lab[20:])) == 1 and lab[0] != lab[-1]
    tokens = rng.integers(0, 4, size=(30, 8))
    h = np.zeros((30, 8, 2))
    h[..., 0] = 10.0 * np.hstack(
        [np.zeros((30, 1)), tokens[:, :-1] % 2]
    )  # cluster = parity of the last token
    a = HiddenStateAbstraction(h, tokens, 2, rng=0, n_components=None, vocab_size=4)
    assert a.transition_determinism == 1.0
    np.testing.assert_array_equal(a.states[:, 1:], a.next_state[a.states[:, :-1], tokens[:, :-1]])


def _random_position_labels(fine, T, per_depth, rng):
    """Labels (prefix length, random cluster): not closed under transitions in general."""
    depth = np.array([len(p) for p in fine.prefixes])
    cluster = rng.integers(0, per_depth, size=fine.n_states)
    return np.unique(depth * per_depth + cluster, return_inverse=True)[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_stochastic_coarsenings_of_any_labels_are_monotone_lower_bounds(seed):
    # Section 7 of docs/markov_abstraction.md: with the exact stochastic transition law the
    # coarse chain has the exact state marginals, and the lower bound and monotonicity hold
    # for labels that are not closed under transitions (as hidden-state clusters).
    V, T = 3, 5
    fine = _random_tree_chain(seed, V, T)
    truth = fine.tv_profile(T).sum()
    rng = np.random.default_rng(seed)
    coarse_lab = _random_position_labels(fine, T, 2, rng)
    # a refinement: split every coarse cluster in two at random
    fine_lab = np.unique(coarse_lab * 2 + rng.integers(0, 2, size=fine.n_states), return_inverse=True)[1]
    vals = []
    for lab in (coarse_lab, fine_lab):
        C = int(lab.max()) + 1
        with pytest.raises(ValueError, match="not closed"):
            coarsen(fine, T, lab, C)
        chain = coarsen(fine, T, lab, C, stochastic=True)
        assert chain.is_stochastic
        agg = np.stack([np.bincount(lab, weights=m, minlength=C) for m in fine.state_marginals(T)])
        np.testing.assert_allclose(chain.state_marginals(T), agg, atol=1e-13)
        vals.append(chain.tv_profile(T).sum())
        # the stochastic chain's Theorem-1 sum is the exact (population) plug-in bound
        ind = np.eye(C)[lab].T  # [C, S_fine]
        bound = sum(
            0.5 * np.abs(ind @ (m[:, None] * (fine.target - fine.draft))).sum()
            for m in fine.state_marginals(T)
        )
        np.testing.assert_allclose(vals[-1], bound, rtol=1e-12)
    assert vals[0] <= vals[1] + EPS <= truth + 2 * EPS
    assert vals[0] < truth - 1e-3


def test_cluster_transition_law_is_the_observed_next_state_law():
    from spectheory.abstraction.hidden_states import cluster_transition_law

    rng = np.random.default_rng(3)
    S, V, N, T = 3, 4, 200, 6
    states = rng.integers(0, S, size=(N, T))
    tokens = rng.integers(0, V, size=(N, T))
    law = cluster_transition_law(states, tokens, S, V, backoff_support=2).toarray().reshape(S, V, S)
    np.testing.assert_allclose(law.sum(-1), 1.0, atol=1e-12)
    s, x, s2 = states[:, :-1].ravel(), tokens[:, :-1].ravel(), states[:, 1:].ravel()
    for a, b in ((0, 0), (2, 3)):
        sel = (s == a) & (x == b)
        np.testing.assert_allclose(law[a, b], np.bincount(s2[sel], minlength=S) / sel.sum(), rtol=1e-12)
    # a chain fitted with it is stochastic and its kernels are unchanged
    laws = rng.dirichlet(np.ones(V), size=(N, T))
    hard = fit_abstraction(states, np.zeros((S, V), int), states[:, 0], laws, laws[::-1])
    soft = fit_abstraction(
        states, cluster_transition_law(states, tokens, S, V), states[:, 0], laws, laws[::-1]
    )
    assert soft.is_stochastic and not hard.is_stochastic
    np.testing.assert_allclose(soft.target, hard.target)


def test_most_likely_next_state_is_not_a_bound():
    # The counterexample of docs/markov_abstraction.md, Section 7: replacing the exact stochastic
    # cluster transition by its most likely next cluster (the older HiddenStateAbstraction map)
    # moves the state law, and the Theorem-1 sum can exceed the truth (here by 2.1 %).
    V, T = 2, 4
    fine = _random_tree_chain(44, V, T, conc=0.3)
    truth = fine.tv_profile(T).sum()
    lab = _random_position_labels(fine, T, 2, np.random.default_rng(44))
    soft = coarsen(fine, T, lab, int(lab.max()) + 1, stochastic=True)
    hard = st.DecodingChain(
        soft.target, soft.draft, soft.initial, np.asarray(soft.next_state).argmax(-1), max_horizon=T
    )
    assert soft.tv_profile(T).sum() <= truth + EPS
    assert hard.tv_profile(T).sum() > truth * 1.02

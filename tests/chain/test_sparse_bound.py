"""The certified truncation bound holds: the true (dense) chain's exact values lie within the
bound of its top-k / mass truncation, on random chains of every transition kind."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st_h

import spectheory as st
from spectheory.chain import SparseDecodingChain
from spectheory.chain.sparse_bound import truncation_bound
from spectheory.chain.sparse_values import start_reward_values

COUNTERS = ("target_calls", "rejections", "accepted", "draft_tokens")


def _true_chain(S, V, kind, concentration, rng):
    t = rng.dirichlet(np.full(V, concentration), S)
    d = rng.dirichlet(np.full(V, concentration), S)
    d = 0.5 * d + 0.5 * t  # a draft close to the target (tails matter)
    init = rng.dirichlet(np.ones(S))
    ns = None if kind == "first_order" else rng.integers(0, S, V)
    dense = st.DecodingChain(t, d, init, None if ns is None else np.broadcast_to(ns, (S, V)))
    return dense, (t, d, init, ns)


def _check(true, cut, T, gamma, bonus, refine=True):
    b = cut.truncation_bound(T, gamma, bonus, refine=refine)
    res = true.protocol(T, gamma=gamma, bonus=bonus)
    for name in COUNTERS:
        lo, hi = b.interval(name)
        assert lo - 1e-9 <= getattr(res, name) <= hi + 1e-9, name
    lo, hi = b.tokens_per_call_interval
    assert lo - 1e-9 <= res.tokens_per_call <= hi + 1e-9
    lo, hi = b.speedup_interval(0.2)
    assert lo - 1e-9 <= res.speedup(0.2) <= hi + 1e-9
    gap = np.abs(true.tv_profile(T) - cut.tv_profile(T))
    assert np.all(gap <= b.tv_profile + 1e-9)
    assert abs(true.rejection_lower_bound(T) - cut.rejection_lower_bound(T)) <= b.rejection_lower_bound + 1e-9
    return b


@pytest.mark.parametrize("kind", ["first_order", "token_map"])
@pytest.mark.parametrize("cut", [{"top_k": 3}, {"mass": 0.95}, {"mass": 0.999, "top_k": 6}])
def test_the_true_chain_lies_within_the_bound(kind, cut):
    rng = np.random.default_rng(len(kind) + len(cut))
    S = V = 10
    if kind == "token_map":
        S = 4
    true, (t, d, init, ns) = _true_chain(S, V, kind, 0.3, rng)
    sparse = SparseDecodingChain.from_dense(t, d, init, ns, **cut)
    assert sparse.target_tail.max() > 0
    for T, gamma, bonus in [(30, 4, True), (12, 2, False), (50, 8, True), (120, 3, False)]:
        loose = _check(true, sparse, T, gamma, bonus, refine=False)
        tight = _check(true, sparse, T, gamma, bonus)
        assert tight.target_calls <= loose.target_calls and tight.draft_tokens <= loose.draft_tokens


@settings(max_examples=30, deadline=None)
@given(
    V=st_h.integers(2, 8),
    top_k=st_h.integers(1, 7),
    concentration=st_h.floats(0.05, 2.0),
    T=st_h.integers(1, 25),
    gamma=st_h.integers(1, 6),
    bonus=st_h.booleans(),
    refine=st_h.booleans(),
    seed=st_h.integers(0, 2**31),
)
def test_the_bound_holds_hypothesis(V, top_k, concentration, T, gamma, bonus, refine, seed):
    rng = np.random.default_rng(seed)
    true, (t, d, init, _) = _true_chain(V, V, "first_order", concentration, rng)
    _check(true, SparseDecodingChain.from_dense(t, d, init, top_k=top_k), T, gamma, bonus, refine)


def test_exact_rows_have_a_zero_bound_and_the_bound_grows_with_the_tail():
    true, (t, d, init, _) = _true_chain(6, 6, "first_order", 0.5, np.random.default_rng(1))
    exact = truncation_bound(SparseDecodingChain.from_dense(t, d, init), 20, 3)
    assert exact.divergence == 0 and exact.target_calls == 0 and exact.rejection_lower_bound == 0
    loose = truncation_bound(SparseDecodingChain.from_dense(t, d, init, mass=0.9), 20, 3)
    tight = truncation_bound(SparseDecodingChain.from_dense(t, d, init, mass=0.99), 20, 3)
    assert 0 < tight.target_calls < loose.target_calls
    assert tight.divergence <= 1.0 and loose.divergence <= 1.0


def test_interval_refuses_unknown_names():
    chain = SparseDecodingChain.from_dense(np.eye(2)[[1, 0]], np.full((2, 2), 0.5), top_k=1)
    with pytest.raises(ValueError, match="expected a counter"):
        chain.truncation_bound(5, 2).interval("tokens_per_call")


@pytest.mark.parametrize("bonus", [True, False])
@pytest.mark.parametrize("kind", ["dense", "sparse_token_map"])
def test_value_functions_give_the_forward_engine_s_counters(bonus, kind):
    """The backward recursion (what the refined bound reads) against the forward one."""
    rng = np.random.default_rng(7)
    true, (t, d, init, ns) = _true_chain(5, 9, "token_map", 0.4, rng)
    chain = true if kind == "dense" else SparseDecodingChain.from_dense(t, d, init, ns, mass=0.9)
    for T, gamma in [(1, 1), (7, 3), (40, 8)]:
        _, W0 = start_reward_values(chain, T, gamma, bonus)
        res = chain.protocol(T, gamma=gamma, bonus=bonus)
        assert abs(chain.initial @ W0[:, 0, 0] - res.target_calls) < 1e-10
        assert abs(chain.initial @ W0[:, 0, 1] - res.draft_tokens) < 1e-10


def test_the_refined_bound_is_far_tighter_at_a_long_horizon():
    chain = SparseDecodingChain.random(300, 8, tail=1e-3, rng=0)
    loose = chain.truncation_bound(256, 8, refine=False)
    tight = chain.truncation_bound(256, 8)
    assert tight.target_calls < 0.1 * loose.target_calls
    lo, hi = tight.tokens_per_call_interval
    assert hi - lo < 0.1 * tight.result.tokens_per_call

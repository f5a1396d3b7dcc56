"""SparseDecodingChain: the exact engines on CSR kernels equal the dense engines where both fit
(random chains, rows with zeros, full rows, every transition kind), the constructors validate
their input, and the V = 49,152 protocol runs in seconds."""

import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from hypothesis import strategies as st_h

import spectheory as st
from spectheory.chain import SparseDecodingChain
from spectheory.chain.sparse_rows import rows_from_top_k, truncate_rows

FIELDS = ("target_calls", "rejections", "draft_tokens", "accepted", "bonus_tokens", "tokens_per_call")
ARRAYS = ("round_starts", "rejection_by_position", "accepted_counts", "check_mass")


def _sparsify(rows, rng, zero_frac):
    """Rows with about ``zero_frac`` of their entries set to 0 (one entry always kept)."""
    rows = np.array(rows)
    keep = rng.random(rows.shape) >= zero_frac
    keep[np.arange(rows.shape[0]), rng.integers(0, rows.shape[1], rows.shape[0])] = True
    rows = np.where(keep, rows, 0.0)
    return rows / rows.sum(1, keepdims=True)


def _pair(S, V, kind, rng, zero_frac=0.5):
    t = _sparsify(rng.dirichlet(np.full(V, 0.5), S), rng, zero_frac)
    d = _sparsify(rng.dirichlet(np.full(V, 0.5), S), rng, zero_frac)
    init = rng.dirichlet(np.ones(S))
    if kind == "first_order":
        ns_sparse = ns_dense = None
    elif kind == "token_map":
        ns_sparse = rng.integers(0, S, V)
        ns_dense = np.broadcast_to(ns_sparse, (S, V))
    else:
        ns_sparse = ns_dense = rng.integers(0, S, (S, V))
    dense = st.DecodingChain(t, d, init, ns_dense)
    sparse = SparseDecodingChain(sp.csr_matrix(t), sp.csr_matrix(d), init, ns_sparse)
    return dense, sparse


def _assert_same(a, b, tol=1e-10):
    for f in FIELDS:
        assert abs(getattr(a, f) - getattr(b, f)) <= tol, f
    for f in ARRAYS:
        np.testing.assert_allclose(getattr(a, f), getattr(b, f), rtol=0, atol=tol, err_msg=f)


@pytest.mark.parametrize(
    "S, V, kind",
    [
        (7, 7, "first_order"),
        (300, 300, "first_order"),
        (5, 9, "token_map"),
        (6, 4, "full_map"),
        (1, 5, "token_map"),
    ],
)
@pytest.mark.parametrize("zero_frac", [0.0, 0.6])
def test_sparse_engine_equals_the_dense_engine(S, V, kind, zero_frac):
    rng = np.random.default_rng(S * 100 + V)
    dense, sparse = _pair(S, V, kind, rng, zero_frac)
    assert sparse.is_first_order == dense.is_first_order
    for T, gamma, bonus in [(40, 3, True), (25, 8, False), (9, 12, True)]:
        _assert_same(
            sparse.protocol(T, gamma=gamma, bonus=bonus), dense.protocol(T, gamma=gamma, bonus=bonus)
        )
    np.testing.assert_allclose(sparse.tv_profile(30), dense.tv_profile(30), rtol=0, atol=1e-12)
    np.testing.assert_allclose(sparse.acceptance_table, dense.acceptance_table, rtol=0, atol=1e-12)
    assert abs(sparse.rejection_lower_bound(30) - dense.rejection_lower_bound(30)) < 1e-10
    np.testing.assert_allclose(
        sparse.accepted_count_law(10, 4, per_state=True),
        dense.accepted_count_law(10, 4, per_state=True),
        rtol=0,
        atol=1e-12,
    )
    assert abs(sparse.expected_tokens_per_call(30, 4) - dense.expected_tokens_per_call(30, 4)) < 1e-10


def test_other_token_by_token_rules_and_to_dense():
    rng = np.random.default_rng(3)
    dense, sparse = _pair(8, 8, "first_order", rng)
    from spectheory.exact import phase_recursion, scaled_masses

    a = phase_recursion(sparse, 20, 3, True, *scaled_masses(sparse, 0.7), phase_dependent=False)
    b = phase_recursion(dense, 20, 3, True, *scaled_masses(dense, 0.7), phase_dependent=False)
    _assert_same(a, b)
    back = sparse.to_dense()
    np.testing.assert_array_equal(back.target, dense.target)
    _assert_same(back.protocol(20, 3), dense.protocol(20, 3), tol=0.0)


@settings(max_examples=25, deadline=None)
@given(
    S=st_h.integers(1, 6),
    extra_tokens=st_h.integers(0, 4),
    kind=st_h.sampled_from(["token_map", "full_map"]),
    zero_frac=st_h.floats(0.0, 0.9),
    T=st_h.integers(1, 20),
    gamma=st_h.integers(1, 6),
    bonus=st_h.booleans(),
    seed=st_h.integers(0, 2**31),
)
def test_sparse_equals_dense_hypothesis(S, extra_tokens, kind, zero_frac, T, gamma, bonus, seed):
    rng = np.random.default_rng(seed)
    dense, sparse = _pair(S, S + extra_tokens, kind, rng, zero_frac)
    _assert_same(sparse.protocol(T, gamma=gamma, bonus=bonus), dense.protocol(T, gamma=gamma, bonus=bonus))
    np.testing.assert_allclose(sparse.state_marginals(T), dense.state_marginals(T), rtol=0, atol=1e-12)


def test_from_dense_without_truncation_is_bit_exact_and_truncation_renormalises():
    dense = st.DecodingChain.random(6, concentration=0.4, rng=2)
    exact = SparseDecodingChain.from_dense(dense.target, dense.draft, dense.initial)
    np.testing.assert_array_equal(exact.target.toarray(), dense.target)
    assert not exact.target_tail.any() and not exact.draft_tail.any()
    cut = SparseDecodingChain.from_dense(dense.target, dense.draft, dense.initial, top_k=2)
    assert cut.target.getnnz(axis=1).max() == 2
    np.testing.assert_allclose(np.asarray(cut.target.sum(1)).ravel(), 1.0)
    kept = np.sort(dense.target, 1)[:, -2:].sum(1)
    np.testing.assert_allclose(cut.target_tail, 1 - kept)


def test_truncate_rows_mass_keeps_the_fewest_reaching_the_level():
    k, tail = truncate_rows([[0.1, 0.5, 0.15, 0.25]], mass=0.75)
    assert k.toarray().tolist() == [[0.0, 0.5 / 0.75, 0.0, 0.25 / 0.75]]
    assert tail.tolist() == pytest.approx([0.25])
    k, tail = truncate_rows([[0.1, 0.5, 0.15, 0.25]], mass=0.76, top_k=2)  # top_k is smaller
    assert k.nnz == 2 and tail[0] == pytest.approx(0.25)


def test_from_top_k_matches_from_dense_truncation():
    rng = np.random.default_rng(5)
    V, S, k = 12, 12, 4
    t = rng.dirichlet(np.full(V, 0.3), S)
    d = rng.dirichlet(np.full(V, 0.3), S)
    ti = np.argsort(-t, 1, kind="stable")[:, :k]
    di = np.argsort(-d, 1, kind="stable")[:, :k]
    a = SparseDecodingChain.from_top_k(
        ti, np.take_along_axis(t, ti, 1), di, np.take_along_axis(d, di, 1), vocab_size=V
    )
    b = SparseDecodingChain.from_dense(t, d, top_k=k)
    np.testing.assert_allclose(a.target.toarray(), b.target.toarray(), atol=1e-15)
    np.testing.assert_allclose(a.draft_tail, b.draft_tail, atol=1e-12)
    _assert_same(a.protocol(30, 4), b.protocol(30, 4))


@pytest.mark.parametrize(
    "ids, probs, tail, match",
    [
        ([[0, 0]], [[0.5, 0.5]], None, "repeats a token"),
        ([[0, 3]], [[0.5, 0.5]], None, r"ids must lie in \[0, 3\)"),
        ([[0, -1]], [[0.5, 0.1]], None, "padding id"),
        ([[0, 1]], [[0.0, 0.0]], None, "positive probability"),
        ([[0, 1]], [[0.7, 0.7]], None, "keeps probability"),
        ([[0, 1]], [[0.5, -0.1]], None, "finite and >= 0"),
        ([[0, 1]], [[0.5, 0.4]], [2.0], "tail must be"),
        ([[0.0, 1.0]], [[0.5, 0.4]], None, "integers"),
    ],
)
def test_rows_from_top_k_refuses_bad_rows(ids, probs, tail, match):
    with pytest.raises(ValueError, match=match):
        rows_from_top_k(ids, probs, 3, tail)


def test_rows_from_top_k_tail_is_the_larger_of_given_and_missing():
    _, tail = rows_from_top_k([[0, 1]], [[0.5, 0.4]], 3, [0.05])
    assert tail.tolist() == pytest.approx([0.1])
    _, tail = rows_from_top_k([[0, 1]], [[0.5, 0.5]], 3, [0.05])  # renormalised probs + given tail
    assert tail.tolist() == pytest.approx([0.05])


def test_constructor_refuses_bad_input():
    eye = sp.identity(3, format="csr")
    with pytest.raises(ValueError, match="rows must sum to 1"):
        SparseDecodingChain(eye * 0.5, eye)
    with pytest.raises(ValueError, match="expected shape"):
        SparseDecodingChain(eye, sp.identity(4, format="csr"))
    with pytest.raises(ValueError, match="next_state: required"):
        SparseDecodingChain(sp.csr_matrix(np.full((2, 3), 1 / 3)), sp.csr_matrix(np.full((2, 3), 1 / 3)))
    with pytest.raises(ValueError, match=r"entries must lie in \[0, 3\)"):
        SparseDecodingChain(eye, eye, next_state=[0, 1, 3])
    with pytest.raises(ValueError, match="target_tail"):
        SparseDecodingChain(eye, eye, target_tail=[0.1, 0.2])
    with pytest.raises(ValueError, match="negative"):
        SparseDecodingChain(sp.csr_matrix([[1.5, -0.5], [0.0, 1.0]]), sp.identity(2, format="csr"))


def test_protocol_at_a_large_vocabulary_is_fast():
    chain = SparseDecodingChain.random(4096, 16, rng=0)
    start = time.process_time()  # cpu seconds of this (single-threaded) process: a free core's time
    res = chain.protocol(256, gamma=8)
    took = time.process_time() - start
    assert 1.0 < res.tokens_per_call < 9.0
    assert took < 5.0, took


@pytest.mark.slow
def test_protocol_at_the_real_vocabulary_49152_under_10_seconds():
    chain = SparseDecodingChain.random(49_152, 32, rng=0)
    start = time.process_time()
    res = chain.protocol(256, gamma=8)
    took = time.process_time() - start
    assert 1.0 < res.tokens_per_call < 9.0
    assert took < 10.0, took


def test_random_sparse_chain_refuses_bad_sizes():
    with pytest.raises(ValueError, match="nnz: at most vocab_size"):
        SparseDecodingChain.random(4, 5)
    with pytest.raises(ValueError, match="concentration"):
        SparseDecodingChain.random(4, 2, concentration=0.0)

"""Block verification (Sun et al., arXiv 2403.10444): exact rule, losslessness, dominance over
token verification, integration with the exact analysis and the simulator.

Independent methods: a loop-by-loop Fraction implementation (block_emission_law), the
vectorised enumeration (block_round_transition, round_accepted_means), analysis's token
round transition / phase recursion, and Monte Carlo.
"""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_within_se
from hypothesis import given, settings
from hypothesis import strategies as st_
from scipy import stats

import spectheory as st
from spectheory.exact import token_round_transition
from spectheory.montecarlo import simulate
from spectheory.verifiers import get_verifier
from spectheory.verifiers.block import block_weights
from spectheory.verifiers.block_exact import block_emission_law, block_round_transition, round_accepted_means

block_rule = get_verifier("block").rule
block_verify_round = get_verifier("block").verify_round

T_BIN, D_BIN = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]


def frac_token_expected_accepted(target_fn, draft_fn, V, g, prefix=()):
    """Token verification: sum over blocks q(X) sum_i prod_{j<=i} min(1, p_j/q_j), in Fractions."""
    total = F(0)
    for block in itertools.product(range(V), repeat=g):
        q, surv, acc = F(1), F(1), F(0)
        for i, x in enumerate(block):
            ctx = tuple(prefix) + block[:i]
            t, d = target_fn(ctx)[x], draft_fn(ctx)[x]
            q *= d
            if d:
                surv *= min(F(1), t / d)
            acc += surv
        total += q * acc
    return total


def test_paper_binary_example_fractions():
    law = block_emission_law(lambda c: T_BIN, lambda c: D_BIN, 2, 2)
    block = sum(p * (len(s) - 1) for s, p in law.items())
    token = frac_token_expected_accepted(lambda c: T_BIN, lambda c: D_BIN, 2, 2)
    assert block == F(11, 9) and token == F(10, 9)
    # the same numbers from the vectorised enumeration on a one-state chain
    b, t = round_accepted_means(st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3]), 0, 2)
    assert b[0] == pytest.approx(11 / 9, abs=1e-14) and t[0] == pytest.approx(10 / 9, abs=1e-14)


def _tree_model(seed, V):
    """A context-dependent model with rational laws (depends on the whole prefix)."""

    def law(ctx, salt):
        rng = np.random.default_rng([seed, salt, len(ctx), *ctx])
        w = rng.integers(0, 4, size=V)
        if w.sum() == 0:
            w[0] = 1
        return [F(int(a), int(w.sum())) for a in w]

    return (lambda ctx: law(ctx, 0)), (lambda ctx: law(ctx, 1))


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("V,g", [(2, 2), (2, 3), (3, 2)])
def test_lossless_exact_fractions(seed, V, g):
    """Emitted block continued by target sampling to g + 1 tokens has exactly the target law."""
    tf, df = _tree_model(seed, V)
    if seed == 0:
        df = tf  # equal laws: everything accepted
    law = block_emission_law(tf, df, V, g)
    assert sum(law.values()) == 1
    completed = {}
    for seq, p in law.items():
        stack = [(seq, p)]
        while stack:
            s, w = stack.pop()
            if len(s) == g + 1:
                completed[s] = completed.get(s, F(0)) + w
                continue
            for y, ty in enumerate(tf(s)):
                if ty:
                    stack.append((s + (y,), w * ty))
    for seq in itertools.product(range(V), repeat=g + 1):
        target = F(1)
        for i in range(g + 1):
            target *= tf(seq[:i])[seq[i]]
        assert completed.get(seq, F(0)) == target
    # never below token verification, for this context
    block = sum(p * (len(s) - 1) for s, p in law.items())
    assert block >= frac_token_expected_accepted(tf, df, V, g)


def _prefix_chain(seed, V, T):
    tf, df = _tree_model(seed, V)
    return (
        st.DecodingChain.prefix_tree(
            lambda c: np.array(tf(c), float), lambda c: np.array(df(c), float), V, T
        ),
        tf,
        df,
    )


@pytest.mark.parametrize("seed", range(3))
def test_round_transition_matches_fraction_enumeration(seed):
    V, g = 2, 3
    chain, tf, df = _prefix_chain(seed, V, g + 1)
    Q = block_round_transition(chain, 0, g, True)
    law = block_emission_law(tf, df, V, g)
    s0 = 0  # root prefix ()
    for j in range(g + 1):
        for seq in itertools.product(range(V), repeat=j + 1):
            state = chain.prefixes.index(seq)
            assert Q[s0, j, state] == pytest.approx(float(law.get(seq, 0)), abs=1e-13)
    np.testing.assert_allclose(Q.sum((1, 2)), 1.0, atol=1e-12)
    # no bonus: the round ends after the k-th accepted draft, state = that prefix
    Qn = block_round_transition(chain, 0, g, False)
    np.testing.assert_allclose(Qn[:, :g], Q[:, :g], atol=1e-15)
    np.testing.assert_allclose(Qn[:, g].sum(-1), Q[:, g].sum(-1), atol=1e-14)


@given(st_.integers(0, 10_000), st_.integers(1, 4))
@settings(max_examples=30, deadline=None)
def test_block_at_least_token_per_round(seed, k):
    rng = np.random.default_rng(seed)
    V = int(rng.integers(2, 4))
    sim = float(rng.choice([0.0, 0.5, 1.0]))
    chain = st.DecodingChain.random(V, concentration=float(rng.choice([0.3, 1.0])), similarity=sim, rng=seed)
    b, t = round_accepted_means(chain, 0, k)
    assert np.all(b >= t - 1e-12)
    if k == 1:
        np.testing.assert_allclose(b, t, atol=1e-12)  # one draft: block == token
    # token means against analysis's token round transition (independent code path)
    Qt = token_round_transition(chain)(0, k, True)
    np.testing.assert_allclose(Qt.sum(-1) @ np.arange(k + 1), t, atol=1e-12)
    Qb = block_round_transition(chain, 0, k, True)
    np.testing.assert_allclose(Qb.sum(-1) @ np.arange(k + 1), b, atol=1e-12)
    # a round is lossless: the accepted-count-weighted state law sums to 1 per start
    np.testing.assert_allclose(Qb.sum((1, 2)), 1.0, atol=1e-12)


@pytest.mark.parametrize("seed", range(8))
def test_block_fewer_calls_than_token_on_chains(seed):
    kind = seed % 3
    if kind == 0:
        chain = st.DecodingChain.random(3, concentration=0.5, rng=seed)
    elif kind == 1:
        chain = st.DecodingChain.random(2, n_states=3, concentration=0.8, rng=seed)
    else:
        chain = st.DecodingChain.random(3, horizon=6, concentration=0.7, rng=seed)
    T = 6
    for gamma in (1, 2, 3, 4):
        for bonus in (True, False):
            tok = chain.expected_target_calls(T, gamma, bonus=bonus)
            blk = chain.expected_target_calls(T, gamma, bonus=bonus, verifier="block")
            if gamma == 1:
                assert blk == pytest.approx(tok, abs=1e-12)
            assert blk <= tok + 1e-12
            assert (
                chain.expected_tokens_per_call(T, gamma, bonus=bonus, verifier="block")
                >= chain.expected_tokens_per_call(T, gamma, bonus=bonus) - 1e-12
            )


def test_block_weights_properties_and_padding():
    rng = np.random.default_rng(5)
    R, g, V = 200, 3, 4
    t = rng.dirichlet(np.ones(V) * 0.5, size=(R, g + 1))
    d = rng.dirichlet(np.ones(V) * 0.5, size=(R, g))
    x = np.stack([[rng.choice(V, p=d[r, i]) for i in range(g)] for r in range(R)])
    k = rng.integers(1, g + 1, size=R)
    h, tau_law, final = block_weights(t, d, x, k)
    np.testing.assert_allclose(tau_law.sum(1), 1.0, atol=1e-12)
    assert np.all((h >= 0) & (h <= 1))
    assert np.all(tau_law[np.arange(g + 1)[None] > k[:, None]] == 0)
    np.testing.assert_allclose(final.sum(-1), 1.0, atol=1e-12)
    # padding: a run with k < g behaves as the truncated round
    for kk in (1, 2):
        sel = k == kk
        _, tl2, f2 = block_weights(
            np.concatenate([t[sel, :kk], t[sel, kk : kk + 1]], 1), d[sel, :kk], x[sel, :kk], kk
        )
        np.testing.assert_allclose(tau_law[sel, : kk + 1], tl2, atol=1e-14)
        np.testing.assert_allclose(final[sel, kk], f2[:, kk], atol=1e-14)


def test_rule_hand_uniforms():
    """Binary example, block (0, 1): w = (1, 1/2, 1), Z_2 = sum max(p/2 - q, 0) = 0 so
    h = (0, 1); block (0, 0): w = (1, 1/2, 1/4), h = (0, 1/4)."""
    t = np.tile([1 / 3, 2 / 3], (4, 3, 1))
    d = np.tile([2 / 3, 1 / 3], (4, 2, 1))
    x = [[0, 1], [0, 0], [0, 0], [0, 0]]
    eta = [[0.3, 0.9], [0.0, 0.2], [0.0, 0.3], [0.0, 0.3]]
    # run 3: tau = 0, residual norm(max(p - q, 0)) = (0, 1); run 2: tau = 0 also (h_1 = 0)
    tau, tok = block_rule(t, d, x, 2, eta, [0.0, 0.0, 0.0, 0.99])
    assert tau.tolist() == [2, 2, 0, 0]
    assert tok.tolist() == [0, 0, 1, 1]  # bonus ~ p with u = 0 gives token 0
    h, tau_law, _ = block_weights(t[:2], d[:2], x[:2], 2)
    np.testing.assert_allclose(h, [[0.0, 1.0], [0.0, 0.25]], atol=1e-15)
    np.testing.assert_allclose(tau_law, [[0.0, 0.0, 1.0], [0.75, 0.0, 0.25]], atol=1e-15)


def test_verify_round_monte_carlo_one_round():
    """tau histogram and final-token law of block_verify_round vs block_weights (chi-square)."""
    rng = np.random.default_rng(0)
    g, V, R = 3, 3, 60_000
    t1 = rng.dirichlet(np.ones(V), size=(g + 1))
    d1 = rng.dirichlet(np.ones(V), size=g)
    x1 = np.array([0, 2, 1])
    t, d, x = np.broadcast_to(t1, (R, g + 1, V)), np.broadcast_to(d1, (R, g, V)), np.broadcast_to(x1, (R, g))
    tau, tok = block_verify_round(t, d, x, np.full(R, g), rng=1)
    _, tau_law, final = block_weights(t1[None], d1[None], x1[None], g)
    joint = tau_law[0][:, None] * final[0]  # P(tau = j, token = y)
    counts = np.bincount(tau * V + tok, minlength=(g + 1) * V)
    exp = joint.ravel() * R
    keep = exp > 0
    assert counts[~keep].sum() == 0
    stat = ((counts[keep] - exp[keep]) ** 2 / exp[keep]).sum()
    assert stat <= stats.chi2.isf(1e-6, keep.sum() - 1)  # false failure 1e-6


def test_simulate_block_matches_exact():
    chain = st.DecodingChain.random(3, concentration=0.6, rng=3)
    T, gamma, n = 8, 3, 20_000
    res = simulate(chain, T, gamma, n, rng=7, verifier="block")
    for name, exact in (
        ("target_calls", chain.expected_target_calls(T, gamma, verifier="block")),
        ("draft_tokens", chain.expected_draft_tokens(T, gamma, verifier="block")),
    ):
        assert_within_se(*res.mean_se(name), exact, name)  # seed fixed


def test_simulate_block_sequences_have_target_law():
    """Whole generations (several rounds) by block verification: chi-square against the
    exact target law of all V**T sequences."""
    chain = st.DecodingChain.random(2, concentration=0.5, rng=11)
    T, gamma, n = 5, 3, 40_000
    res = simulate(chain, T, gamma, n, rng=9, verifier="block", return_tokens=True)
    law = chain.sequence_law(T, method="target").ravel()
    codes = res.tokens @ (2 ** np.arange(T - 1, -1, -1))
    counts = np.bincount(codes, minlength=2**T)
    exp = law * n
    keep = exp > 0
    assert counts[~keep].sum() == 0
    stat = ((counts[keep] - exp[keep]) ** 2 / exp[keep]).sum()
    assert stat <= stats.chi2.isf(1e-6, keep.sum() - 1)  # false failure 1e-6


# ---------------------------------------------------------------- bad input
def test_bad_input():
    chain = st.DecodingChain.random(6, concentration=1.0, rng=0)
    with pytest.raises(ValueError, match="k"):
        block_round_transition(chain, 0, 9, True)  # 6**9 blocks: too many
    with pytest.raises(ValueError, match="k"):
        block_round_transition(chain, 0, 0, True)
    t = np.full((2, 3, 2), 0.5)
    d = np.full((2, 2, 2), 0.5)
    with pytest.raises(ValueError, match="draft_tokens"):
        block_rule(t, d, [[0, 1]], 2, np.zeros((2, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="k"):
        block_rule(t, d, [[0, 1], [1, 1]], 3, np.zeros((2, 2)), np.zeros(2))
    with pytest.raises(ValueError, match="target_laws"):
        block_rule(t[:, :2], d, [[0, 1], [1, 1]], 2, np.zeros((2, 2)), np.zeros(2))
    short = st.DecodingChain.random(2, horizon=3, rng=0)
    with pytest.raises(ValueError, match="max_horizon"):
        block_round_transition(short, 1, 2, True)


def test_block_weights_zero_weight_prefix_meets_overflowing_ratio():
    """``w_1 = 0`` (target gives the first draft token zero mass) followed by a draft mass so
    small that ``p/q`` overflows to inf: ``w_2 = min(1, 0 * inf)`` used to be NaN. A zero
    prefix weight stays zero, so the round is the same as with a draft mass of 1e-300."""
    t = np.array([[[0.0, 1.0], [0.5, 0.5], [0.5, 0.5]]])
    x = [[0, 1]]
    out = {}
    for tiny in (1e-320, 1e-300):
        d = np.array([[[0.5, 0.5], [1.0 - tiny, tiny]]])
        with np.errstate(all="raise"):
            out[tiny] = block_weights(t, d, x, 2)
        h, tau_law, final = out[tiny]
        assert np.all(np.isfinite(h)) and np.all(np.isfinite(tau_law)) and np.all(np.isfinite(final))
        np.testing.assert_allclose(tau_law, [[1.0, 0.0, 0.0]], atol=0)
        tau, tok = block_rule(t, d, x, 2, [[0.0, 0.0]], [0.0])
        assert tau.tolist() == [0] and tok.tolist() == [1]  # residual of p_1 - q_1 is token 1
    for a, b in zip(out[1e-320], out[1e-300]):
        np.testing.assert_allclose(a, b, atol=0)


@pytest.mark.parametrize("rule", ["block", "token"])
def test_round_rules_reject_bad_tokens_and_laws(rule):
    fn = get_verifier(rule).rule
    t = np.full((1, 3, 2), 0.5)
    d = np.full((1, 2, 2), 0.5)
    args = (np.zeros((1, 2)), np.zeros(1))
    for bad_x in ([[0, 7]], [[-1, 0]]):
        with pytest.raises(ValueError, match="draft_tokens"):
            fn(t, d, bad_x, [2], *args)
    neg = t.copy()
    neg[0, 0] = [-0.5, 1.5]
    with pytest.raises(ValueError, match="target_laws"):
        fn(neg, d, [[0, 1]], [2], *args)
    nan = d.copy()
    nan[0, 1, 0] = np.nan
    with pytest.raises(ValueError, match="draft_laws"):
        fn(t, nan, [[0, 1]], [2], *args)

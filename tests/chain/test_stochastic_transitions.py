"""Stochastic transitions of DecodingChain (``next_state`` a law [S, V, S]), issue 16.

Independent methods compared: the exact recursions (through the transition operator), literal
enumeration of the protocol with fractions.Fraction (branching over next-state draws), Monte
Carlo (5 SE, fixed seeds), a point-mass law against the int map, and an exact lumping of a larger
deterministic chain.
"""

import itertools
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

import spectheory as st
from spectheory.chain.transitions import NextStateSampler, law_matrix, random_transition_law
from spectheory.exact.enumeration import (
    accepted_histogram,
    outcome_expectation,
    outcome_sequence_law,
    protocol_outcomes,
    target_sequence_law_exact,
)
from spectheory.montecarlo import sample_target
from tests._helpers import assert_frequencies, assert_within_se

FIELDS = ("round_starts", "rejection_by_position", "accepted_counts")


def _stochastic(seed, S=4, V=3, horizon=None, support=None):
    base = st.DecodingChain.random(V, n_states=S, horizon=horizon, rng=seed)
    law = random_transition_law(S, V, concentration=0.7, support=support, rng=seed + 100)
    return st.DecodingChain(base.target, base.draft, base.initial, law)


def _assert_same_protocol(a, b, T, gammas=(1, 2, 3), rtol=1e-12, labels=None):
    """``a`` and ``b`` have equal protocol results; ``labels`` maps ``b``'s states onto ``a``'s."""
    lump = (lambda r: r) if labels is None else (lambda r: r @ np.eye(a.n_states)[labels])
    for g, bonus in itertools.product(gammas, (True, False)):
        ra, rb = a.protocol(T, g, bonus=bonus), b.protocol(T, g, bonus=bonus)
        for f in FIELDS:
            vb = lump(rb.round_starts) if f == "round_starts" else getattr(rb, f)
            np.testing.assert_allclose(
                getattr(ra, f), vb, rtol=rtol, atol=1e-13, err_msg=f"{f} g={g} {bonus}"
            )
        np.testing.assert_allclose(ra.bonus_tokens, rb.bonus_tokens, rtol=rtol, atol=1e-13)


# ------------------------------------------------------------------ validation
def test_validation_messages():
    t = np.full((2, 2), 0.5)
    with pytest.raises(ValueError, match="next_state.*shape"):
        st.DecodingChain(t, t, None, np.full((2, 2, 3), 1 / 3))
    with pytest.raises(ValueError, match="next_state.*negative"):
        st.DecodingChain(t, t, None, np.array([[[1.5, -0.5]] * 2] * 2))
    with pytest.raises(ValueError, match=r"next_state.*\(state 1, token 0\).*sums to"):
        st.DecodingChain(t, t, None, np.array([[[0.5, 0.5]] * 2, [[0.5, 0.4], [1.0, 0.0]]]))
    with pytest.raises(ValueError, match="next_state.*NaN"):
        st.DecodingChain(t, t, None, np.full((2, 2, 2), np.nan))
    with pytest.raises(ValueError, match="next_state.*integer"):
        st.DecodingChain(t, t, None, np.zeros((2, 2)))
    with pytest.raises(ValueError, match=r"next_state.*\(S \* V, S\)"):
        st.DecodingChain(t, t, None, sp.csr_matrix(np.ones((2, 2))))
    chain = st.DecodingChain(t, t, None, np.full((2, 2, 2), 0.5))
    assert chain.is_stochastic and not chain.is_first_order
    assert not st.DecodingChain(t, t).is_stochastic


def test_sparse_law_equals_dense_law():
    dense = _stochastic(3, support=2)
    sparse = st.DecodingChain(
        dense.target,
        dense.draft,
        dense.initial,
        sp.csr_matrix(np.asarray(dense.next_state).reshape(-1, dense.n_states)),
    )
    assert sparse.is_stochastic
    _assert_same_protocol(dense, sparse, 7, gammas=(2,))


def test_next_state_sampler_frequencies():
    # fixed seed; 5 binomial SE per cell
    law = random_transition_law(5, 3, support=3, rng=4)
    smp = NextStateSampler(law_matrix(law))
    rng = np.random.default_rng(0)
    n = 40_000
    for s, x in ((0, 0), (3, 2), (4, 1)):
        draws = smp.sample(np.full(n, s), np.full(n, x), rng.random(n))
        assert_frequencies(np.bincount(draws, minlength=5) / n, law[s, x], n, f"K(.|{s},{x})")
    # zero-probability states are never drawn, even at u = 0 or just below 1
    edge = smp.sample(np.zeros(2, int), np.zeros(2, int), np.array([0.0, np.nextafter(1.0, 0)]))
    assert np.all(law[0, 0, edge] > 0)


# ------------------------------------------------------- point mass = int map
@pytest.mark.parametrize("horizon_kernels", [None, 6])
def test_point_mass_law_equals_deterministic_chain(horizon_kernels):
    det = st.DecodingChain.random(3, n_states=5, horizon=horizon_kernels, rng=11)
    S = det.n_states
    onehot = np.eye(S)[det.next_state]  # [S, V, S]
    soft = st.DecodingChain(det.target, det.draft, det.initial, onehot)
    assert soft.is_stochastic
    T = 6
    np.testing.assert_allclose(soft.state_marginals(T), det.state_marginals(T), rtol=1e-13, atol=1e-15)
    np.testing.assert_allclose(soft.tv_profile(T), det.tv_profile(T), rtol=1e-13)
    _assert_same_protocol(soft, det, T)
    np.testing.assert_allclose(
        soft.accepted_count_law(T, 2, per_state=True),
        det.accepted_count_law(T, 2, per_state=True),
        rtol=1e-12,
        atol=1e-14,
    )
    np.testing.assert_allclose(
        soft.expected_tokens_per_call(T, 2, per_generation=True),
        det.expected_tokens_per_call(T, 2, per_generation=True),
        rtol=1e-12,
    )
    np.testing.assert_allclose(soft.sequence_law(4, 2), det.sequence_law(4, 2), rtol=1e-12, atol=1e-15)


# ------------------------------------------------------------ exact vs Monte Carlo
@pytest.mark.parametrize("seed, horizon_kernels, bonus", [(1, None, True), (2, None, False), (3, 9, True)])
def test_exact_matches_monte_carlo(seed, horizon_kernels, bonus):
    # fixed seeds; every statistic within 5 SE (false failure ~ 1 in 1.7 million each)
    chain = _stochastic(seed, S=5, V=3, horizon=horizon_kernels, support=3)
    T, g = 9, 3
    exact = chain.protocol(T, g, bonus=bonus)
    sim = st.simulate(chain, T, g, 30_000, rng=seed, bonus=bonus)
    for name in ("target_calls", "rejections", "accepted", "draft_tokens"):
        assert_within_se(*sim.mean_se(name), getattr(exact, name), name)
    assert_frequencies(
        sim.rejection_by_position / sim.n_runs, exact.rejection_by_position, sim.n_runs, "rejection profile"
    )
    if not bonus:  # Theorem 1 holds for stochastic transitions too
        np.testing.assert_allclose(exact.rejections, chain.tv_profile(T).sum(), rtol=1e-12)


def test_sample_target_follows_the_sequence_law():
    # fixed seed; each of the V**T sequence probabilities within 5 binomial SE
    chain = _stochastic(5, S=3, V=2, support=2)
    n = 40_000
    tok = sample_target(chain, 3, n, rng=0)
    freq = np.bincount(tok @ np.array([4, 2, 1]), minlength=8) / n
    assert_frequencies(freq, chain.sequence_law(3, method="target").ravel(), n, "target sequences")


# ------------------------------------------------------- Fraction enumeration
def _tiny():
    """V = 2, S = 2, dyadic entries (exact as Fractions)."""
    target = np.array([[0.5, 0.5], [0.75, 0.25]])
    draft = np.array([[0.25, 0.75], [0.5, 0.5]])
    law = np.array([[[0.5, 0.5], [0.25, 0.75]], [[1.0, 0.0], [0.125, 0.875]]])
    return st.DecodingChain(target, draft, [0.75, 0.25], law)


@pytest.mark.parametrize("gamma, bonus", [(1, True), (2, True), (2, False), (3, True)])
def test_exact_matches_fraction_enumeration(gamma, bonus):
    chain, T = _tiny(), 3
    out = protocol_outcomes(chain, T, gamma, bonus=bonus)
    assert sum(out.values()) == 1
    res = chain.protocol(T, gamma, bonus=bonus)
    for name, field in (
        ("target_calls", "calls"),
        ("rejections", "rejections"),
        ("draft_tokens", "draft_tokens"),
    ):
        np.testing.assert_allclose(
            getattr(res, name), float(outcome_expectation(out, field)), rtol=1e-14, err_msg=name
        )
    np.testing.assert_allclose(
        res.accepted_counts, [float(h) for h in accepted_histogram(out, gamma)], rtol=1e-14
    )
    # lossless: the output law is the target's, exactly
    assert outcome_sequence_law(out) == target_sequence_law_exact(chain, T)
    seq = chain.sequence_law(T, gamma, bonus=bonus)
    for toks, p in target_sequence_law_exact(chain, T).items():
        np.testing.assert_allclose(seq[toks], float(p), rtol=1e-14)
    if not bonus:
        assert outcome_expectation(out, "rejections") == sum(
            Fraction(float(v)) for v in chain.tv_profile(T)
        )  # Theorem 1 (dyadic entries: exact)


# --------------------------------------------------------------- exact lumping
def _lifted(chain, T):
    r"""A deterministic chain whose coarse state is the stochastic chain's, exactly.

    Fine state at position ``n`` = (coarse state ``c``, the maps ``w_{n+1}, ..., w_{T-1}``) where
    ``w_m : (c, x) -> c'`` are independent random maps with ``P(w_m(c, x) = c') = K(c'|c, x)``,
    drawn once in the initial law; token ``x`` moves to ``(w_{n+1}(c, x), w_{n+2}, ...)``. Every
    fine state in block ``c`` has the kernels of ``c``. Distinct (position, c, x) read
    independent entries, so the coarse process -- drafts, rejections and bonus tokens -- has the
    stochastic chain's law.
    """
    S, V = chain.n_states, chain.vocab_size
    K = np.asarray(chain.next_state)
    maps = list(itertools.product(range(S), repeat=S * V))
    pm = np.array([np.prod([K[i // V, i % V, m[i]] for i in range(S * V)]) for m in maps])
    keep = [i for i in range(len(maps)) if pm[i] > 0]
    states = [(T, None, ())]  # terminal
    index = {states[0]: 0}
    for n in range(T - 1, -1, -1):
        for c in range(S):
            for rest in itertools.product(keep, repeat=T - 1 - n):
                index[(n, c, rest)] = len(states)
                states.append((n, c, rest))
    Sf = len(states)
    tgt, drf = np.full((Sf, V), 1.0 / V), np.full((Sf, V), 1.0 / V)
    ns = np.zeros((Sf, V), dtype=np.int64)
    init = np.zeros(Sf)
    for i, (n, c, rest) in enumerate(states):
        if n == T:
            continue
        tgt[i], drf[i] = chain.target[c], chain.draft[c]
        for x in range(V):
            ns[i, x] = 0 if n == T - 1 else index[(n + 1, maps[rest[0]][c * V + x], rest[1:])]
        if n == 0:
            init[i] = chain.initial[c] * np.prod([pm[j] for j in rest])
    labels = np.array([0 if c is None else c for _, c, _ in states])
    return st.DecodingChain(tgt, drf, init / init.sum(), ns, max_horizon=T), labels


def test_exact_lumping_of_a_deterministic_chain():
    chain = _stochastic(7, S=2, V=2, support=2)
    T = 3
    fine, labels = _lifted(chain, T)
    assert fine.n_states > 100 and not fine.is_stochastic
    _assert_same_protocol(chain, fine, T, rtol=1e-11, labels=labels)
    np.testing.assert_allclose(
        chain.state_marginals(T), fine.state_marginals(T) @ np.eye(2)[labels], rtol=1e-12
    )
    np.testing.assert_allclose(chain.sequence_law(T, 2), fine.sequence_law(T, 2), rtol=1e-11, atol=1e-15)


# ---------------------------------------------- engines that need a deterministic map
def test_path_engines_refuse_stochastic_chains():
    from spectheory.abstraction.certified import coarsen
    from spectheory.analysis.sequence_front_tree import prefix_forest
    from spectheory.kinds.policy._kernels import Kernels
    from spectheory.stopping import FixedGamma
    from spectheory.trees import DraftTree

    chain = _tiny()
    tree = DraftTree.from_branching([2])
    calls = [
        lambda: chain.protocol(3, tree=tree),
        lambda: chain.protocol(3, 2, verifier="block"),
        lambda: Kernels(chain),
        lambda: prefix_forest(chain, 2),
        lambda: coarsen(chain, 3, np.zeros(2, int)),
        lambda: st.simulate(chain, 3, tree, 10, rng=0),
        lambda: st.simulate(chain, 3, st.BatchRound(2, 2), 10, rng=0),
        lambda: st.simulate(chain, 3, st.PolicyRound(FixedGamma(2)), 10, rng=0),
    ]
    for call in calls:
        with pytest.raises(ValueError, match="needs a deterministic next_state"):
            call()
    # Monte Carlo of block verification works (generic verify_round path)
    sim = st.simulate(chain, 3, 2, 100, rng=0, verifier="block")
    assert sim.n_runs == 100


def test_fixed_gamma_policy_value_is_exact_on_stochastic_chains():
    # evaluate_policy(FixedGamma) runs the phase engine (no path walk): it accepts stochastic
    # chains and equals chain.protocol, itself exact for them; the round recursion refuses them
    from spectheory.stopping import FixedGamma, HFSchedule, evaluate_policy

    chain = _stochastic(3)
    for g in (1, 2, 4):
        value = evaluate_policy(chain, FixedGamma(g), 9, 0.2)
        res = chain.protocol(9, g, cost=0.2)
        for name in ("target_calls", "rejections", "draft_tokens", "accepted", "bonus_tokens"):
            assert getattr(value, name) == pytest.approx(getattr(res, name), rel=1e-12, abs=1e-13)
        assert value.time() == pytest.approx(res.time(), rel=1e-12)
    for call in (
        lambda: evaluate_policy(chain, FixedGamma(2), 9, 0.2, method="rounds"),
        lambda: evaluate_policy(chain, HFSchedule(2, max_depth=4), 9, 0.2),
    ):
        with pytest.raises(ValueError, match="needs a deterministic next_state"):
            call()

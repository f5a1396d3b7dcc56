"""Optima per batch size, the crossover, and the lockstep rate of a policy against a direct simulation.

The lockstep simulation plays ``B`` rows of a chain together with the package's own round
(``PathRound(k).play`` on the chain sampler, ``k = lengths[s]`` per row), charges every batch
round ``tau_B(max_i k_i)`` and compares the long-run tokens per row per second with
:func:`spectheory.stopping.lockstep.lockstep_rate` within 5 SE over independent replicate batches.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import spectheory as st
from spectheory.cost import (
    ConstantCost,
    ConstantForward,
    CostModel,
    LinearForward,
    crossover_batch,
    named_cost,
    optimal_gamma,
    optimal_round,
    speedup_table,
)
from spectheory.kinds import PathRound
from spectheory.rounds import RoundRuns
from spectheory.rounds.sampler import ChainSampler
from spectheory.stopping.lockstep import lockstep_rate, optimal_policy_by_batch
from spectheory.stopping.optimal import long_run_rate

H200 = named_cost("llama2-7b/68m-h200")


def _chain():
    return st.DecodingChain.random(3, n_states=4, concentration=0.6, rng=11)


def test_constant_c_never_moves_with_the_batch():
    opt = optimal_gamma(0.8, ConstantCost(0.05), [1, 16, 4096])
    assert (opt.best_gamma == opt.best_gamma[0]).all() and opt.crossover is None
    np.testing.assert_allclose(opt.constant_c_error, 1.0, rtol=1e-12)
    assert opt.constant_c_gamma == opt.best_gamma[0] == st.iid_optimal_gamma(0.8, 0.05)
    assert opt.constant_c_speedup == pytest.approx(float(st.iid_speedup(0.8, opt.constant_c_gamma, 0.05)))


def test_the_roofline_crossover_and_the_constant_c_error():
    batches = [1, 4, 16, 64, 256, 1024, 4096]
    opt = optimal_gamma(0.8, H200, batches)
    # the best gamma shrinks as target calls turn compute-bound; speculation loses past the ridge
    assert all(b <= a for a, b in zip(opt.best_gamma, opt.best_gamma[1:]))
    ridge = H200.target.ridge_tokens()
    assert opt.crossover is not None and opt.crossover <= 2 * ridge
    assert (opt.best_speedup[opt.batches >= opt.crossover] < 1).all()
    assert opt.constant_c_error[0] == pytest.approx(1.0, rel=1e-12)  # memory-bound at B = 1: exact
    assert all(b >= a - 1e-12 for a, b in zip(opt.constant_c_error, opt.constant_c_error[1:]))
    np.testing.assert_allclose(
        opt.throughput(H200), opt.batches * opt.best_speedup / [H200.autoregressive(b) for b in batches]
    )


@given(
    alpha=hs.floats(0.0, 1.0),
    per_token=hs.floats(0.0, 1e-3),
    draft=hs.floats(1e-5, 5e-3),
)
@settings(max_examples=40, deadline=None)
def test_the_crossover_agrees_with_the_sign_of_the_best_speedup(alpha, per_token, draft):
    model = CostModel(LinearForward(0.01, per_token), ConstantForward(draft))
    batches = [1, 8, 64, 512, 4096]
    opt = optimal_gamma(alpha, model, batches, gammas=range(1, 9))
    losing = [b for b, s in zip(batches, opt.best_speedup) if s < 1]
    assert opt.crossover == (min(losing) if losing else None)
    assert crossover_batch(opt.best_speedup, batches) == opt.crossover
    np.testing.assert_array_equal(opt.best_speedup, opt.speedup.max(1))


def test_a_chain_table_is_its_exact_results():
    chain, T = _chain(), 20
    table = speedup_table(chain, H200, [1, 3], [1, 512], horizon=T)
    for i, B in enumerate([1, 512]):
        for j, g in enumerate([1, 3]):
            assert table[i, j] == chain.protocol(T, g).speedup(H200, batch=B)
    best, s, full = optimal_round(chain, [1, 3, st.DraftTree.from_branching([2, 1])], H200, [1, 512], T)
    np.testing.assert_array_equal(full[:, :2], table)
    assert s.tolist() == full.max(1).tolist() and best.tolist() == full.argmax(1).tolist()


def test_an_iid_chain_approaches_the_closed_form_in_the_long_run():
    chain = st.DecodingChain.iid([0.6, 0.3, 0.1], [0.4, 0.4, 0.2])
    alpha = float(st.acceptance_rate([0.6, 0.3, 0.1], [0.4, 0.4, 0.2]))
    long = speedup_table(chain, H200, [3], [1, 256], horizon=4000)
    closed = speedup_table(alpha, H200, [3], [1, 256])
    np.testing.assert_allclose(long, closed, rtol=2e-3)


@pytest.mark.parametrize(
    "bad, match",
    [
        (lambda: optimal_gamma(1.5, H200), "source"),
        (lambda: optimal_gamma(0.5, H200, [0]), "batches"),
        (lambda: optimal_gamma(0.5, H200, gammas=[0]), "gammas"),
        (lambda: optimal_gamma(0.5, 0.1), "model"),
        (lambda: speedup_table(_chain(), H200, [1], [1]), "horizon"),
        (lambda: crossover_batch([1.0], [1, 2]), "best_speedup"),
        (lambda: optimal_round(_chain(), [], H200, [1], 8), "rounds"),
        (lambda: lockstep_rate(_chain(), 0, H200, 4), "lengths"),
        (lambda: lockstep_rate(_chain(), 2, 0.1, 4), "model"),
    ],
)
def test_bad_arguments_are_refused_by_name(bad, match):
    with pytest.raises(ValueError, match=match):
        bad()


# -- policies in lockstep ---------------------------------------------------------------------
def test_a_fixed_gamma_in_lockstep_is_the_long_run_rate():
    chain = _chain()
    for B in (1, 64):
        r = lockstep_rate(chain, 3, H200, B)
        assert r.lockstep_penalty == 1.0 and r.expected_max_length == 3.0
        assert r.speedup() == pytest.approx(long_run_rate(chain, 3, H200.relative(B)), rel=1e-10)
    assert lockstep_rate(chain, [1, 4, 2, 6], H200, 1).lockstep_penalty == pytest.approx(1.0, rel=1e-12)


def _simulate_lockstep(chain, lengths, model, B, replicates, rounds, burn, rng):
    """Per replicate batch: tokens per row per second over ``rounds`` batch rounds after ``burn``."""
    sampler = ChainSampler(chain)
    lengths = np.asarray(lengths)
    cost = model.at(B)
    tau = {k: model.round_time(int(k), B) for k in np.unique(lengths)}
    huge = 10**9
    state = rng.choice(chain.n_states, size=(replicates, B), p=chain.initial)
    tokens = np.zeros(replicates)
    time = np.zeros(replicates)
    assert cost.c == model.draft_step(B)
    for r in range(burn + rounds):
        k = lengths[state]
        emitted = np.zeros_like(state)
        new_state = np.empty_like(state)
        for kk in np.unique(k):
            rows = np.nonzero(k == kk)
            s = state[rows]
            zeros = np.zeros(s.size, dtype=np.int64)
            o = PathRound(int(kk)).play(sampler, RoundRuns(huge, zeros, s, zeros), rng)
            emitted[rows] = np.asarray(o.accepted) + 1  # a correction, or the bonus token
            new_state[rows] = sampler.next_state[np.asarray(o.end_state), np.asarray(o.final)]
        if r >= burn:
            tokens += emitted.sum(1) / B
            time += np.array([tau[int(m)] for m in k.max(1)])
        state = new_state
    return tokens / time


@pytest.mark.parametrize("B", [2, 16])
def test_the_lockstep_rate_matches_a_direct_simulation(B):
    chain, lengths = _chain(), [1, 4, 2, 6]
    exact = lockstep_rate(chain, lengths, H200, B)
    rates = _simulate_lockstep(
        chain, lengths, H200, B, replicates=200, rounds=60, burn=10, rng=np.random.default_rng(7)
    )
    se = rates.std(ddof=1) / np.sqrt(rates.size)
    assert abs(rates.mean() - exact.tokens_per_second) < 5 * se
    # the ragged rate (each row its own length) is measurably faster at B = 16
    if B == 16:
        ragged = exact.tokens_per_round / exact.ragged_round_time
        assert ragged - rates.mean() > 5 * se


def test_optimal_policy_by_batch_is_the_stopping_optimum_costed_in_lockstep():
    chain = _chain()
    rows = optimal_policy_by_batch(chain, H200, [1, 256], max_depth=6)
    for row in rows:
        lock = lockstep_rate(chain, row["lengths"], H200, row["batch"])
        assert row["policy_speedup"] == pytest.approx(lock.speedup(), rel=1e-12)
        assert row["policy_ragged_speedup"] >= row["policy_speedup"] - 1e-9
        assert row["policy_ragged_speedup"] >= row["gamma_speedup"] - 1e-9  # the optimum dominates
    assert rows[0]["best_gamma"] >= rows[1]["best_gamma"]


def test_the_best_tree_per_batch_size_is_sequoias_tree_costed_exactly():
    from spectheory.trees import optimal_tree_by_batch, positional_vector, sequoia_positional_dp

    chain, T = st.DecodingChain.random(6, concentration=0.5, similarity=0.4, rng=2), 32
    res = optimal_tree_by_batch(chain, H200, [1, 64, 1024], T, budgets=(1, 3, 8))
    a = positional_vector(chain, 4, "tree_rrs_wo")
    for j, b in enumerate((1, 3, 8)):
        assert res.trees[j] == sequoia_positional_dp(a, tree_size=b + 1)[1]
        for i, B in enumerate((1, 64, 1024)):
            exact = chain.protocol(T, st.TreeRound(res.trees[j], "tree_rrs_wo")).speedup(H200, batch=B)
            assert res.speedup[i, j] == exact
    assert res.best.tolist() == res.speedup.argmax(1).tolist()
    assert res.best_budget[0] >= res.best_budget[-1]  # calls turn compute-bound: fewer nodes
    assert res.crossover == crossover_batch(res.best_speedup, [1, 64, 1024])
    with pytest.raises(ValueError, match="budgets"):
        optimal_tree_by_batch(chain, H200, [1], T, budgets=[0])

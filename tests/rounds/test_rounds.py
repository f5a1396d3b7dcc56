"""Rounds as objects and the one Monte Carlo driver (issue 20): every round kind through
``st.simulate``, one result type, the shorthands and their errors.

Monte Carlo comparisons are at 5 standard errors with fixed seeds (a false failure about one
run in a million per comparison).
"""

import numpy as np
import pytest

import spectheory as st
from spectheory.kinds import as_round
from spectheory.rounds import Round, RoundOutcome, driver
from spectheory.stopping import FixedGamma, HFSchedule, PolicyRound
from spectheory.trees import BatchRound, DraftTree, TreeRound

CHAIN = st.DecodingChain.random(3, n_states=4, rng=5)
TREE = DraftTree.from_branching([2, 1])
ROUNDS = {
    "path": st.PathRound(3),
    "path_block": st.PathRound(2, "block"),
    "tree": TreeRound(TREE, "tree_rrs_wo"),
    "batch": BatchRound(2, 2),
    "batch_tree": BatchRound(2, None, reading="tree"),
    "policy": PolicyRound(HFSchedule(2, max_depth=4)),
}


def test_as_round_turns_every_shorthand_into_a_round():
    assert isinstance(as_round(3), st.PathRound) and as_round(gamma=3).gamma == 3
    assert as_round(np.int64(2), verifier="block").verifier_name == "block"
    tree = as_round(TREE)
    assert isinstance(tree, TreeRound) and tree.verifier_name == "tree_rrs"
    assert as_round(tree=TREE, verifier="traversal").verifier_name == "traversal"
    pol = as_round(FixedGamma(3))
    assert isinstance(pol, PolicyRound) and as_round(policy=FixedGamma(2)).max_depth == 2
    assert as_round(policy=FixedGamma(2), verifier="token").verifier_name == "token"
    rnd = BatchRound(3)
    assert as_round(rnd) is rnd


class Budget:
    """A user's shorthand type: a number of drafts, as a path round of that length."""

    def __init__(self, n):
        self.n = n


class BudgetRound(st.PathRound):
    """A user's round kind that declares ``Budget`` as its shorthand (positional only)."""

    shorthand = Budget
    round_keyword = None

    @classmethod
    def from_shorthand(cls, budget, verifier=None):
        return cls(budget.n, "token" if verifier is None else verifier)


def test_a_round_kind_declares_its_shorthand_on_its_class():
    """``as_round`` finds a user's kind by the shorthand it declares; its subclasses that do not
    declare one (BatchRound below TreeRound) do not take over their base's shorthand."""
    rnd = as_round(Budget(3), verifier="block")
    assert type(rnd) is BudgetRound and rnd.gamma == 3 and rnd.verifier_name == "block"
    assert type(as_round(TREE)) is TreeRound
    with pytest.raises(ValueError, match="tree: expected"):
        as_round(tree=Budget(3))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({}, "exactly one of round, gamma, tree, policy .got none"),
        ({"round": 2, "gamma": 3}, "got round, gamma"),
        ({"tree": TREE, "policy": FixedGamma(2)}, "got tree, policy"),
        ({"round": st.PathRound(2), "verifier": "block"}, "verifier: the round"),
        ({"gamma": st.PathRound(2)}, "gamma: got a ready-made PathRound"),
        ({"tree": 3}, "tree: got the int 3"),
        ({"gamma": TREE}, "gamma: expected a draft length"),
        ({"tree": FixedGamma(2)}, "tree: expected"),
        ({"policy": TREE}, "policy: expected"),
        ({"round": "token"}, "round: expected"),
        ({"round": True}, "round: expected"),
        ({"policy": FixedGamma(2), "verifier": "tree_rrs"}, "verifier: .tree_rrs. verifies token trees"),
        ({"round": 0}, "gamma"),
    ],
)
def test_as_round_errors_name_the_argument(kwargs, match):
    with pytest.raises(ValueError, match=match):
        as_round(**kwargs)


@pytest.mark.parametrize("name", sorted(ROUNDS))
def test_every_round_kind_returns_one_result_type(name):
    rnd = ROUNDS[name]
    T, N = 9, 400
    res = st.simulate(CHAIN, T, rnd, N, rng=3, return_tokens=True, cost=0.2)
    assert type(res) is st.SimulationResult and res.round == rnd.name
    D = rnd.depth(T)
    assert res.accepted_counts.shape == (N, D + 1) and res.tokens.shape == (N, T)
    np.testing.assert_array_equal(res.accepted_counts.sum(1), res.target_calls)
    np.testing.assert_array_equal(res.accepted_counts @ np.arange(D + 1), res.accepted)
    assert res.rejection_by_position.sum() == res.rejections.sum()
    assert np.all(res.accepted + res.rejections <= T) and np.all(res.tokens >= 0)
    s = res.summary()
    assert list(s) == [
        "target_calls",
        "rejections",
        "draft_tokens",
        "accepted",
        "target_time",
        "time",
        "tokens_per_call",
        "n_runs",
    ]
    np.testing.assert_allclose(res.time(), 0.2 * res.draft_tokens + res.target_calls)
    np.testing.assert_allclose(res.time(), res.time(0.2))
    assert res.speedup() == pytest.approx(T / res.time().mean())
    np.testing.assert_allclose(res.accepted_count_law.sum(), 1.0)
    # without a cost: the four counters only, and time needs a cost
    plain = st.simulate(CHAIN, T, rnd, 50, rng=3)
    assert plain.target_time is None and "time" not in plain.summary()
    with pytest.raises(ValueError, match="cost"):
        plain.time()
    np.testing.assert_allclose(plain.time(0.5), 0.5 * plain.draft_tokens + plain.target_calls)


@pytest.mark.parametrize("name", sorted(ROUNDS))
def test_one_run_has_a_nan_standard_error(name):
    res = st.simulate(CHAIN, 6, ROUNDS[name], 1, rng=0)
    for stat in ("target_calls", "rejections", "draft_tokens", "accepted"):
        assert np.isnan(res.se(stat)) and res.mean(stat) == float(getattr(res, stat)[0])
    assert np.isnan(res.summary()["tokens_per_call"]["se"])


@pytest.mark.parametrize("name", sorted(ROUNDS))
def test_every_round_kind_agrees_with_its_exact_values(name):
    rnd = ROUNDS[name]
    T = 8
    chain = st.DecodingChain.random(3, n_states=4, rng=6)
    if isinstance(rnd, BatchRound):
        from spectheory.analysis import batch_expected_rejections
        from spectheory.kinds.batch.exact import batch_tree_expected

        if rnd.all_agreeing:
            e = batch_tree_expected(chain, T, rnd.M, gamma=rnd.gamma)
            exact = {"target_calls": e.target_calls, "rejections": e.rejections}
        else:
            e = batch_expected_rejections(chain, T, rnd.M, gamma=rnd.gamma)
            exact = {"target_calls": e.target_calls, "rejections": e.total}
    elif isinstance(rnd, PolicyRound):
        from spectheory.stopping import evaluate_policy

        e = evaluate_policy(chain, rnd.policy, T, 0.0)
        exact = {"target_calls": e.target_calls, "draft_tokens": e.draft_tokens}
    elif isinstance(rnd, TreeRound):
        e = chain.protocol(T, tree=rnd.tree, verifier=rnd.verifier_name)
        exact = {"target_calls": e.target_calls, "rejections": e.rejections, "accepted": e.accepted}
    else:
        e = chain.protocol(T, rnd.gamma, verifier=rnd.verifier_name)
        exact = {"target_calls": e.target_calls, "rejections": e.rejections, "accepted": e.accepted}
    sim = st.simulate(chain, T, rnd, 4000, rng=11)
    for stat, value in exact.items():
        m, se = sim.mean_se(stat)
        assert abs(m - value) <= 5 * se + 1e-12, (name, stat, m, value, se)


def test_one_progress_bar_for_the_whole_call(monkeypatch):
    bars = []
    real = driver.progress_bar

    def spy(progress, total, desc, *rest):
        bars.append((total, desc))
        return real(False, total, desc)

    monkeypatch.setattr(driver, "progress_bar", spy)
    rnd = TreeRound(TREE, max_elements=40)  # a few runs per chunk: many chunks
    assert rnd.chunk_size(CHAIN, 5) < 10
    st.simulate(CHAIN, 5, rnd, 60, rng=0)
    assert bars == [(300, f"simulate {rnd.name}")]


class OneToken(Round):
    """A round kind written against the protocol only: draft one token, token verification."""

    name = "one_token"
    max_depth = 1
    verifier_name = "token"

    def play(self, sampler, runs, rng):
        horizon, n, state = runs.horizon, runs.n, runs.state
        x = sampler.sample_draft(n, state, rng.random(n.size))
        p, q = sampler.probs(sampler.target, n, state, x), sampler.probs(sampler.draft, n, state, x)
        ok = rng.random(n.size) * q < p
        s1 = sampler.next_state[state, x]
        u = rng.random(n.size)
        m1 = np.minimum(n + 1, horizon - 1)
        y = np.where(ok, sampler.sample_target(m1, s1, u), sampler.sample_residual(n, state, u))
        return RoundOutcome(
            accepted=ok.astype(np.int64),
            final=y,
            rejected=~ok,
            drafted=np.ones(n.size, dtype=np.int64),
            end_state=np.where(ok, s1, state),
            path=x[:, None] if runs.keep_path else None,
        )


def test_a_new_round_kind_is_one_class():
    """docs/architecture.md "Adding a round kind": a Round subclass runs through st.simulate with
    every counter; here it is token verification with gamma = 1, so it matches the exact path."""
    chain = st.DecodingChain.random(3, horizon=10, rng=8)
    sim = st.simulate(chain, 10, OneToken(), 5000, rng=4, return_tokens=True)
    exact = chain.protocol(10, 1)
    for stat in ("target_calls", "rejections", "accepted"):
        m, se = sim.mean_se(stat)
        assert abs(m - getattr(exact, stat)) <= 5 * se + 1e-12, stat
    assert sim.round == "one_token" and sim.accepted_counts.shape == (5000, 2)

"""A policy round takes any single-path verifier, in every engine: Monte Carlo, exact values
(every recursion, cross-checked), the decoder and the kit (through their visitors), and says
through ``tags()`` what a whole-round rule cannot do."""

import numpy as np
import pytest

import spectheory as st
from spectheory.kinds.policy.paths import evaluate_paths
from spectheory.rounds import UnsupportedRoundError
from spectheory.stopping import (
    ConfidenceThreshold,
    FixedGamma,
    HFSchedule,
    PolicyRound,
    RejectionThreshold,
    evaluate_policy,
    optimal_policy,
)
from spectheory.stopping.oracle import OracleRound
from spectheory.verifiers import get_verifier, scaled_rule

#: Monte Carlo means must lie within Z standard errors of the exact values.
Z = 5.0
COUNTERS = ("target_calls", "rejections", "draft_tokens", "accepted")
PER_TOKEN = ("token", "point_mass", "sample_match", "argmax_onehot", "argmax_soft", scaled_rule(0.8))
CHAIN = st.DecodingChain.random(3, concentration=0.7, rng=3)


def _label(v):
    return get_verifier(v).name


@pytest.mark.parametrize("verifier", PER_TOKEN, ids=_label)
def test_every_exact_engine_agrees_for_a_per_token_rule(verifier):
    T = 9
    fixed = FixedGamma(3)
    protocol = CHAIN.protocol(T, 3, verifier=verifier)  # the verifier's own engine
    for method in ("auto", "rounds"):
        v = evaluate_policy(CHAIN, fixed, T, 0.1, method=method, verifier=verifier)
        for name in COUNTERS:
            assert abs(getattr(v, name) - getattr(protocol, name)) < 1e-12, (method, name)
    via_paths = evaluate_paths(CHAIN, fixed, T, st.cost.as_cost(0.1), verifier=verifier)
    assert abs(via_paths.time() - protocol.time(0.1)) < 1e-12
    # a start-state policy: the start-class recursion and the path enumeration
    lengths = optimal_policy(CHAIN, T, 0.1, max_depth=3).extra["policy"]
    a = evaluate_policy(CHAIN, lengths, T, 0.1, verifier=verifier)
    b = evaluate_paths(CHAIN, lengths, T, a.cost, verifier=verifier)
    for name in (*COUNTERS, "target_time"):
        assert abs(getattr(a, name) - getattr(b, name)) < 1e-12, name


@pytest.mark.parametrize("verifier", ["block", "hsd"])
def test_a_whole_round_rule_is_exact_under_fixed_gamma_only(verifier):
    T = 9
    v = evaluate_policy(CHAIN, FixedGamma(3), T, 0.1, verifier=verifier)
    want = CHAIN.protocol(T, 3, verifier=verifier)
    for name in COUNTERS:
        assert abs(getattr(v, name) - getattr(want, name)) < 1e-12, name
    np.testing.assert_allclose(v.accepted_counts, want.accepted_counts, atol=1e-12, rtol=0)
    assert PolicyRound(FixedGamma(3), verifier).tags().exact
    conf = PolicyRound(ConfidenceThreshold(0.5, max_depth=3), verifier)
    assert conf.tags().monte_carlo and not conf.tags().exact
    with pytest.raises(UnsupportedRoundError, match="whole round"):
        conf.require("exact")
    with pytest.raises(ValueError, match="round_transition"):
        evaluate_policy(CHAIN, conf.policy, T, 0.1, verifier=verifier)
    with pytest.raises(ValueError, match="round_transition"):
        evaluate_policy(CHAIN, FixedGamma(3), T, 0.1, verifier=verifier, method="rounds")
    oracle = PolicyRound(RejectionThreshold(0.3, max_depth=3), verifier)  # reads accept_prob
    assert not oracle.tags().monte_carlo and "accept_prob" in oracle.tags().why_not["monte_carlo"]


def test_refused_verifiers():
    with pytest.raises(ValueError, match="more than once per round"):
        PolicyRound(FixedGamma(2), "hsd_naive")
    with pytest.raises(ValueError, match="more than once per round"):
        evaluate_policy(CHAIN, FixedGamma(2), 6, 0.1, verifier="hsd_naive")
    with pytest.raises(ValueError, match="verifies token trees"):
        PolicyRound(FixedGamma(2), "tree_rrs")


@pytest.mark.parametrize(
    "policy, verifier",
    [
        (ConfidenceThreshold(0.5, max_depth=4), "point_mass"),
        (HFSchedule(2, max_depth=4), "sample_match"),
        (RejectionThreshold(0.3, max_depth=3), "argmax_soft"),
        (ConfidenceThreshold(0.6, max_depth=3), scaled_rule(0.8)),
        (FixedGamma(3), "block"),
    ],
    ids=lambda x: x if isinstance(x, str) else getattr(x, "name", None),
)
def test_monte_carlo_against_exact_for_other_verifiers(policy, verifier):
    T, N = 12, 4000
    rnd = PolicyRound(policy, verifier)
    exact = CHAIN.protocol(T, rnd, cost=0.1)
    sim = st.simulate(CHAIN, T, rnd, N, rng=0, cost=0.1)
    assert sim.verifier == rnd.verifier.name and sim.round == rnd.name
    for name in (*COUNTERS, "time"):
        mean, se = sim.mean_se(name)
        want = exact.time() if name == "time" else getattr(exact, name)
        assert abs(mean - want) <= Z * max(se, 1e-9), (name, mean, want, se)


def test_greedy_drafting_drafts_the_argmax():
    rnd = PolicyRound(ConfidenceThreshold(0.3, max_depth=3), "argmax_onehot")
    assert not rnd.tags().decoder and "greedily" in rnd.tags().why_not["decoder"]
    sim = st.simulate(CHAIN, 10, rnd, 50, rng=0, return_tokens=True)
    again = st.simulate(CHAIN, 10, rnd, 50, rng=0, return_tokens=True)  # same seed, same runs
    np.testing.assert_array_equal(sim.tokens, again.tokens)
    # the emitted tokens follow the target (a lossless rule): first token's law
    first = np.bincount(
        st.simulate(CHAIN, 1, rnd, 20000, rng=1, return_tokens=True).tokens[:, 0], minlength=3
    )
    want = CHAIN.initial @ CHAIN.target
    assert np.all(np.abs(first / 20000 - want) <= Z * np.sqrt(want * (1 - want) / 20000) + 1e-9)


def test_a_whole_round_rule_runs_a_stopping_policy_by_monte_carlo():
    rnd = PolicyRound(ConfidenceThreshold(0.5, max_depth=4), "block")
    sim = st.simulate(CHAIN, 12, rnd, 300, rng=0, return_tokens=True)
    assert np.all(sim.accepted <= sim.draft_tokens) and np.all(sim.tokens < CHAIN.vocab_size)
    assert np.all(sim.accepted_counts.sum(1) == sim.target_calls)


# ------------------------------------------------------------ the decoder and the kit (visitors)
class _Loops:
    """A stand-in for the decoder's visitor: records what the round hands its path loop."""

    def path(self, target, draft, prompts, max_new_tokens, gamma, *, verifier, policy=None, **options):
        return ("path", gamma, verifier, policy, options)


class _Kit:
    """A stand-in for the kit's visitor."""

    def verifier(self, verifier, *, gammas, **options):
        return ("verifier", verifier, gammas, options)


def test_decode_and_check_plan_hand_the_visitors_the_round_s_data():
    policy = HFSchedule(2, max_depth=5)
    rnd = PolicyRound(policy, "point_mass")
    got = rnd.decode(_Loops(), "t", "d", [[1]], 7, {"seed": 3})
    assert got == ("path", 5, get_verifier("point_mass"), policy, {"seed": 3})
    assert rnd.check_plan(_Kit(), {"n_samples": 10}) == ("verifier", rnd.verifier, (5,), {"n_samples": 10})
    tags = rnd.tags()
    assert tags.decoder and tags.kit and tags.monte_carlo and tags.exact
    assert not tags.along_path and "token verification" in tags.why_not["along_path"]
    assert PolicyRound(policy).tags().along_path


def test_the_token_round_is_unchanged():
    rnd = PolicyRound(FixedGamma(3))
    assert (rnd.name, rnd.verifier_name, repr(rnd)) == (
        "policy(FixedGamma(3))",
        "token",
        "PolicyRound(FixedGamma(3))",
    )
    assert rnd.chunk_size(CHAIN, 10) is None and rnd.verifier is get_verifier("token")


def test_oracle_round_declares_what_it_cannot_run():
    tags = OracleRound(3).tags()
    assert tags.monte_carlo and tags.exact
    for engine in ("decoder", "kit", "along_path"):
        assert not tags.supports(engine) and "coins" in tags.why_not[engine]
    with pytest.raises(UnsupportedRoundError, match="oracle.*no real drafter"):
        OracleRound(3).require("decoder")


@pytest.mark.parametrize("verifier", ["point_mass", "argmax_soft"])
def test_the_optima_under_another_verifier_dominate_its_policies(verifier):
    T = 8
    state = optimal_policy(CHAIN, T, 0.1, max_depth=3, verifier=verifier)
    path = optimal_policy(CHAIN, T, 0.1, "path", max_depth=3, verifier=verifier)
    token = optimal_policy(CHAIN, T, 0.1, max_depth=3)
    assert abs(state.time() - token.time()) > 1e-6  # the verifier changes the optimum
    # the state optimum is the best start-state policy: evaluate its lengths with the same rule
    again = evaluate_policy(CHAIN, state.extra["policy"], T, 0.1, verifier=verifier)
    assert abs(again.time() - state.time()) < 1e-12
    assert abs(state.accepted_counts.sum() - state.target_calls) < 1e-12
    for policy in (FixedGamma(1), FixedGamma(3), ConfidenceThreshold(0.5, max_depth=3)):
        v = evaluate_policy(CHAIN, policy, T, 0.1, verifier=verifier)
        assert path.time() <= v.time() + 1e-12
        assert state.time() <= v.time() + 1e-12 or not isinstance(policy, FixedGamma)
    assert path.time() <= state.time() + 1e-12
    rows = st.stopping.compare_policies(CHAIN, [FixedGamma(2)], T, 0.1, max_depth=3, verifier=verifier)
    assert rows[0]["ratio_state"] >= 1.0 - 1e-12 and rows[0]["ratio_path"] >= 1.0 - 1e-12

"""One result vocabulary for the exact results of path, tree, batch and policy rounds.

Each shared member is checked against an independent computation: a path drafted as a tree
(per-node engine) and as ``M = 1`` draft sequence (the batch engine) against the phase engine;
the time under a target-call latency against the stopping engines' round recursion; the token
identity ``accepted + rejections + bonus_tokens = T``; the summary shapes against each other.
"""

import numpy as np
import pytest

import spectheory as st
from spectheory.cost import Cost
from spectheory.exact import ExactResult, ProtocolResult
from spectheory.kinds.batch.exact import batch_tree_expected
from spectheory.stopping import FixedGamma, PolicyValue, evaluate_policy
from spectheory.trees import BatchTreeResult, DraftTree, TreeProtocolResult, tree_protocol

ARRAYS = ("accepted_counts", "accepted_count_law", "rejection_by_position", "round_starts")
COUNTERS = ("target_calls", "rejections", "draft_tokens", "accepted", "bonus_tokens", "tokens_per_call")


def _chains():
    yield st.DecodingChain.random(3, concentration=0.7, rng=5)
    yield st.DecodingChain.random(3, n_states=4, horizon=8, concentration=0.6, rng=6)


@pytest.mark.parametrize("chain", list(_chains()), ids=repr)
@pytest.mark.parametrize("bonus", [True, False])
@pytest.mark.parametrize("gamma", [1, 3])
def test_a_path_as_tree_and_as_one_draft_sequence_has_the_path_result(chain, bonus, gamma):
    T = 8
    path = chain.protocol(T, gamma, bonus=bonus)
    tree = tree_protocol(chain, T, DraftTree.from_branching([1] * gamma), "tree_rrs", bonus=bonus)
    batch = batch_tree_expected(chain, T, 1, gamma=gamma, bonus=bonus)
    for other in (tree, batch):
        for name in (*COUNTERS, *ARRAYS):
            np.testing.assert_allclose(getattr(other, name), getattr(path, name), atol=1e-12, err_msg=name)
        assert other.gamma == other.max_depth == gamma and other.horizon == T and other.bonus is bonus
    for res in (path, tree, batch):
        assert abs(res.accepted + res.rejections + res.bonus_tokens - T) < 1e-12  # one token per position
        assert abs(res.accepted_counts.sum() - res.target_calls) < 1e-12


@pytest.mark.parametrize("chain", list(_chains()), ids=repr)
def test_time_under_a_latency_curve_agrees_with_the_policy_round_recursion(chain):
    T, gamma = 8, 3
    cost = Cost(0.15, target_call=lambda k: 1.0 + 0.1 * k)
    policy = evaluate_policy(chain, FixedGamma(gamma), T, cost, method="rounds")
    path = chain.protocol(T, gamma)
    assert abs(path.time(cost) - policy.time()) < 1e-12
    assert abs(path.speedup(cost) - policy.speedup()) < 1e-12
    assert abs(path.speedup(0.15) - T / (path.target_calls + 0.15 * path.draft_tokens)) < 1e-12
    assert path.time_per_token(cost) == path.time(cost) / T


def test_tree_and_batch_costs_count_every_drafted_token():
    chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])  # always accepted
    cost = Cost(0.5, target_call=lambda k: k)  # a call costs its drafted tokens
    # 2x1 tree (4 nodes, depth 2), T = 10: rounds at 0, 3, 6 draft 4 nodes, at 9 one node (depth 1)
    tree = tree_protocol(chain, 10, DraftTree.from_branching([2, 1]), "tree_rrs")
    assert (tree.target_calls, tree.draft_tokens) == (4.0, 14.0)
    assert tree.time(cost) == 0.5 * 14 + 14 and tree.speedup(0.0) == 2.5
    batch = batch_tree_expected(chain, 10, 3, gamma=4, bonus=True)  # rounds at 0, 5: 12 drafts each
    assert (batch.target_calls, batch.draft_tokens, batch.time(0.25)) == (2.0, 24.0, 8.0)
    limit = batch_tree_expected(chain, 10, np.inf, gamma=4, bonus=True)
    assert limit.draft_tokens == np.inf and limit.time(0.0) == 2.0 and limit.speedup(0.1) == 0.0
    with pytest.raises(ValueError, match="cost: a target-call time"):
        limit.time(cost)


def test_every_exact_result_shares_the_vocabulary_and_the_summary_shape():
    chain = st.DecodingChain.random(3, concentration=0.7, rng=1)
    results = [
        chain.protocol(8, 2),
        tree_protocol(chain, 8, DraftTree.from_branching([2, 1]), "tree_rrs_wo"),
        batch_tree_expected(chain, 8, 2, gamma=2, bonus=True),
        evaluate_policy(chain, FixedGamma(2), 8, 0.1),
    ]
    types = (ProtocolResult, TreeProtocolResult, BatchTreeResult, PolicyValue)
    counters = ["target_calls", "rejections", "draft_tokens", "accepted"]
    for res, kind in zip(results, types):
        assert isinstance(res, kind) and isinstance(res, ExactResult)
        s = res.summary()
        costed = ["target_time", "time"] if kind is PolicyValue else []  # computed under a cost
        assert list(s) == [*counters, *costed, "tokens_per_call"]
        assert all(s[k] == {"mean": getattr(res, k), "se": 0.0} for k in (*counters, "tokens_per_call"))
        if costed:
            assert s["time"]["mean"] == res.time() and s["target_time"]["mean"] == res.target_time
        assert res.speedup(0.1) == 8 / res.time(0.1)
    for res in results[:3]:
        with pytest.raises(ValueError, match="cost: required"):
            res.speedup()
    # the same generation (a path of 2 under token verification) read by the four engines
    np.testing.assert_allclose(
        [results[0].summary()[k]["mean"] for k in ("target_calls", "rejections", "accepted")],
        [results[3].summary()[k]["mean"] for k in ("target_calls", "rejections", "accepted")],
        atol=1e-12,
    )


# ------------------------------------------------------------ one entry point
def test_chain_protocol_takes_every_round_kind_and_calls_its_engine():
    from spectheory.stopping import ConfidenceThreshold, PolicyRound
    from spectheory.trees import BatchRound, TreeRound

    chain = st.DecodingChain.random(3, concentration=0.7, rng=3)
    T, tree = 8, DraftTree.from_branching([2, 1])
    conf = ConfidenceThreshold(0.5, max_depth=3)
    cases = [
        (3, chain.protocol(T, gamma=3)),
        (st.PathRound(3, "block"), chain.protocol(T, 3, verifier="block")),
        (tree, tree_protocol(chain, T, tree, "tree_rrs")),
        (TreeRound(tree, "traversal"), tree_protocol(chain, T, tree, "traversal")),
        (conf, evaluate_policy(chain, conf, T, 0.1)),
        (PolicyRound(conf), evaluate_policy(chain, conf, T, 0.1)),
        (BatchRound(2, 3, reading="tree"), batch_tree_expected(chain, T, 2, gamma=3, bonus=True)),
        (BatchRound(2, 3), tree_protocol(chain, T, DraftTree.paths(2, 3), "tree_rrs")),
    ]
    for rnd, want in cases:
        got = chain.protocol(T, rnd, cost=0.1)
        assert type(got) is type(want), rnd
        for name in COUNTERS:
            assert abs(getattr(got, name) - getattr(want, name)) < 1e-12, (rnd, name)
        assert got.speedup() == got.speedup(0.1)  # the cost given is the default
    assert chain.protocol(T, 3) is chain.protocol(T, gamma=3, verifier="token")  # cached
    assert chain.protocol(T, tree=tree, verifier="tree_rrs_wo").rejections == pytest.approx(
        tree_protocol(chain, T, tree, "tree_rrs_wo").rejections, abs=1e-12
    )
    assert chain.protocol(T, policy=conf, cost=0.1).time() == evaluate_policy(chain, conf, T, 0.1).time()
    assert chain.protocol(T, tree, method="enumerate").target_calls == pytest.approx(
        chain.protocol(T, tree).target_calls, abs=1e-12
    )


def test_chain_protocol_refuses_ambiguous_or_unknown_rounds():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="exactly one of round, gamma, tree, policy"):
        chain.protocol(8)
    with pytest.raises(ValueError, match="exactly one"):
        chain.protocol(8, 2, tree=DraftTree.from_branching([2]))
    with pytest.raises(ValueError, match="round"):
        chain.protocol(8, "two")
    with pytest.raises(ValueError, match="options"):
        chain.protocol(8, 2, method="enumerate")

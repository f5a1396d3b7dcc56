"""One jump kernel per round kind; the dynamic programmes and jump matrices derived from it."""

import numpy as np
import pytest

from spectheory.kinds.policy.outcome_kernels import jump_kernel, outcome_dp, policy_outcomes
from spectheory.stopping import ConfidenceThreshold, FixedGamma, HFSchedule
from spectheory.stopping.along_paths import policy_round_dp
from spectheory.trees import DraftTree
from spectheory.tuning.cost_rounds import rounds_law
from spectheory.validation.predict import round_dp
from spectheory.validation.round_kernels import path_outcomes, policy_kernel, tree_outcomes
from spectheory.validation.tree_decoding import by_depth, tree_round_dp
from spectheory.validation.tree_rounds import emission_dp

RNG = np.random.default_rng(11)
REJECT = RNG.uniform(0, 0.8, (5, 9))
TOP = RNG.uniform(0, 1, REJECT.shape)


def _path_reference(r, gamma, bonus, caps=None):
    """E[calls], E[rejections], E[rounds accepting j] of one path by the textbook recursion
    (``caps``: the draft length of a round from each start)."""
    T = len(r)
    memo = {}

    def after(n):  # expected (calls, rejections, counts) from start n
        if n >= T:
            return np.zeros(2 + gamma + 1)
        if n in memo:
            return memo[n]
        k = min(gamma, T - n) if caps is None else int(caps[n])
        surv, out = 1.0, np.zeros(2 + gamma + 1)
        out[0] = 1.0
        for j in range(k):
            p = surv * r[n + j]
            out += p * (after(n + j + 1) + np.eye(2 + gamma + 1)[1] + np.eye(2 + gamma + 1)[2 + j])
            surv -= p
        nxt = n + k + (1 if bonus and n + k < T else 0)
        out += surv * (after(nxt) + np.eye(2 + gamma + 1)[2 + k])
        memo[n] = out
        return out

    return after(0)


@pytest.mark.parametrize("gamma, bonus", [(1, True), (3, True), (3, False), (12, True)])
def test_the_path_dp_of_the_kernel_is_the_recursion(gamma, bonus):
    dp = round_dp(REJECT, gamma, bonus)
    for i, r in enumerate(REJECT):
        ref = _path_reference(r, gamma, bonus)
        assert dp["target_calls"][i] == pytest.approx(ref[0], abs=1e-12)
        assert dp["rejections"][i] == pytest.approx(ref[1], abs=1e-12)
        np.testing.assert_allclose(dp["counts"][i], ref[2:], atol=1e-12)


@pytest.mark.parametrize("gamma", [1, 3, 12])
def test_the_capped_path_dp_is_the_recursion_with_the_caps(gamma):
    """A draft that caps its proposals (prompt lookup): k = caps[n] per round start, 0 = a plain
    target step (one token, no check); draft tokens = the expected sum of k over the rounds."""
    N, T = REJECT.shape
    full = np.minimum(gamma, T - np.arange(T))
    caps = RNG.integers(0, full + 1, (N, T))
    caps[0] = 0  # every round a plain step: T calls, nothing drafted
    dp = round_dp(REJECT, gamma, True, caps)
    assert dp["target_calls"][0] == T and dp["draft_tokens"][0] == 0 and dp["rejections"][0] == 0
    for i, r in enumerate(REJECT):
        ref = _path_reference(r, gamma, True, caps[i])
        assert dp["target_calls"][i] == pytest.approx(ref[0], abs=1e-12)
        assert dp["rejections"][i] == pytest.approx(ref[1], abs=1e-12)
        np.testing.assert_allclose(dp["counts"][i], ref[2:], atol=1e-12)
    uncapped = round_dp(REJECT, gamma, True, np.broadcast_to(full, (N, T)))
    for key in ("target_calls", "rejections", "draft_tokens", "counts"):
        np.testing.assert_allclose(uncapped[key], round_dp(REJECT, gamma, True)[key], atol=1e-12)
    with pytest.raises(ValueError, match="caps"):
        round_dp(REJECT, gamma, True, caps + 1)


@pytest.mark.parametrize("bonus", [True, False])
def test_the_jump_kernel_moves_all_mass_forward_and_counts_the_same_rounds(bonus):
    O = path_outcomes(REJECT, 3)
    J = jump_kernel(O, bonus)
    np.testing.assert_allclose(J.sum((3, 4)), 1.0, atol=1e-12)
    N, T = REJECT.shape
    assert not any(J[:, n, :, : n + 1].any() for n in range(T))  # never back to or before n
    law, visits = rounds_law(J)
    dp = outcome_dp(O, bonus)
    np.testing.assert_allclose(law @ np.arange(T + 1), dp["target_calls"], atol=1e-12)
    np.testing.assert_allclose(visits, dp["visits"], atol=1e-12)


@pytest.mark.parametrize(
    "policy, gamma",
    [(FixedGamma(3), None), (ConfidenceThreshold(0.5, max_depth=5), None), (HFSchedule(2, max_depth=6), 4)],
)
@pytest.mark.parametrize("bonus", [True, False])
def test_the_policy_kernel_law_counts_the_rounds_of_the_policy_dp(policy, gamma, bonus):
    """The law of the number of rounds of the policy's jump kernel has the mean of its forward
    pass, stopping.along_paths.policy_round_dp (= outcome_dp of policy_outcomes)."""
    want = policy_round_dp(REJECT, policy, top=TOP, gamma=gamma, bonus=bonus)
    O, moves, m0 = policy_outcomes({"reject": REJECT, "top": TOP}, policy, gamma)
    np.testing.assert_allclose(O.sum((1, 2)), 1.0, atol=1e-12)  # each round ends one way
    J, m = policy_kernel({"reject": REJECT, "top": TOP}, policy, gamma, bonus)
    np.testing.assert_allclose(J, jump_kernel(O, bonus, moves), atol=0)
    law, visits = rounds_law(J, m)
    np.testing.assert_allclose(law @ np.arange(law.shape[1]), want["target_calls"], atol=1e-12)
    np.testing.assert_allclose(visits, want["visits"], atol=1e-12)


def test_tree_dp_and_emission_dp_are_the_tree_kernel_dp():
    tree = DraftTree.from_branching([2, 1])
    N, T = REJECT.shape
    a = RNG.uniform(0, 0.5, (2, N, T))
    res = 1 - a.sum(0)
    tables = {2: by_depth(a, res, tree.max_depth), 1: by_depth((1 - REJECT)[None], REJECT, tree.max_depth)}
    O = tree_outcomes(tree, tables, T)
    np.testing.assert_allclose(O.sum((1, 2)), 1.0, atol=1e-12)  # each round ends one way
    dp = tree_round_dp(tree, tables, T)
    w = O.sum(2)[..., 0].transpose(2, 0, 1)  # every tree round emits: w(n, j) = P(accept j)
    np.testing.assert_allclose(emission_dp(w, T), dp["target_calls"], atol=1e-12)
    # a single-path tree is a path round of its depth
    path = DraftTree.from_branching([1, 1, 1])
    one = {1: by_depth((1 - REJECT)[None], REJECT, 3)}
    np.testing.assert_allclose(
        tree_round_dp(path, one, T)["target_calls"], round_dp(REJECT, 3, True)["target_calls"], atol=1e-12
    )

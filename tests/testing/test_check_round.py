"""``spectheory.testing.check_round``: the conformance kit on the round objects ``st.simulate``
and the decoder take. Small ``n_samples`` keep each test to a few seconds."""

import numpy as np
import pytest

import spectheory as st
from spectheory.rounds import UnsupportedRoundError
from spectheory.stopping import FixedGamma, PolicyRound
from spectheory.testing import Report, check_round
from spectheory.testing.rounds import KIT
from spectheory.testing.trees import TreeReport
from spectheory.trees import BatchRound, DraftTree, TreeRound
from spectheory.verifiers import TokenVerifier


class AcceptAll(TokenVerifier):
    """Broken: accepts every draft, then samples the target (outputs follow the draft's law)."""

    name = "accept_all_test"
    lossless = False

    def _rule(self, target_laws, draft_laws, draft_tokens, k, u_accept, u_final):
        R = draft_tokens.shape[0]
        cdf = np.cumsum(target_laws[np.arange(R), k], axis=1)
        y = np.minimum((cdf < u_final[:, None] * cdf[:, -1:]).sum(axis=1), target_laws.shape[2] - 1)
        return k.astype(np.int64), y.astype(np.int64)


@pytest.mark.parametrize("verifier", ["token", "block"])
def test_path_round_passes(verifier):
    rep = check_round(st.PathRound(2, verifier), n_samples=2000, rng=0, efficiency=False)
    assert isinstance(rep, Report) and rep.passed


def test_broken_path_verifier_fails():
    rep = check_round(st.PathRound(2, AcceptAll()), n_samples=2000, rng=0, efficiency=False)
    assert not rep.passed


def test_policy_round_checks_token_verification():
    rep = check_round(PolicyRound(FixedGamma(3)), n_samples=2000, rng=1, efficiency=False)
    assert rep.passed


def test_tree_round_drafts_its_own_tree():
    tree = DraftTree.from_branching([2, 1])
    rep = check_round(TreeRound(tree, "tree_rrs_wo"), n_samples=2000, rng=0)
    assert isinstance(rep, TreeReport) and rep.passed
    assert all(repr(tree) in row["instance"] for row in rep.rows)


def test_batch_round_first_token_passes():
    assert check_round(BatchRound(2, 2), n_samples=2000, rng=0).passed


@pytest.mark.parametrize(
    "bad, options",
    [(BatchRound(2, 2, reading="tree"), {}), (BatchRound(2), {}), (st.PathRound(2), {"gammas": (1,)})],
)
def test_bad_rounds_raise_naming_round(bad, options):
    with pytest.raises(ValueError, match="round"):
        check_round(bad, **options)


@pytest.mark.parametrize(
    "rnd, why",
    [
        (BatchRound(2, 2, reading="tree"), "the tree kit checks node-local rules and GLS"),
        (BatchRound(3), "no finite draft length"),
    ],
)
def test_rounds_the_kit_cannot_check_say_why(rnd, why):
    with pytest.raises(UnsupportedRoundError, match=rf"conformance kit .*cannot run .*\(.*{why}"):
        check_round(rnd)


def test_the_kit_visitor_hands_a_round_the_kit_chains():
    """A round's check_plan drafts its own tree on every distinct chain of the tree kit."""
    names = [name for name, _ in KIT.chains()]
    assert names == list(dict.fromkeys(n.split(",")[0] for n, _, _ in KIT.tree_instances()))
    rep = check_round(BatchRound(2, 1), n_samples=500, rng=0)
    assert [row["instance"].split(",")[0] for row in rep.rows] == names

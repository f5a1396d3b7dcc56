"""``spectheory.decoder.generate``: the real decoder takes the round object ``st.simulate`` takes,
and plays it token for token as the loop it dispatches to (same seed, same output)."""

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

import spectheory as st  # noqa: E402
from spectheory.decoder import generate, speculative_generate, tree_generate  # noqa: E402
from spectheory.rounds import Round, UnsupportedRoundError  # noqa: E402
from spectheory.stopping import ConfidenceThreshold, PolicyRound  # noqa: E402
from spectheory.testing import check_round  # noqa: E402
from spectheory.trees import BatchRound, DraftTree, TreeRound  # noqa: E402

PROMPTS = [[1, 2, 3], [4]]
N_NEW = 10


@pytest.fixture(scope="module")
def pair():
    return gpt(0, vocab=8), gpt(1, vocab=8)


def same(a, b):
    assert len(a.tokens) == len(b.tokens)
    for x, y in zip(a.tokens, b.tokens):
        np.testing.assert_array_equal(np.asarray(x), np.asarray(y))
    np.testing.assert_array_equal(a.stats.target_calls, b.stats.target_calls)
    assert a.stats.batch_target_calls == b.stats.batch_target_calls


@pytest.mark.parametrize("verifier", ["token", "block"])
def test_path_round_equals_speculative_generate(pair, verifier):
    t, d = pair
    got = generate(t, d, PROMPTS, N_NEW, st.PathRound(3, verifier), seed=5, temperature=0.8)
    ref = speculative_generate(t, d, PROMPTS, N_NEW, 3, verifier=verifier, seed=5, temperature=0.8)
    same(got, ref)


def test_int_shorthand_is_a_token_path_round(pair):
    t, d = pair
    same(generate(t, d, PROMPTS, N_NEW, 2, seed=2), speculative_generate(t, d, PROMPTS, N_NEW, 2, seed=2))


def test_tree_round_equals_tree_generate(pair):
    t, d = pair
    tree = DraftTree.from_branching([2, 1])
    got = generate(t, d, PROMPTS, N_NEW, TreeRound(tree, "tree_rrs_wo"), seed=7)
    same(got, tree_generate(t, d, PROMPTS, N_NEW, tree, verifier="tree_rrs_wo", seed=7))
    same(generate(t, d, PROMPTS, N_NEW, tree, seed=7), tree_generate(t, d, PROMPTS, N_NEW, tree, seed=7))


def test_batch_round_is_tree_rrs_on_the_path_tree(pair):
    t, d = pair
    got = generate(t, d, PROMPTS, N_NEW, BatchRound(3, 2), seed=4)
    same(got, tree_generate(t, d, PROMPTS, N_NEW, DraftTree.paths(3, 2), verifier="tree_rrs", seed=4))


def test_policy_round_equals_speculative_generate_with_policy(pair):
    t, d = pair
    policy = ConfidenceThreshold(0.5, max_depth=4)
    got = generate(t, d, PROMPTS, N_NEW, PolicyRound(policy), seed=3)
    same(got, speculative_generate(t, d, PROMPTS, N_NEW, 4, policy=policy, seed=3))


@pytest.mark.parametrize(
    "bad, options",
    [
        (BatchRound(2, 2, reading="tree"), {}),
        (BatchRound(2), {}),
        ("three", {}),
        (st.PathRound(2), {"verifier": "block"}),
        (st.PathRound(2), {"gamma": 3}),
    ],
)
def test_bad_rounds_raise_naming_round(pair, bad, options):
    t, d = pair
    with pytest.raises(ValueError, match="round"):
        generate(t, d, PROMPTS, N_NEW, bad, **options)


class TwoTokens(Round):
    """A round kind the package never imports: a path of two drafts, verified by ``verifier``.

    It reaches the decoder and the kit only through their visitors (``loops.path``,
    ``kit.verifier``), with its own data."""

    def __init__(self, verifier="token"):
        self.verifier = verifier

    name = property(lambda self: f"two_tokens({self.verifier})")
    max_depth = property(lambda self: 2)
    verifier_name = property(lambda self: self.verifier)

    def decode(self, loops, target, draft, prompts, max_new_tokens, options):
        return loops.path(target, draft, prompts, max_new_tokens, 2, verifier=self.verifier, **options)

    def check_plan(self, kit, options):
        return kit.verifier(self.verifier, gammas=(2,), **options)


class DraftsNothing(Round):
    """A round kind with neither ``decode`` nor ``check_plan``."""

    name = property(lambda self: "drafts_nothing")


def test_a_round_kind_defined_in_a_test_file_runs_in_the_decoder_and_the_kit(pair):
    t, d = pair
    rnd = TwoTokens("block")
    assert rnd.tags().decoder and rnd.tags().kit and not rnd.tags().exact
    got = generate(t, d, PROMPTS, N_NEW, rnd, seed=6, temperature=0.9)
    same(got, speculative_generate(t, d, PROMPTS, N_NEW, 2, verifier="block", seed=6, temperature=0.9))
    rep = check_round(rnd, n_samples=2000, rng=0, efficiency=False)
    assert rep.passed and "block" in rep.verifier


def test_a_round_without_decode_is_refused_naming_it(pair):
    t, d = pair
    with pytest.raises(
        UnsupportedRoundError, match=r"cannot run drafts_nothing \(DraftsNothing does not define decode\)"
    ):
        generate(t, d, PROMPTS, N_NEW, DraftsNothing())
    with pytest.raises(UnsupportedRoundError, match="DraftsNothing does not define check_plan"):
        check_round(DraftsNothing())


@pytest.mark.parametrize(
    "rnd, why",
    [
        (BatchRound(2, 2, reading="tree"), "the tree reading has no decoder loop"),
        (BatchRound(2, reading="gls"), "no finite draft length"),
    ],
)
def test_batch_rounds_the_decoder_cannot_run_are_refused_with_their_reason(pair, rnd, why):
    t, d = pair
    assert not rnd.tags().decoder and rnd.tags().monte_carlo
    with pytest.raises(
        UnsupportedRoundError, match=rf"real decoder .*cannot run {re.escape(rnd.name)} \(.*{why}"
    ):
        generate(t, d, PROMPTS, N_NEW, rnd)


@pytest.mark.parametrize(
    "verifier, why",
    [("argmax_onehot", "drafts by argmax"), ("hsd_naive", "calls the target more than once per round")],
)
def test_path_rounds_whose_verifier_the_decoder_cannot_run_are_refused(pair, verifier, why):
    t, d = pair
    rnd = st.PathRound(2, verifier)
    assert not rnd.tags().decoder and rnd.tags().monte_carlo
    with pytest.raises(UnsupportedRoundError, match=why):
        generate(t, d, PROMPTS, N_NEW, rnd)

"""``PolicyRound.decode`` and ``PolicyRound.check_plan`` against the real decoder's path loop and
the real kit: the round hands them its ``max_depth``, verifier and policy (any verifier), both
through the engines' visitors called directly and through ``spectheory.decoder.generate`` and
``spectheory.testing.check_round``."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

from spectheory.decoder import speculative_generate  # noqa: E402
from spectheory.decoder.dispatch import LOOPS  # noqa: E402
from spectheory.laws.sampling import sample_categorical  # noqa: E402
from spectheory.stopping import ConfidenceThreshold, FixedGamma, HFSchedule, PolicyRound  # noqa: E402
from spectheory.testing.rounds import KIT  # noqa: E402
from spectheory.verifiers import Verifier  # noqa: E402

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
    np.testing.assert_array_equal(a.stats.draft_tokens, b.stats.draft_tokens)


@pytest.mark.parametrize("verifier", ["token", "block", "point_mass"])
def test_decode_is_the_path_loop_with_the_round_s_verifier_and_policy(pair, verifier):
    t, d = pair
    policy = ConfidenceThreshold(0.5, max_depth=4)
    got = PolicyRound(policy, verifier).decode(LOOPS, t, d, PROMPTS, N_NEW, {"seed": 3, "temperature": 0.8})
    ref = speculative_generate(
        t, d, PROMPTS, N_NEW, 4, verifier=verifier, policy=policy, seed=3, temperature=0.8
    )
    same(got, ref)


def test_decode_with_a_memory_policy_drafts_at_most_max_depth(pair):
    t, d = pair
    got = PolicyRound(HFSchedule(2, max_depth=3), "block").decode(LOOPS, t, d, PROMPTS, N_NEW, {"seed": 1})
    assert all(len(x) == N_NEW for x in got.tokens)
    assert np.all(np.asarray(got.stats.draft_tokens) <= 3 * np.asarray(got.stats.target_calls))


@pytest.mark.parametrize("verifier", ["token", "point_mass"])
def test_check_plan_runs_the_kit_on_the_round_s_verifier(verifier):
    rep = PolicyRound(FixedGamma(2), verifier).check_plan(
        KIT, {"n_samples": 2000, "rng": 1, "efficiency": False}
    )
    assert rep.passed, rep


class _AcceptAll(Verifier):
    """Broken, though it claims to be lossless: keeps every draft, then samples the target."""

    name = "accept_all_policy_test"
    lossless = True

    def _rule(self, t, d, x, k, u_accept, u_final):
        rows = np.arange(k.shape[0])
        return k.copy(), sample_categorical(t[rows, k], u_final)


def test_check_plan_checks_the_round_s_own_verifier():
    rep = PolicyRound(FixedGamma(2), _AcceptAll()).check_plan(
        KIT, {"n_samples": 2000, "rng": 1, "efficiency": False}
    )
    assert not rep.passed


# ------------------------------------------------------------ through the engines' own visitors
@pytest.mark.parametrize("verifier", ["token", "block", "point_mass"])
def test_generate_plays_the_policy_round_with_its_verifier(pair, verifier):
    from spectheory.decoder import generate

    t, d = pair
    policy = ConfidenceThreshold(0.5, max_depth=4)
    got = generate(t, d, PROMPTS, N_NEW, PolicyRound(policy, verifier), seed=3, temperature=0.8)
    ref = speculative_generate(
        t, d, PROMPTS, N_NEW, 4, verifier=verifier, policy=policy, seed=3, temperature=0.8
    )
    same(got, ref)
    if verifier == "token":  # the shorthand is the token round
        same(generate(t, d, PROMPTS, N_NEW, policy, seed=3, temperature=0.8), ref)


def test_generate_refuses_what_the_policy_round_declares(pair):
    from spectheory.decoder import generate
    from spectheory.rounds import UnsupportedRoundError

    t, d = pair
    with pytest.raises(UnsupportedRoundError, match="greedily"):
        generate(t, d, PROMPTS, N_NEW, PolicyRound(FixedGamma(2), "argmax_onehot"), seed=0)


def test_check_round_checks_the_policy_round_s_verifier():
    from spectheory.testing import check_round

    opts = {"n_samples": 2000, "rng": 1, "efficiency": False}
    assert check_round(PolicyRound(FixedGamma(2), "point_mass"), **opts).passed
    assert not check_round(PolicyRound(FixedGamma(2), _AcceptAll()), **opts).passed

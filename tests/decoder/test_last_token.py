"""``speculative_generate(..., last_token="target")``: HF's horizon, ``k = min(gamma, r - 1)``.

The claims of ``docs/protocol.md`` ("The last token: HF's horizon"), each against an independent
method: at greedy decoding the same tokens and target calls as the default with one draft token
fewer per call; at ``T > 0`` the target's law of the first two tokens (chi-square) and the exact
engine's expected target calls (5 standard errors, fixed seeds), while the drafted tokens fall
below the exact engine's count of the truncated rule.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _helpers import Z_MAX, assert_within_se  # noqa: E402
from _torch_models import gpt  # noqa: E402

import spectheory as st  # noqa: E402
from spectheory.decoder import speculative_generate  # noqa: E402
from spectheory.montecarlo import pooled_chisquare  # noqa: E402
from spectheory.stopping import ConfidenceThreshold, EntropyRule, FixedGamma, HFSchedule, evaluate_policy  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402

V, B = 4, 1500
CHAIN = st.DecodingChain.random(V, concentration=0.4, similarity=0.5, rng=48)
CHAIN0 = st.DecodingChain(CHAIN.target, CHAIN.draft, initial=np.eye(V)[0])  # prompts end in token 0
TARGET, DRAFT = chain_models(CHAIN)
P_MIN = 1e-6  # chi-square p-value threshold, about 5 standard errors


@pytest.mark.parametrize("T", [9, 10, 12])
@pytest.mark.parametrize("verifier", ["token", "block"])
def test_greedy_same_tokens_and_calls_one_draft_token_fewer(T, verifier):
    # a model as its own draft accepts every draft: rounds of gamma + 1 tokens, then the last
    # round drafts r (default) or r - 1 (last_token="target") tokens; a plain step when r = 1
    target, draft = gpt(3), gpt(3)
    prompts = [[1, 2, 3], [4], [5, 6]]
    kw = dict(temperature=0.0, seed=0, verifier=verifier)
    a = speculative_generate(target, draft, prompts, T, 3, **kw)
    b = speculative_generate(target, draft, prompts, T, 3, last_token="target", **kw)
    assert all(np.array_equal(x, y) for x, y in zip(a.tokens, b.tokens))
    np.testing.assert_array_equal(a.stats.target_calls, b.stats.target_calls)
    assert a.stats.batch_target_calls == b.stats.batch_target_calls
    # one fewer unless the rounds of 4 tokens end exactly at T (then no round drafts to the end)
    np.testing.assert_array_equal(a.stats.draft_tokens - b.stats.draft_tokens, int(T % 4 != 0))
    assert a.stats.rejections.sum() == b.stats.rejections.sum() == 0


@pytest.mark.parametrize("gamma", [1, 2, 4])
def test_first_two_tokens_follow_the_target_law(gamma):
    res = speculative_generate(
        TARGET, DRAFT, [[0]] * 6000, 2, gamma, last_token="target", seed=list(range(6000))
    )
    P = CHAIN.target
    chi = pooled_chisquare(np.array([t[:2] for t in res.tokens]), P[0][:, None] * P)
    assert chi["impossible_samples"] == 0 and chi["pvalue"] > P_MIN
    assert res.stats.rejections.sum() > 1000  # the draft really differs


@pytest.mark.parametrize(
    "policy",
    [
        FixedGamma(3),
        FixedGamma(5),
        ConfidenceThreshold(0.45, max_depth=5),
        EntropyRule(1.1, max_depth=5),
        HFSchedule(2, max_depth=5),
    ],
    ids=repr,
)
def test_target_calls_as_the_exact_truncated_rule_and_fewer_draft_tokens(policy):
    T = 10
    res = speculative_generate(
        TARGET, DRAFT, [[0]] * B, T, gamma=8, policy=policy, seed=321, last_token="target"
    )
    exact = evaluate_policy(CHAIN0, policy, T)
    assert_within_se(*res.stats.mean_se("target_calls"), exact.target_calls, f"{policy} calls")
    drafted, se = res.stats.mean_se("draft_tokens")
    assert drafted < exact.draft_tokens - Z_MAX * se, (policy, drafted, exact.draft_tokens, se)
    assert all(len(t) == T for t in res.tokens)


def test_prompt_lookup_and_one_token_calls():
    # one token to generate: a plain target step, nothing drafted
    res = speculative_generate(TARGET, DRAFT, [[0], [1, 2]], 1, 3, last_token="target", seed=4)
    assert res.stats.draft_tokens.tolist() == [0, 0] and res.stats.target_calls.tolist() == [1, 1]
    assert [len(t) for t in res.tokens] == [1, 1]


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"last_token": "bonus"}, "last_token"),
        ({"last_token": "target", "bonus": False}, "bonus=True"),
        ({"last_token": "target", "check_every": 4}, "check_every"),
    ],
)
def test_bad_last_token_options(kwargs, word):
    with pytest.raises(ValueError, match=word):
        speculative_generate(TARGET, DRAFT, [[0]], 4, 2, **kwargs)

"""A policy's drafted length in the cost predictions: the draft's own continuation, per prompt.

On models that are exactly first-order chains (``chain_models``), the law of the length a
confidence rule drafts from a start depends only on the last token there and is a small exact
recursion over the draft kernel; ``drafted_lengths`` (which drafts with the model) must match it
at 5 binomial SE. ``batch_depth_law`` with one law per prompt must give a batch of one row its
own prompt's depth, not the pooled one.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _helpers import assert_frequencies  # noqa: E402

import spectheory as st  # noqa: E402
from spectheory.stopping import ConfidenceThreshold  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402
from spectheory.tuning.along_path import drafted_length_law, drafted_lengths  # noqa: E402
from spectheory.tuning.cost_predict import sample_target_paths  # noqa: E402
from spectheory.tuning.cost_rounds import batch_depth_law  # noqa: E402
from spectheory.validation.round_kernels import path_kernel  # noqa: E402


def exact_length_law(Q: np.ndarray, start: int, threshold: float, statistic: str, D: int) -> np.ndarray:
    """Law [D + 1] of the drafted length from last token ``start``: token i ~ Q[x_{i-1}], stop after
    token i < D when the statistic of the law it was drawn from (``top``: its largest probability;
    ``token``: the probability of token i) is below ``threshold``."""
    law = np.zeros(D + 1)
    alive = np.zeros(len(Q))
    alive[start] = 1.0  # mass over the last token, not yet stopped
    for i in range(1, D):
        joint = alive[:, None] * Q  # [prev, token i]
        value = np.broadcast_to(Q.max(1, keepdims=True), Q.shape) if statistic == "top" else Q
        stop = value < threshold
        law[i] = joint[stop].sum()
        alive = np.where(stop, 0.0, joint).sum(0)
    law[D] = alive.sum()
    return np.clip(law, 0.0, 1.0)


@pytest.mark.parametrize("statistic, threshold", [("top", 0.53), ("token", 0.45)])
def test_drafted_lengths_match_the_exact_recursion_on_chain_models(statistic, threshold):
    chain = st.DecodingChain.random(4, rng=5, concentration=0.6)
    target, draft = chain_models(chain)
    D, T = 4, 6
    policy = ConfidenceThreshold(threshold, max_depth=D, statistic=statistic)
    sample = sample_target_paths(target, draft, [[0], [2]], T, n_paths=8, rng=1, trees=False, policy_depth=D)
    visits = np.ones((8, T, 1))  # round starts uniform over positions
    rows, n, k, _ = drafted_lengths(sample, policy, visits, per_path=400)
    last = sample.paths[rows, sample.prompt_len + n - 1]
    Q = np.asarray(chain.draft)
    for s in np.unique(last):
        sel = last == s
        freq = np.bincount(k[sel], minlength=D + 1) / sel.sum()
        assert sel.sum() >= 100
        assert_frequencies(
            freq, exact_length_law(Q, int(s), threshold, statistic, D), sel.sum(), f"start {s}"
        )
    capped = drafted_length_law(sample, policy, visits, per_path=50)
    assert capped.shape == (D + 1,) and capped.sum() == pytest.approx(1.0)


def test_batch_depth_law_draws_each_row_from_its_prompts_law():
    J = path_kernel(np.zeros((4, 40)), 3)  # every draft accepted; 4 paths
    groups = np.array([0, 1, 0, 1])
    laws = np.array([[0, 1.0, 0, 0], [0, 0, 0, 1.0]])  # prompt 0 drafts 1 token, prompt 1 drafts 3
    one = batch_depth_law(J, 1, laws, groups=groups, rng=0, rows=64)
    assert one[1] == pytest.approx(1.0)  # a batch-1 call of prompt 0
    other = batch_depth_law(J, 1, laws, groups=groups, rng=0, rows=64, row_prompts=np.array([1]))
    assert other[3] == pytest.approx(1.0)  # a batch-1 call of prompt 1
    pooled = batch_depth_law(J, 1, laws.mean(0), groups=groups, rng=0, rows=256)
    assert pooled[3] > 0.3  # what a pooled law would have said
    two = batch_depth_law(J, 2, laws, groups=groups, rng=0, rows=64)
    assert two[3] > 0.5  # the prompt-1 row sets the batch's depth while it generates
    with pytest.raises(ValueError, match="2 laws need groups"):
        batch_depth_law(J, 1, laws, rng=0)


def test_predicted_drafted_length_is_the_decoders_on_chain_models():
    """Per round at batch 1, the policy's drafted length predicted from target paths (visits weighted
    by each path's rounds) is the real decoder's ``sum(draft tokens) / sum(rounds)`` over 600 rows,
    within 5 SE of the two estimates combined. The chain has an easy region (draft = target,
    confident: 5 tokens a round, all accepted) and a hard one (flat draft: 1 token a round, often
    rejected), entered from the prompt's token with probability 1/2 each and never left, so paths
    differ tenfold in their rounds: weighting every path alike (the old rule) said 2.15 tokens
    against the decoder's 1.74 (10 SE)."""
    from spectheory.decoder import speculative_generate
    from spectheory.stopping import PolicyRound
    from spectheory.tuning.cost_predict import round_law

    P = np.array(
        [
            [0.1, 0.9, 0, 0, 0],
            [0.9, 0.1, 0, 0, 0],
            [0, 0, 0.2, 0.8, 0],
            [0, 0, 0.8, 0.2, 0],
            [0.5, 0, 0.5, 0, 0],
        ]
    )
    Q = P.copy()
    Q[2:4] = [0, 0, 0.5, 0.5, 0]
    target, draft = chain_models(st.DecodingChain(P, Q))
    policy, T, n_paths = ConfidenceThreshold(0.6, max_depth=5), 12, 1500
    sample = sample_target_paths(target, draft, [[4]], T, n_paths=n_paths, rng=2, trees=False, policy_depth=5)
    depth = round_law(sample, PolicyRound(policy))[1]
    k = np.arange(len(depth))
    predicted, predicted_se = depth @ k, np.sqrt((depth @ k**2 - (depth @ k) ** 2) / (4 * n_paths))
    stats = speculative_generate(target, draft, [[4]] * 600, T, gamma=5, policy=policy, seed=3).stats
    drafted, rounds = stats.draft_tokens.astype(float), stats.target_calls.astype(float)
    measured = drafted.sum() / rounds.sum()
    measured_se = (
        np.std(drafted - measured * rounds, ddof=1) / np.sqrt(len(rounds)) / rounds.mean()
    )  # delta method
    assert abs(predicted - measured) <= 5 * np.hypot(measured_se, predicted_se), (predicted, measured)
    assert measured < 1.9  # the chain does separate the two weightings

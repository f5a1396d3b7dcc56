"""GLS (Rowan, Phan & Khisti 2025, Algorithm 2) in the real decoder: lossless, and it accepts
as the exact engine says (``chain.protocol`` of ``BatchRound(M, gamma, reading="gls")``) within 5 SE."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _helpers import assert_within_se  # noqa: E402

import spectheory as st  # noqa: E402
from spectheory.decoder import generate  # noqa: E402
from spectheory.decoder.gls_decode import gls_generate  # noqa: E402
from spectheory.decoder.vocab import TokenTableModel  # noqa: E402
from spectheory.montecarlo import pooled_chisquare  # noqa: E402
from spectheory.trees import BatchRound  # noqa: E402

P_MIN = 1e-6  # chi-square p-value threshold, about 5 SE


def _chain_models(seed, V=3):
    rng = np.random.default_rng(seed)
    P, Q = rng.dirichlet(np.ones(V), size=V), rng.dirichlet(np.ones(V), size=V)
    Q[0, 1] = 0  # a draft zero the races must skip
    Q /= Q.sum(1, keepdims=True)
    with np.errstate(divide="ignore"):
        models = [TokenTableModel(torch.from_numpy(np.log(L)), range(V)) for L in (P, Q)]
    return P, Q, *models


@pytest.mark.parametrize("M,gamma,bonus", [(2, 2, True), (3, 1, False)])
def test_gls_decoder_is_lossless_and_accepts_as_the_exact_engine(M, gamma, bonus):
    P, Q, target, draft = _chain_models(1)
    n, T = 2000, 3
    res = gls_generate(target, draft, [[0]] * n, T, M, gamma, bonus=bonus, seed=7)
    assert all(len(t) == T for t in res.tokens)
    chi = pooled_chisquare(np.array([t[:2] for t in res.tokens]), P[0][:, None] * P)
    assert chi["impossible_samples"] == 0 and chi["pvalue"] > P_MIN
    assert res.stats.rejections.sum() > n // 10
    chain = st.DecodingChain(P, Q, initial=np.eye(3)[0])
    exact = chain.protocol(T, BatchRound(M, gamma, reading="gls"), bonus=bonus)
    for name in ("accepted", "rejections", "target_calls"):
        assert_within_se(*res.stats.mean_se(name), getattr(exact, name), name, atol=1e-6)


def test_generate_dispatches_gls_and_the_guards():
    _, _, target, draft = _chain_models(2)
    a = generate(target, draft, [[0], [1, 2]], 4, BatchRound(2, 2, reading="gls"), seed=3)
    b = gls_generate(target, draft, [[0], [1, 2]], 4, 2, 2, seed=3)
    assert all((x == y).all() for x, y in zip(a.tokens, b.tokens))
    greedy = gls_generate(target, draft, [[0]], 4, 2, 2, temperature=0)
    seq, want = [0], []
    for _ in range(4):
        want.append(int(np.argmax(np.exp(target.logprobs[seq[-1]].numpy()))))
        seq.append(want[-1])
    assert greedy.tokens[0].tolist() == want
    for kwargs, word in (({"M": 0}, "M"), ({"seed": [1, 2]}, "seed"), ({"prompts": []}, "prompts")):
        args = {"prompts": [[0]], "M": 2, **kwargs}
        with pytest.raises(ValueError, match=word):
            gls_generate(target, draft, args.pop("prompts"), 3, gamma=2, **args)


def test_rows_are_batch_invariant_and_the_calls_are_counted_row_by_row():
    """Each row draws from its own generator: alone or in a ragged batch it decodes the same
    tokens; the batch's calls are the rows' calls (the round step is row by row)."""
    _, _, target, draft = _chain_models(3)
    prompts, seeds = [[0, 1], [2], [1, 1, 0]], [11, 12, 13]
    res = gls_generate(target, draft, prompts, 7, M=2, gamma=3, seed=seeds)
    for b, prompt in enumerate(prompts):
        alone = gls_generate(target, draft, [prompt], 7, M=2, gamma=3, seed=[seeds[b]])
        assert np.array_equal(alone.tokens[0], res.tokens[b])
        assert np.array_equal(alone.stats.round_accepted[0], res.stats.round_accepted[b])
    s = res.stats
    assert s.batch_target_calls == s.target_calls.sum() > len(prompts)
    assert s.batch_draft_calls == s.draft_tokens.sum()

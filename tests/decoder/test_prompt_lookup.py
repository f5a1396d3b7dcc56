"""The prompt-lookup draft: its proposals against a brute-force search, losslessness on a chain
(chi-square of the two-token law, ~5 SE), greedy equality with autoregressive decoding, fewer
target calls on copy-style text, and the plain target steps of rounds it does not draft."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as hst  # noqa: E402

import spectheory as st  # noqa: E402
from spectheory.decoder import autoregressive_generate, load_model, speculative_generate  # noqa: E402
from spectheory.decoder.prompt_lookup import (  # noqa: E402
    PromptLookupModel,
    lookup,
    parse_prompt_lookup,
)
from spectheory.montecarlo import pooled_chisquare  # noqa: E402
from spectheory.stopping import HFSchedule  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402

P_MIN = 1e-6  # chi-square p-value threshold, ~5 standard errors


def brute_force(tokens, n_max, n_min=1, num=10):
    """HF's search (PromptLookupCandidateGenerator), written as loops: for n = n_max .. n_min, the
    first earlier window equal to the last n tokens whose continuation exists; HF's candidate
    block tokens[start + n : min(start + n + num, len)] (None without a match)."""
    p = len(tokens) - 1
    for n in range(min(n_max, p + 1), n_min - 1, -1):
        suffix = tokens[p - n + 1 :]
        for start in range(0, p - n + 1):  # window tokens[start : start + n], continuation at start + n <= p
            if tokens[start : start + n] == suffix:
                return tokens[start + n : min(start + n + num, p + 1)]
    return None


@settings(max_examples=200, deadline=None)
@given(
    hst.lists(hst.integers(0, 3), min_size=1, max_size=14),
    hst.integers(1, 4),
    hst.integers(1, 2),
)
def test_lookup_matches_brute_force(tokens, n_max, n_min):
    n_min = min(n_min, n_max)
    h = torch.tensor([tokens + [0] * 3])  # stale entries past the text are never read
    has, tok, _ = lookup(h, torch.tensor([[len(tokens) - 1]]), n_max, n_min)
    want = brute_force(tokens, n_max, n_min, num=4)
    assert bool(has[0, 0]) == (want is not None)
    pl = PromptLookupModel(vocab_size=4, max_ngram_size=n_max, min_ngram_size=n_min, num_pred_tokens=4)
    cap = int(pl.proposal_cap(h, torch.tensor([len(tokens)]), torch.tensor([9]))[0])
    if want is None:
        assert cap == 0
    else:  # the first proposal and the block length are HF's
        assert int(tok[0, 0]) == want[0] and cap == len(want)


def test_law_is_a_point_mass_on_the_proposal_and_uniform_without_match():
    pl = PromptLookupModel(vocab_size=5, max_ngram_size=2)
    probs = pl(torch.tensor([[0, 1, 2, 3, 1]])).softmax(-1)[0]  # after "1" (pos 4): 2
    assert torch.allclose(probs[4], torch.eye(5)[2])
    assert torch.allclose(probs[3], torch.full((5,), 0.2))  # "3" unseen before
    smooth = PromptLookupModel(vocab_size=5, smoothing=0.5)(torch.tensor([[0, 1, 2, 3, 1]])).exp()[0, 4]
    assert torch.allclose(smooth, torch.tensor([0.1, 0.1, 0.6, 0.1, 0.1]))


def test_cached_calls_equal_uncached():
    pl = PromptLookupModel(vocab_size=6, max_ngram_size=3)
    ids = torch.tensor([[1, 2, 3, 1, 2, 4, 1, 2, 3, 5, 1, 2]])
    full = pl(ids)
    cache = pl.new_cache(1, 16)
    parts = [pl(ids[:, a:b], cache=cache, start=torch.tensor([a])) for a, b in ((0, 5), (5, 6), (6, 12))]
    assert torch.equal(torch.cat(parts, 1), full)


# ------------------------------------------------------------------ losslessness on a chain
CHAIN = st.DecodingChain.random(4, concentration=0.5, rng=3)
TARGET, _ = chain_models(CHAIN)
PROMPT = [0, 1, 2, 0, 1]  # ends in "0 1", seen before: the first round drafts
N = 6000


@pytest.mark.parametrize(
    "sampling,prompt",
    [({}, PROMPT), ({"temperature": 0.8, "top_k": 3}, PROMPT), ({}, [3, 2])],
    ids=["T1", "T0.8-top3", "no-match-first"],
)
def test_lossless_two_tokens_on_a_chain(sampling, prompt):
    """The decoded pairs follow the chain's exact two-token law (first-order: K[s, x] K[x, y])."""
    res = speculative_generate(
        TARGET, load_model("prompt-lookup"), [prompt] * N, 2, gamma=4, seed=list(range(N)), **sampling
    )
    law_fn = TARGET.table.double().div(sampling.get("temperature", 1.0))
    if "top_k" in sampling:
        kth = law_fn.topk(sampling["top_k"], -1).values[..., -1:]
        law_fn = law_fn.masked_fill(law_fn < kth, -np.inf)
    kernel = law_fn.softmax(-1).numpy()
    law = kernel[prompt[-1]][:, None] * kernel
    out = pooled_chisquare(np.array([t[:2] for t in res.tokens]), law)
    assert out["impossible_samples"] == 0
    assert out["pvalue"] > P_MIN
    if prompt is PROMPT:  # the draft really drafted and was really rejected at times
        assert res.stats.draft_tokens.sum() > N and res.stats.rejections.sum() > N // 10


# ------------------------------------------------------------------ greedy equality, speed
class Bigram(torch.nn.Module):
    """Logits from the last two tokens (a toy model of the contract that copies a period-7 text)."""

    vocab_size, max_seq_len = 11, 512

    def __init__(self, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.table = torch.nn.Parameter(torch.randn(11, 11, 11, generator=g) * 2)

    def new_cache(self, batch_size, max_len, device=None, dtype=None):
        return torch.zeros(batch_size, max_len, dtype=torch.int64)  # the token history

    def forward(self, ids, cache=None, start=None):
        if cache is None:
            history, pos = ids, torch.arange(ids.shape[1]).expand_as(ids)
        else:
            pos = start[:, None] + torch.arange(ids.shape[1])
            cache.scatter_(1, pos, ids)
            history = cache
        prev = history.gather(1, (pos - 1).clamp(min=0))
        return self.table[prev, ids]


@pytest.mark.parametrize(
    "options",
    [{}, {"eos_token_id": 3}, {"policy": HFSchedule(3, max_depth=8)}, {"check_every": 4}],
    ids=["plain", "eos", "hf-schedule", "fixed-horizon"],
)
def test_greedy_equals_autoregressive(options):
    target = Bigram(1)
    prompts = [[1, 2, 3, 4, 5, 1, 2], [7, 7, 7, 7], [4, 0, 9, 4, 0], [10]]
    ref = autoregressive_generate(target, prompts, 40, temperature=0.0).tokens
    if "eos_token_id" in options:  # cut after the first eos
        ref = [r[: (list(r).index(3) + 1) if 3 in r else None] for r in ref]
    res = speculative_generate(
        target, load_model("prompt-lookup:ngram=3,tokens=6"), prompts, 40, gamma=8, temperature=0.0, **options
    )
    for a, b in zip(ref, res.tokens):
        assert np.array_equal(a, b)
    assert res.stats.draft_tokens.sum() > 0


def test_copy_style_prompt_needs_few_target_calls():
    """A greedy target that repeats its text: the draft proposes whole blocks, so 60 tokens take
    far fewer than 60 target calls (the autoregressive count); a text with no repeats takes 60."""
    target = Bigram(2)
    ref = autoregressive_generate(target, [[1, 2]], 60, temperature=0.0)
    text = [1, 2] + ref.tokens[0].tolist()  # the target's own continuation, seen once
    res = speculative_generate(target, load_model("prompt-lookup"), [text], 60, gamma=10, temperature=0.0)
    assert int(res.stats.target_calls[0]) <= 60 // 5
    assert np.array_equal(
        res.tokens[0], autoregressive_generate(target, [text], 60, temperature=0.0).tokens[0]
    )
    fresh = speculative_generate(target, load_model("prompt-lookup"), [[1]], 1, gamma=10, temperature=0.0)
    assert int(fresh.stats.target_calls[0]) == 1 and int(fresh.stats.draft_tokens[0]) == 0  # a plain step


def test_names_options_and_vocabulary():
    pl = load_model("prompt-lookup:ngram=3,tokens=5,min=2")
    assert (pl.max_ngram_size, pl.num_pred_tokens, pl.min_ngram_size, pl.vocab_size) == (3, 5, 2, None)
    speculative_generate(Bigram(0), pl, [[1, 2, 1]], 3, gamma=4)
    assert pl.vocab_size == 11  # adopted from the target
    speculative_generate(TARGET, pl, [[1, 2, 1]], 3, gamma=4)  # and re-adopted for another one
    assert pl.vocab_size == 4
    with pytest.raises(ValueError, match="options are"):
        parse_prompt_lookup("prompt-lookup:size=3")
    with pytest.raises(ValueError, match="needs a number"):
        parse_prompt_lookup("prompt-lookup:ngram=x")
    with pytest.raises(ValueError, match="exceeds"):
        PromptLookupModel(max_ngram_size=1, min_ngram_size=2)
    with pytest.raises(ValueError, match="unset"):
        PromptLookupModel()(torch.tensor([[1]]))
    with pytest.raises(ValueError, match="mismatched"):
        speculative_generate(Bigram(0), PromptLookupModel(vocab_size=5), [[1]], 2, gamma=2)


def test_without_bonus_every_round_drafts():
    """``bonus=False``: no plain steps (they emit the bonus token), so the cap is not applied."""
    res = speculative_generate(Bigram(0), load_model("prompt-lookup"), [[1, 2, 3]], 12, gamma=3, bonus=False)
    assert len(res.tokens[0]) == 12 and (res.stats.draft_tokens > 0).all()


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_prediction_along_the_runs_own_path_is_its_count(temperature):
    """Given its output path a prompt-lookup run is deterministic (a point-mass proposal is
    accepted iff it is the path's token; the caps follow from the path; where the lookup has no
    match its law is uniform, but no round checks such a position), so the along-path
    prediction (validation.predict.round_dp with validation.path_stats.proposal_caps) evaluated on
    the run's own output equals the run's counts exactly."""
    from spectheory.validation.path_stats import proposal_caps
    from spectheory.validation.predict import path_statistics, round_dp

    target, prompt, gamma = Bigram(2), [1, 2, 3, 4, 5, 1, 2, 3], 4
    pl = load_model("prompt-lookup:tokens=6")
    for seed in range(4):
        res = speculative_generate(target, pl, [prompt], 40, gamma, temperature=temperature, seed=seed)
        path = np.array([prompt + res.tokens[0].tolist()])
        stats = path_statistics(target, pl, path, len(prompt), (temperature, None, None))
        dp = round_dp(stats.reject, gamma, True, proposal_caps(pl, path, len(prompt), gamma))
        s = res.stats
        assert s.draft_tokens.sum() > 0 and s.rejections.sum() > (temperature > 0)
        assert dp["target_calls"][0] == s.target_calls[0]
        assert dp["rejections"][0] == s.rejections[0]
        assert dp["draft_tokens"][0] == s.draft_tokens[0]
        np.testing.assert_array_equal(dp["counts"][0], s.accepted_counts[0])

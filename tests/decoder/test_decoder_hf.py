"""The Hugging Face adapter: tiny random models saved to a temporary folder, never downloaded."""

import contextlib

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from _torch_models import VOCAB, tiny_hf_pair  # noqa: E402

from spectheory.decoder import HFCausalLM, autoregressive_generate, speculative_generate  # noqa: E402
from spectheory.decoder.batching import make_batch, prefill  # noqa: E402


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    return tiny_hf_pair(tmp_path_factory.mktemp("hf"))


PROMPTS = [[1, 2, 3], [7], [40, 41, 42, 43, 44, 45]]


@contextlib.contextmanager
def head_widths(model):
    """Log ``(tokens fed, positions with logits)`` of ``model``'s forwards inside the block."""
    from spectheory.cost.timed import wrap_forward

    widths = []

    def wrap(forward):
        def logged(ids, *args, **kwargs):
            out = forward(ids, *args, **kwargs)
            widths.append((ids.shape[1], out.shape[1]))
            return out

        return logged

    undo = wrap_forward(model, wrap)
    try:
        yield widths
    finally:
        undo()


def test_adapter_contract_cached_equals_uncached(pair):
    for lm in pair:
        assert lm.vocab_size == VOCAB and lm.max_seq_len == 64
        ids = torch.tensor([[5, 6, 7, 8, 9], [1, 2, 3, 4, 5]])
        full = lm(ids)
        cache = lm.new_cache(2, 16)
        a = lm(ids[:, :2], cache=cache, start=torch.tensor([0, 0]))
        lm(torch.tensor([[30], [31]]), cache=cache, start=torch.tensor([2, 2]))  # written, then rolled back
        b = lm(ids[:, 2:], cache=cache, start=torch.tensor([2, 2]))
        torch.testing.assert_close(torch.cat([a, b], 1), full)
        ragged = lm(torch.tensor([[8, 9], [3, 4]]), cache=cache, start=torch.tensor([3, 2]))
        torch.testing.assert_close(ragged[0], full[0, 3:5])
        torch.testing.assert_close(ragged[1], full[1, 2:4])


def test_greedy_speculative_equals_greedy(pair):
    target, draft = pair
    res = speculative_generate(target, draft, PROMPTS, 12, 3, temperature=0)
    auto = autoregressive_generate(target, PROMPTS, 12, temperature=0)
    for b, p in enumerate(PROMPTS):
        ids = list(p)
        with torch.no_grad():
            for _ in range(12):
                ids.append(int(target(torch.tensor([ids]))[0, -1].argmax()))
        assert res.tokens[b].tolist() == ids[len(p) :] == auto.tokens[b].tolist()
    assert res.stats.rejections.sum() > 0  # two unrelated random models disagree


def test_draft_prefill_keeps_the_law_after_the_prompt(pair):
    """A draft that takes ``logits_to_keep`` caches the whole prompt and keeps its law after it:
    the first round's first draft step calls nothing (one draft call fewer per decode, as HF's
    assistant), and the tokens are those of the draft that feeds its last prompt token then."""
    from spectheory.cost import ForwardLog

    target, draft = pair
    runs = {}
    for keeps in (True, False):
        draft.accepts_logits_to_keep = keeps
        try:
            with ForwardLog(draft) as log:
                res = speculative_generate(target, draft, PROMPTS, 10, 3, seed=[3, 4, 5])
        finally:
            draft.accepts_logits_to_keep = True
        runs[keeps] = res, log.calls
    (kept, calls_kept), (fed, calls_fed) = runs[True], runs[False]
    assert all(np.array_equal(x, y) for x, y in zip(kept.tokens, fed.tokens))
    assert kept.stats.batch_draft_calls == fed.stats.batch_draft_calls - 1
    assert len(calls_kept) == len(calls_fed) - 1 == 1 + kept.stats.batch_draft_calls  # + the prefill
    assert calls_kept[0, 1] == max(len(p) for p in PROMPTS)  # the prefill: every prompt token


def test_target_scores_the_prompt_with_the_first_drafts(pair):
    """A target that takes ``logits_to_keep`` is not prefilled: the first round's one call
    scores every prompt and its drafts from position 0, the head on the round's positions only
    (as HF's assisted generation: one target call per round, one fewer per decode than a
    prefill). Same tokens as the prefilled target, ragged prompts and plain steps included."""
    from spectheory.cost import ForwardLog
    from spectheory.decoder import load_model

    target, draft = pair
    lookup = load_model("prompt-lookup:ngram=1,tokens=3")
    lookup.adopt_vocab(VOCAB)
    prompts = [*PROMPTS, [5, 6, 5, 6, 5]]  # prompt lookup finds a match in the last one only
    for d in (draft, lookup):
        runs = {}
        for merged in (True, False):
            target.accepts_logits_to_keep = merged
            try:
                with head_widths(target) as widths, ForwardLog(target) as log:
                    res = speculative_generate(target, d, prompts, 10, 3, seed=[3, 4, 5, 6])
            finally:
                target.accepts_logits_to_keep = True
            runs[merged] = res, log.calls, widths
        (m, calls_m, w_m), (p, calls_p, _) = runs[True], runs[False]
        assert all(np.array_equal(x, y) for x, y in zip(m.tokens, p.tokens))
        assert m.stats.batch_target_calls == p.stats.batch_target_calls
        assert len(calls_m) == m.stats.batch_target_calls == len(calls_p) - 1  # no prefill call
        assert calls_m[0, 2] == 0 and (calls_m[1:, 2] > 0).all()  # the first call starts at 0
        # the window to the longest prompt's drafts; the head from the shortest's last token
        fed, kept = w_m[0]
        assert fed >= max(len(q) for q in prompts) and kept == fed - min(len(q) for q in prompts) + 1
    # one prompt: the prompt and K = 3 drafts fed, the head on the K + 1 round positions only
    with head_widths(target) as widths:
        speculative_generate(target, draft, [PROMPTS[2]], 8, 3, seed=1)
    assert widths[0] == (len(PROMPTS[2]) + 3, 4)


def test_head_runs_only_where_the_logits_are_read(pair):
    """A model that takes ``logits_to_keep`` runs its output head on the last position only
    where the decoder reads no other: a draft round's first step (a two-token window after a
    bonus token), the prefills (the autoregressive decoder's keeps the law after the prompt, a
    tree draft's reads nothing). Same tokens as the full head."""
    target, draft = pair
    with head_widths(draft) as widths:
        runs = {}
        for keeps in (True, False):
            for lm in pair:
                lm.accepts_logits_to_keep = keeps
            try:
                widths.clear()
                spec = [speculative_generate(target, draft, [p], 10, 3, seed=7).tokens[0] for p in PROMPTS]
                widths.clear()  # the draft as its own target: every draft accepted, a bonus token
                spec += [speculative_generate(draft, draft, [p], 10, 3, seed=7).tokens[0] for p in PROMPTS]
                auto = [autoregressive_generate(draft, [p], 6, seed=7).tokens[0] for p in PROMPTS]
                runs[keeps] = spec + auto, list(widths)
            finally:
                for lm in pair:
                    lm.accepts_logits_to_keep = True
        (kept, w_kept), (full, w_full) = runs[True], runs[False]
        assert all(np.array_equal(x, y) for x, y in zip(kept, full))
        assert all(fed == out for fed, out in w_full)  # the full head: logits at every fed position
        # every call of more than one token that no later step reads at each position keeps one
        assert any(fed == 2 and out == 1 for fed, out in w_kept)  # a round's first draft step
        assert any(fed == 6 and out == 1 for fed, out in w_kept)  # the autoregressive prefill
        # the prefill that caches all but the last prompt token (a tree's draft) reads no logits
        batch = make_batch([PROMPTS[2]], 4, {"draft": draft}, torch.device("cpu"))
        widths.clear()
        assert prefill(draft, draft.new_cache(1, 16), batch).tolist() == [5]
        assert widths == [(5, 1)]


def test_sampling_is_seeded_and_batch_invariant(pair):
    target, draft = pair
    full = speculative_generate(target, draft, PROMPTS, 10, 2, seed=[3, 4, 5], top_k=10)
    again = speculative_generate(target, draft, PROMPTS, 10, 2, seed=[3, 4, 5], top_k=10)
    alone = speculative_generate(target, draft, [PROMPTS[2]], 10, 2, seed=[5], top_k=10)
    assert all(np.array_equal(x, y) for x, y in zip(full.tokens, again.tokens))
    assert np.array_equal(alone.tokens[0], full.tokens[2])
    assert all(t.min() >= 0 and t.max() < VOCAB for t in full.tokens)


def test_bad_input(tmp_path, pair):
    with pytest.raises(ValueError, match="local directory"):
        HFCausalLM.from_pretrained(str(tmp_path / "missing"))
    target, _ = pair
    small = transformers.GPT2LMHeadModel(
        transformers.GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=VOCAB + 1)
    )
    with pytest.raises(ValueError, match="vocabulary"):
        speculative_generate(target, HFCausalLM(small), PROMPTS, 4, 2)
    with pytest.raises(ValueError, match="max_seq_len"):
        speculative_generate(target, target, PROMPTS, 60, 2)

"""The Hugging Face path: KV-cached adapter, greedy identity with HF ``generate`` and assisted
generation (random-weight models built here, never downloaded), eos, do_sample, attention_mask,
dtype/device without touching the caller's model."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from spectheory.decoder import HFCausalLM, speculative_generate  # noqa: E402
from spectheory.decoder.hf_generate import hf_speculative_generate, prompts_from_mask  # noqa: E402

VOCAB = 64
NEW = 10


def gpt2(seed, n_layer=1, sharpen=8.0):
    config = transformers.GPT2Config(
        n_layer=n_layer,
        n_embd=32,
        n_head=2,
        vocab_size=VOCAB,
        n_positions=96,
        tie_word_embeddings=False,
        bos_token_id=0,
        eos_token_id=VOCAB - 1,
        pad_token_id=0,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = transformers.GPT2LMHeadModel(config).eval()
        with torch.no_grad():  # sharpen the random laws so that greedy has clear winners
            model.get_output_embeddings().weight.mul_(sharpen)
    return model.double()


def truncated(model, n_layer):
    """The first ``n_layer`` blocks of ``model`` with its head: a draft that partly agrees."""
    import copy

    small = copy.deepcopy(model)
    small.transformer.h = small.transformer.h[:n_layer]
    small.config.n_layer = n_layer
    return small


@pytest.fixture(scope="module")
def models():
    return gpt2(0, n_layer=2), gpt2(1)


@pytest.fixture(scope="module", params=["unrelated", "partial"])
def pair(request, models):
    target, unrelated = models
    return target, unrelated if request.param == "unrelated" else truncated(target, 1)


def prompts(n):
    gen = np.random.default_rng(7)
    return [gen.integers(1, VOCAB - 1, size=length).tolist() for length in range(1, n + 1)]


def hf_greedy(model, prompt, n, **kw):
    ids = torch.tensor([prompt])
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=n,
            do_sample=False,
            pad_token_id=0,
            eos_token_id=VOCAB - 1,
            **kw,
        )
    return out[0, len(prompt) :].tolist()


def upto_eos(tokens):
    tokens = list(tokens)
    return tokens[: tokens.index(VOCAB - 1) + 1] if VOCAB - 1 in tokens else tokens


def check_single_prompts(pair, lengths):
    target, draft = pair
    ps = prompts(40)
    for p in (ps[n - 1] for n in lengths):
        ours = (
            hf_speculative_generate(target, draft, torch.tensor([p]), NEW, 3, do_sample=False)
            .tokens[0]
            .tolist()
        )
        plain = upto_eos(hf_greedy(target, p, NEW))
        assisted = upto_eos(
            hf_greedy(
                target,
                p,
                NEW,
                assistant_model=draft,
                num_assistant_tokens=3,
                num_assistant_tokens_schedule="constant",
            )
        )
        assert ours == plain == assisted, (len(p), ours, plain, assisted)


def test_greedy_equals_hf_generate_and_assisted_single_prompts(pair):
    """Single prompts: spectheory greedy speculative == HF generate == HF assisted generation."""
    check_single_prompts(pair, [1, 2, 7, 16, 40])


@pytest.mark.slow
def test_greedy_equals_hf_generate_and_assisted_every_length(pair):
    """Every prompt length 1..40, one at a time."""
    check_single_prompts(pair, range(1, 41))


def test_greedy_ragged_batch_equals_per_prompt_generate(pair):
    """All 40 prompts in one ragged batch (right-padded input_ids + attention_mask)."""
    target, draft = pair
    ps = prompts(40)
    ids = torch.zeros(len(ps), 40, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for b, p in enumerate(ps):
        ids[b, : len(p)] = torch.tensor(p)
        mask[b, : len(p)] = 1
    res = hf_speculative_generate(target, draft, ids, NEW, 4, attention_mask=mask, do_sample=False)
    for b, p in enumerate(ps):
        assert res.tokens[b].tolist() == upto_eos(hf_greedy(target, p, NEW)), len(p)
    assert res.stats.rejections.sum() > 0  # the drafts disagree sometimes: rollbacks are exercised


def test_kv_cache_rollback_matches_uncached_logits(models):
    lm = HFCausalLM(models[0])
    ids = torch.tensor([[5, 6, 7, 8, 9, 10], [1, 2, 3, 4, 5, 6]])
    full = lm(ids)
    cache = lm.new_cache(2, 32)
    a = lm(ids[:, :2], cache=cache, start=torch.tensor([0, 0]))
    lm(torch.tensor([[30, 31], [32, 33]]), cache=cache, start=torch.tensor([2, 2]))  # drafts, then rejected
    b = lm(ids[:, 2:4], cache=cache, start=torch.tensor([2, 2]))
    torch.testing.assert_close(torch.cat([a, b], 1), full[:, :4])
    c = lm(torch.tensor([[10], [5]]), cache=cache, start=torch.tensor([5, 4]))  # ragged, with a hole in row 0
    torch.testing.assert_close(c[1, 0], full[1, 4])
    assert cache.physical_len <= 8  # rolled-back slots are cropped, not kept forever


def test_eos_stops_a_row_without_bonus(models):
    target, draft = models
    p = prompts(12)[11]
    free = hf_speculative_generate(
        target, draft, torch.tensor([p]), NEW, 4, do_sample=False, eos_token_id=None
    )
    eos = int(free.tokens[0][2])  # make the third greedy token the eos
    first = free.tokens[0].tolist().index(eos)
    res = hf_speculative_generate(
        target, draft, torch.tensor([p, p]), NEW, 4, do_sample=False, eos_token_id=eos
    )
    for row in res.tokens:
        assert row.tolist() == free.tokens[0].tolist()[: first + 1]
    assert int(sum(r.sum() for r in res.stats.round_tokens)) == 2 * (first + 1)  # nothing counted past eos


def test_sampling_is_seeded(models):
    target, draft = models
    ids = torch.tensor([prompts(5)[4]])
    a = hf_speculative_generate(target, draft, ids, NEW, 3, seed=4, eos_token_id=None).tokens[0]
    b = hf_speculative_generate(target, draft, ids, NEW, 3, seed=4, eos_token_id=None).tokens[0]
    c = hf_speculative_generate(target, draft, ids, NEW, 3, seed=5, eos_token_id=None).tokens[0]
    np.testing.assert_array_equal(a, b)
    assert len(a) == NEW and not np.array_equal(a, c)


def test_attention_mask_must_be_padding():
    assert prompts_from_mask(torch.tensor([[0, 3, 4]]), torch.tensor([[0, 1, 1]])) == [[3, 4]]
    with pytest.raises(ValueError, match="not a padding mask"):
        prompts_from_mask(torch.tensor([[1, 3, 4]]), torch.tensor([[1, 0, 1]]))
    with pytest.raises(ValueError, match="does not match"):
        prompts_from_mask(torch.tensor([[1, 3, 4]]), torch.tensor([[1, 1]]))


def test_do_sample_must_be_bool(models):
    with pytest.raises(ValueError, match="do_sample"):
        hf_speculative_generate(*models, torch.tensor([[1, 2]]), 3, do_sample="no")


def test_unwrapped_model_says_wrap_it(models):
    with pytest.raises(ValueError, match="wrap it with"):
        speculative_generate(models[0], HFCausalLM(models[1]), [[1, 2]], 3, 2)


def test_dtype_and_device_never_change_the_callers_model():
    model = gpt2(3).float()
    lm = HFCausalLM(model, dtype="float16", device="cpu")
    assert next(model.parameters()).dtype == torch.float32  # the caller's model is untouched
    assert next(lm.model.parameters()).dtype == torch.float16
    assert HFCausalLM(model).model is model  # without dtype/device: wrapped, not copied
    with pytest.raises(ValueError, match="dtype"):
        HFCausalLM(model, dtype="int8")


def test_string_dtype_in_generate():
    target, draft = HFCausalLM(gpt2(0).float()), HFCausalLM(gpt2(1).float())
    res = speculative_generate(target, draft, [[1, 2, 3]], 4, 2, dtype="float64", seed=0)
    assert len(res.tokens[0]) == 4 and next(target.parameters()).dtype == torch.float64

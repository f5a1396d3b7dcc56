"""Plain autoregressive sampling: the decoder's baseline, with the options and seeding of
:func:`~spectheory.decoder.speculative.speculative_generate` (which re-exports it)."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import torch

from ..verifiers.torch_forms import U_MAX, draw_columns
from .batching import check_common, make_batch, new_tokens, place, prefill, sync
from .rng import PURPOSE_AUTOREG, check_seeds, seed_tensor, uniforms
from .sampling import sampling_law
from .stats import DecodeStats, GenerationResult

if TYPE_CHECKING:
    from .batching import CausalLM, Prompt

__all__ = ["autoregressive_generate"]


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
    ``(seed_b, n, PURPOSE_AUTOREG)``; one model call per token after the prefill.
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
    B, cap = batch.tokens.shape
    seeds = seed_tensor(check_seeds(seed, B), dev)
    times = dict(time_prefill=0.0, time_draft=0.0, time_target=0.0)
    with torch.inference_mode():
        sync(dev)
        t_start = time.perf_counter()
        cache = model.new_cache(B, cap, device=dev, dtype=dt)
        cached = prefill(model, cache, batch)
        sync(dev)
        times["time_prefill"] = time.perf_counter() - t_start
        block = 64  # uniforms hashed 64 tokens at a time: the same values, one hash per block
        # one new token per row after the prefill: the input is the last committed token, the
        # window is 1 wide and nothing is read back
        x = batch.tokens.gather(1, cached[:, None])  # [B, 1]
        for n in range(max_new_tokens):
            if n % block == 0:
                steps = torch.arange(n, min(n + block, max_new_tokens), device=dev)
                u = uniforms(seeds[:, None], steps[None, :], PURPOSE_AUTOREG)  # [B, block]
                u = u.clamp(max=U_MAX)[..., None]  # [B, block, 1], columns for draw_columns
            law = sampling_law(model(x, cache=cache, start=cached)[:, 0], temperature, top_k, top_p)
            x = draw_columns(law, u[:, n % block])  # [B, 1]
            batch.tokens.scatter_(1, batch.seq_len[:, None], x)
            cached, batch.seq_len = batch.seq_len, batch.seq_len + 1
        tokens = new_tokens(batch, max_new_tokens)
        sync(dev)
        times["time_total"] = time.perf_counter() - t_start
        times["time_target"] = times["time_total"] - times["time_prefill"]
    z = np.zeros(B, dtype=np.int64)
    stats = DecodeStats(
        gamma=0,
        bonus=False,
        verifier="none",
        target_calls=z + max_new_tokens,
        draft_tokens=z.copy(),
        rejections=z.copy(),
        round_accepted=[np.zeros(max_new_tokens, np.int64) for _ in range(B)],
        round_tokens=[np.ones(max_new_tokens, np.int64) for _ in range(B)],
        position_checked=np.zeros((B, 0), np.int64),
        position_accepted=np.zeros((B, 0), np.int64),
        batch_target_calls=max_new_tokens,
        time_prefill=times["time_prefill"],
        time_draft=times["time_draft"],
        time_target=times["time_target"],
        time_total=times["time_total"],
    )
    return GenerationResult(tokens, stats)

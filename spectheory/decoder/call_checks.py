"""The checks a model call does on its arguments (``ids``, ``start``, ``positions``, ``attn_mask``).

:func:`check_ids_start` checks a plain or cached call (the interface in
:mod:`spectheory.decoder.model`'s docstring); every model of :mod:`spectheory.decoder` (the GPT,
the n-gram model, the vocabulary adapters) calls it, so that all raise the same errors on the
same bad call. :func:`check_tree_call` checks the GPT's tree-attention call (``positions`` and
``attn_mask`` given).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

if TYPE_CHECKING:
    from .kv_cache import KVCache

__all__ = ["check_ids_start", "check_tree_call"]


def check_ids_start(
    ids: torch.Tensor,
    cache: object,
    start: torch.Tensor | None,
    max_seq_len: int,
    cache_batch: int | None,
    cache_len: int | None,
) -> torch.Tensor | None:
    """Validate a model call; return ``pos [B, L]`` (absolute positions) or None.

    Shared by every model of the package so that all raise the same errors.
    """
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        raise ValueError(f"ids must be a LongTensor [B, L], got {getattr(ids, 'shape', ids)!r}")
    if ids.dtype not in (torch.int64, torch.int32):
        raise ValueError(f"ids must be an integer tensor, got dtype {ids.dtype}")
    B, L = ids.shape
    if L < 1:
        raise ValueError("ids must have at least one token (L >= 1)")
    if cache is None:
        if start is not None:
            raise ValueError("start is only meaningful together with cache")
        if L > max_seq_len:
            raise ValueError(f"ids has {L} tokens, more than max_seq_len={max_seq_len}")
        return None
    if start is None:
        raise ValueError("start (LongTensor [B]) is required when cache is given")
    if cache_len is None:
        raise ValueError("cache_len: required when cache is given (the cache's max_len)")
    start = torch.as_tensor(start, device=ids.device)
    if start.shape != (B,):
        raise ValueError(f"start must have shape [B]=[{B}], got {tuple(start.shape)}")
    if B != cache_batch:
        raise ValueError(f"ids batch {B} does not match cache batch_size {cache_batch}")
    pos = start.long()[:, None] + torch.arange(L, device=ids.device)[None, :]  # [B, L]
    lo, hi = torch.stack((start.min(), pos.max())).tolist()  # one host read for both checks
    if lo < 0:
        raise ValueError(f"start must be >= 0, got min {lo}")
    if hi >= min(cache_len, max_seq_len):
        raise ValueError(f"position {hi} out of range: cache max_len={cache_len}, max_seq_len={max_seq_len}")
    return pos


def check_tree_call(
    ids: torch.Tensor,
    cache: KVCache | None,
    start: torch.Tensor | None,
    positions: torch.Tensor | None,
    attn_mask: torch.Tensor | None,
    max_seq_len: int,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Validate a tree-attention call; return (cache slots ``[B, L]``, position ids ``[B, L]``).

    The cache slots are ``start[b] .. start[b] + L - 1`` (where keys/values are written); the
    position ids are ``positions`` (what the embeddings read).
    """
    if cache is None or positions is None or attn_mask is None:
        raise ValueError(
            "positions and attn_mask: tree attention needs cache, start, positions and attn_mask"
        )
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
        raise ValueError(f"ids must be a LongTensor [B, L], got {getattr(ids, 'shape', ids)!r}")
    B, L = ids.shape
    if B != cache.batch_size:
        raise ValueError(f"ids batch {B} does not match cache batch_size {cache.batch_size}")
    start = torch.as_tensor(start, device=ids.device).long()
    slots = start[:, None] + torch.arange(L, device=ids.device)[None, :]
    if positions.shape != (B, L):
        raise ValueError(f"positions: expected shape {(B, L)}, got {tuple(positions.shape)}")
    if attn_mask.dim() != 3 or attn_mask.shape[:2] != (B, L) or attn_mask.dtype != torch.bool:
        raise ValueError(f"attn_mask: expected a bool tensor [B, L, T] with B, L = {B}, {L}")
    if int(start.min()) < 0 or int(slots.max()) >= min(cache.max_len, attn_mask.shape[2]):
        raise ValueError(
            f"start: slots out of range (cache max_len={cache.max_len}, mask width {attn_mask.shape[2]})"
        )
    if int(positions.min()) < 0 or int(positions.max()) >= max_seq_len:
        raise ValueError(f"positions: must lie in [0, {max_seq_len})")
    return slots, positions.long()

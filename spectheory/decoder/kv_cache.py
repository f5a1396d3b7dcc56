"""The GPT's KV cache: per-layer keys and values written in place, with no length kept.

Which entries are valid is decided per call by ``start`` (:mod:`spectheory.decoder.model`'s
docstring: query ``i`` of sequence ``b`` sees the slots ``< start[b] + i + 1``), so rolling back
after a rejection is calling again with a smaller ``start``. Shapes: ``k, v: [n_layer, B, T, H,
D]`` (B = batch, T = cache length, H = heads, D = head dim). Build one with
:meth:`spectheory.decoder.model.GPT.new_cache`.
"""

from __future__ import annotations

import torch

__all__ = ["KVCache"]


class KVCache:
    """Per-layer keys and values, ``k[l], v[l]: [B, T, H, D]``, written in place.

    The cache keeps no length: which entries are valid is decided per call by
    ``start`` (see the module docstring), so a rollback needs no explicit truncation.
    """

    def __init__(
        self,
        n_layer: int,
        batch_size: int,
        max_len: int,
        n_head: int,
        head_dim: int,
        device: str | torch.device | None,
        dtype: torch.dtype,
    ) -> None:
        shape = (n_layer, batch_size, max_len, n_head, head_dim)
        self.k = torch.zeros(shape, device=device, dtype=dtype)  # [n_layer, B, T, H, D]
        self.v = torch.zeros(shape, device=device, dtype=dtype)  # [n_layer, B, T, H, D]
        self.batch_size = batch_size
        self.max_len = max_len

    def __repr__(self):
        return (
            f"KVCache(batch_size={self.batch_size}, max_len={self.max_len}, "
            f"dtype={self.k.dtype}, device={self.k.device})"
        )

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

    def keep_path(self, root_slot: torch.Tensor, path_offsets: torch.Tensor, n_keep: torch.Tensor) -> None:
        """Keep a draft tree's accepted path: copy slot ``root + path_offsets[b, d-1]`` to slot
        ``root + d`` for ``d = 1 .. n_keep[b]`` (the rest of the tree becomes stale).

        Safe in place: in level order a node of depth ``d`` has offset ``>= d``, so a copy never
        overwrites a source still to be read (sources are read before any write, all at once).
        """
        D = path_offsets.shape[1]
        d = torch.arange(1, D + 1, device=root_slot.device)[None, :]
        keep = d <= n_keep[:, None]  # [B, D]
        src = root_slot[:, None] + torch.where(keep, path_offsets, d)  # unchanged where not kept
        dst = root_slot[:, None] + d
        src = src.clamp(max=self.max_len - 1)
        dst = dst.clamp(max=self.max_len - 1)
        rows = torch.arange(root_slot.shape[0], device=root_slot.device)[:, None]
        for store in (self.k, self.v):  # [n_layer, B, T, H, Dh]
            moved = store[:, rows, src]  # [n_layer, B, D, H, Dh]
            store[:, rows, dst] = torch.where(keep[None, :, :, None, None], moved, store[:, rows, dst])

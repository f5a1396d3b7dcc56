"""An order-k byte n-gram model from counts: a torch module that is exactly a Markov chain.

The counting, the kernel and the state encoding are numpy and live in
:class:`spectheory.chain.ngram.NGramChain` (importable without torch; the law and the state
encoding are documented there). This module adds the torch forward pass: it implements the
shared model interface of ``spectheory.decoder.model``: ``model(ids)`` gives logits
``[B, L, V]`` (log-probabilities), and ``model(ids, cache=..., start=...)`` uses a cache that
only stores the token history, so rollback is free.

Examples
--------
>>> import numpy as np, torch
>>> model = NGramModel.from_bytes(np.frombuffer(b"abababac", np.uint8), order=2, alpha=1.0)
>>> kernel = model.kernel()                    # [256, 256], rows are laws
>>> float(kernel[ord("a"), ord("b")]) == (3 + 1.0) / (4 + 256 * 1.0)
True
>>> logits = model(torch.tensor([[97, 98]]))   # [1, 2, 256]
>>> bool(torch.allclose(logits[0, 0].double().exp(), torch.from_numpy(kernel[97]), atol=1e-6))
True
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn as nn

from ..chain.ngram import MAX_STATES, NGramChain
from .batching import DecoderModel
from .call_checks import check_ids_start

if TYPE_CHECKING:
    from .tree_layout import TreeCall

__all__ = ["NGramModel", "NGramCache", "MAX_STATES"]


class NGramCache:
    """Token history ``[B, max_len]`` (int64); entries past a call's positions are stale."""

    def __init__(self, batch_size: int, max_len: int, device: str | torch.device | None) -> None:
        self.history = torch.zeros(batch_size, max_len, dtype=torch.long, device=device)
        self.batch_size = batch_size
        self.max_len = max_len

    def __repr__(self):
        return f"NGramCache(batch_size={self.batch_size}, max_len={self.max_len})"


class NGramModel(NGramChain, DecoderModel, nn.Module):
    """Order-``order`` byte n-gram with additive smoothing ``alpha``, as a torch module.

    The parameters are those of :class:`~spectheory.chain.ngram.NGramChain` (``index``,
    ``counts``, ``order``, ``alpha``, ``vocab_size``, ``pad_byte``: passed on as they are), plus
    the keyword ``max_seq_len``, the longest sequence a cache may hold. :meth:`from_bytes`, :meth:`load`, :meth:`kernel`,
    :meth:`next_state` and :meth:`state_index` are the chain's.
    """

    logprobs: torch.Tensor  # registered buffer [S, V]

    def __init__(self, *args: Any, max_seq_len: int = 1 << 16, **kwargs: Any) -> None:
        nn.Module.__init__(self)
        NGramChain.__init__(self, *args, **kwargs)
        self.max_seq_len = int(max_seq_len)
        self.register_buffer("logprobs", torch.from_numpy(np.log(self.kernel())).float())

    # -------------------------------------------------------------- the model interface
    def empty_cache(
        self, batch_size: int, max_len: int, device: str | torch.device | None, dtype: torch.dtype | None
    ) -> NGramCache:
        """A history cache (``dtype`` is not read: the cache holds tokens)."""
        return NGramCache(batch_size, max_len, device or self.logprobs.device)

    def _states(self, history, pos):
        """States after position ``pos [B, L]`` given ``history [B, T]`` (padded left)."""
        state = torch.zeros_like(pos)
        for j in range(self.order - 2, -1, -1):  # oldest context byte first
            p = pos - j
            byte = history.gather(1, p.clamp(min=0))
            byte = torch.where(p >= 0, byte, torch.full_like(byte, self.pad_byte))
            state = state * self.vocab_size + byte
        return state

    def forward(
        self, ids: torch.Tensor, cache: NGramCache | None = None, start: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits (log-probabilities) ``[B, L, V]`` of the next byte after each position."""
        cache_batch = cache.batch_size if cache is not None else None
        cache_len = cache.max_len if cache is not None else None
        pos = check_ids_start(ids, cache, start, self.max_seq_len, cache_batch, cache_len)
        ids = ids.long()
        if (ids.min() < 0) or (ids.max() >= self.vocab_size):
            raise ValueError(f"ids must be in [0, {self.vocab_size})")
        if cache is None or pos is None:  # pos is None exactly when there is no cache
            history = ids
            pos = torch.arange(ids.shape[1], device=ids.device).expand_as(ids)
        else:
            rows = torch.arange(ids.shape[0], device=ids.device)[:, None]
            cache.history[rows, pos] = ids  # write tokens at their positions
            history = cache.history
        return self.logprobs[self._states(history, pos)]  # [B, L, V]

    # ------------------------------------------ tree attention (decoder.tree_attention's contract)
    def score_tree(
        self, cache: NGramCache | None, call: TreeCall, return_hidden: bool
    ) -> torch.Tensor | None:
        """Logits after the tree nodes: for ``order <= 2`` the law after a node depends on its
        token only, so each node is one uncached call of length 1; ``None`` (recompute the
        paths) for a longer context or ``return_hidden``."""
        if self.order > 2 or return_hidden:
            return None
        B, L = call.ids.shape
        return self(call.ids.reshape(B * L, 1)).reshape(B, L, -1)

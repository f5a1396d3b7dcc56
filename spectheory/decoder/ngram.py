"""An order-k byte n-gram model from counts: a torch module that is exactly a Markov chain.

The model of order ``k`` predicts the next byte from the last ``k - 1`` bytes (its
*state*). With counts ``c(s, x)`` of byte ``x`` following state ``s`` in the training
bytes and additive smoothing ``alpha > 0``, the next-byte law is

    draft(x | s) = (c(s, x) + alpha) / (sum_y c(s, y) + V * alpha),     V = 256,

so every law has full support. States are encoded big-endian in base ``V``: the
context ``(b_1, ..., b_{k-1})`` (oldest first) is state
``s = sum_j b_j * V**(k-1-j)``, ``S = V**(k-1)`` states; emitting ``x`` in state ``s``
moves to ``(s * V + x) mod S``. Positions with fewer than ``k - 1`` bytes of history are
left-padded with ``pad_byte`` (a newline by default; it never matters for ``k <= 2``,
where the state is just the current byte). The shipped ``draft-ngram`` is order 2.

It implements the shared model interface of ``spectheory.decoder.model``: ``model(ids)``
gives logits ``[B, L, V]`` (log-probabilities), and ``model(ids, cache=..., start=...)``
uses a cache that only stores the token history, so rollback is free.

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

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from .model import check_ids_start

__all__ = ["NGramModel", "NGramCache"]

MAX_STATES = 1 << 16  # the dense log-prob table is [S, V]; order <= 3 for V = 256


class NGramCache:
    """Token history ``[B, max_len]`` (int64); entries past a call's positions are stale."""

    def __init__(self, batch_size: int, max_len: int, device: str | torch.device | None) -> None:
        self.history = torch.zeros(batch_size, max_len, dtype=torch.long, device=device)
        self.batch_size = batch_size
        self.max_len = max_len

    def __repr__(self):
        return f"NGramCache(batch_size={self.batch_size}, max_len={self.max_len})"


class NGramModel(nn.Module):
    """Order-``order`` byte n-gram with additive smoothing ``alpha`` (see module docstring).

    Parameters
    ----------
    index : int array [N]
        Codes ``s * V + x`` of the nonzero counts (state ``s``, next byte ``x``).
    counts : int array [N]
        The counts, positive.
    order : int
        ``k >= 1``; the context is ``k - 1`` bytes.
    alpha : float
        Smoothing, ``> 0``.
    vocab_size : int
        ``V`` (256 for bytes; smaller vocabularies are for tests and toy chains).
    pad_byte : int, optional
        Left padding of short histories; default newline (10), or 0 when ``V <= 10``.
    """

    logprobs: torch.Tensor  # registered buffer [S, V]

    def __init__(
        self,
        index: np.ndarray,
        counts: np.ndarray,
        order: int,
        alpha: float,
        vocab_size: int = 256,
        pad_byte: int | None = None,
        max_seq_len: int = 1 << 16,
    ) -> None:
        super().__init__()
        if pad_byte is None:
            pad_byte = 10 if vocab_size > 10 else 0
        if not isinstance(order, int) or order < 1:
            raise ValueError(f"order must be an int >= 1, got {order!r}")
        if not (np.isfinite(alpha) and alpha > 0):
            raise ValueError(f"alpha must be a finite float > 0, got {alpha!r}")
        if not 0 <= pad_byte < vocab_size:
            raise ValueError(f"pad_byte must be in [0, {vocab_size}), got {pad_byte!r}")
        self.order, self.alpha, self.pad_byte = order, float(alpha), int(pad_byte)
        self.vocab_size, self.max_seq_len = int(vocab_size), int(max_seq_len)
        self.num_states = vocab_size ** (order - 1)
        if self.num_states > MAX_STATES:
            raise ValueError(
                f"order {order} gives {self.num_states} states, more than {MAX_STATES}; use order <= 3"
            )
        index = np.asarray(index, dtype=np.int64)
        counts = np.asarray(counts, dtype=np.int64)
        if index.shape != counts.shape or index.ndim != 1:
            raise ValueError("index and counts must be 1-d arrays of equal length")
        if index.size and (index.min() < 0 or index.max() >= self.num_states * vocab_size):
            raise ValueError("index has codes outside [0, S * V)")
        if (counts < 0).any():
            raise ValueError("counts must be nonnegative")
        self._index, self._counts = index, counts
        self.register_buffer("logprobs", torch.from_numpy(np.log(self.kernel())).float())

    # -------------------------------------------------------------- construction and storage
    @classmethod
    def from_bytes(
        cls, data: bytes | np.ndarray, order: int = 2, alpha: float = 0.5, **kwargs: Any
    ) -> NGramModel:
        """Count the order-``order`` n-grams of the byte stream ``data`` (uint8 ``[N]``)."""
        data = np.asarray(data)
        if data.ndim != 1 or data.size < order:
            raise ValueError(f"data must be a 1-d byte array with at least order={order} entries")
        data = data.astype(np.int64)
        V = kwargs.get("vocab_size", 256)
        codes = np.zeros(data.size - order + 1, dtype=np.int64)  # code of n-gram at i
        for j in range(order):
            codes = codes * V + data[j : data.size - order + 1 + j]
        index, counts = np.unique(codes, return_counts=True)
        return cls(index, counts, order, alpha, **kwargs)

    def save(self, path: str | os.PathLike) -> None:
        """Save as compressed ``.npz`` of sparse counts (uint32 codes and counts)."""
        code_dtype = np.uint32 if self.num_states * self.vocab_size <= 2**32 else np.uint64
        np.savez_compressed(
            path,
            index=self._index.astype(code_dtype),
            counts=self._counts.astype(np.uint32),
            order=self.order,
            alpha=self.alpha,
            vocab_size=self.vocab_size,
            pad_byte=self.pad_byte,
        )

    @classmethod
    def load(cls, path: str | os.PathLike) -> NGramModel:
        """Inverse of :meth:`save`."""
        with np.load(path) as f:
            return cls(
                f["index"],
                f["counts"],
                int(f["order"]),
                float(f["alpha"]),
                vocab_size=int(f["vocab_size"]),
                pad_byte=int(f["pad_byte"]),
            )

    def num_counts(self) -> int:
        """Number of nonzero n-gram counts stored."""
        return int(self._index.size)

    # -------------------------------------------------------------- the Markov chain
    def counts(self) -> np.ndarray:
        """Dense counts ``c(s, x)``, int64 ``[S, V]``."""
        dense = np.zeros(self.num_states * self.vocab_size, dtype=np.int64)
        dense[self._index] = self._counts
        return dense.reshape(self.num_states, self.vocab_size)

    def kernel(self) -> np.ndarray:
        """Next-byte kernel ``[S, V]`` in float64: ``(c + alpha) / (c.sum(1) + V alpha)``."""
        c = self.counts().astype(np.float64) + self.alpha
        return c / c.sum(axis=1, keepdims=True)

    def next_state(self) -> np.ndarray:
        """State transition ``[S, V]`` (int64): ``(s * V + x) mod S``."""
        s = np.arange(self.num_states, dtype=np.int64)[:, None]
        x = np.arange(self.vocab_size, dtype=np.int64)[None, :]
        return (s * self.vocab_size + x) % self.num_states

    def state_index(self, context: bytes | Sequence[int]) -> int:
        """State of a byte context (any length; the last ``order - 1`` bytes count,
        left-padded with ``pad_byte``)."""
        context = list(bytes(context) if isinstance(context, (bytes, bytearray)) else context)
        k1 = self.order - 1
        tail = ([self.pad_byte] * k1 + context)[len(context) :] if k1 else []
        s = 0
        for b in tail:
            if not 0 <= int(b) < self.vocab_size:
                raise ValueError(f"context byte {b!r} out of range")
            s = s * self.vocab_size + int(b)
        return s

    @property
    def initial_state(self) -> int:
        """State of the empty context (all padding)."""
        return self.state_index([])

    # -------------------------------------------------------------- the model interface
    def new_cache(
        self,
        batch_size: int,
        max_len: int,
        device: str | torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> NGramCache:
        """A history cache (``dtype`` is accepted for interface compatibility, unused)."""
        for name, value in (("batch_size", batch_size), ("max_len", max_len)):
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if max_len > self.max_seq_len:
            raise ValueError(f"max_len={max_len} exceeds max_seq_len={self.max_seq_len}")
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

r"""An order-k byte n-gram fitted from counts, as a Markov chain: numpy only (no torch).

The model of order ``k`` predicts the next byte from the last ``k - 1`` bytes (its
*state*). With counts ``c(s, x)`` of byte ``x`` following state ``s`` in the training
bytes and additive smoothing ``alpha > 0``, the next-byte law is

.. math:: q(x \mid s) = \frac{c(s, x) + \alpha}{\sum_y c(s, y) + V \alpha}, \qquad V = 256,

so every law has full support. States are encoded big-endian in base ``V``: the
context ``(b_1, ..., b_{k-1})`` (oldest first) is state
``s = sum_j b_j * V**(k-1-j)``, ``S = V**(k-1)`` states; emitting ``x`` in state ``s``
moves to ``(s * V + x) mod S``. Positions with fewer than ``k - 1`` bytes of history are
left-padded with ``pad_byte`` (a newline by default; it never matters for ``k <= 2``,
where the state is just the current byte). The shipped ``draft-ngram`` is order 2
(:func:`load_shipped_ngram` reads it without torch).

The decoder's :class:`spectheory.decoder.NGramModel` is this chain with a torch forward pass.

Examples
--------
>>> import numpy as np
>>> from spectheory.chain.ngram import NGramChain
>>> ngram = NGramChain.from_bytes(np.frombuffer(b"abababac", np.uint8), order=2, alpha=1.0)
>>> kernel = ngram.kernel()                    # [256, 256], rows are laws
>>> float(kernel[ord("a"), ord("b")]) == (3 + 1.0) / (4 + 256 * 1.0)
True
>>> int(ngram.next_state()[ngram.state_index(b"a"), ord("b")]) == ord("b")
True
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

__all__ = ["NGramChain", "MAX_STATES", "load_shipped_ngram"]

_Self = TypeVar("_Self", bound="NGramChain")

MAX_STATES = 1 << 16  # the dense log-prob table is [S, V]; order <= 3 for V = 256

#: Where the shipped models live (package data of :mod:`spectheory.decoder`; read as files here).
WEIGHTS_DIR = Path(__file__).resolve().parent.parent / "decoder" / "weights"


class NGramChain:
    """Order-``order`` byte n-gram with additive smoothing ``alpha`` (see the module docstring).

    Parameters
    ----------
    index : int array [N]
        Codes ``s * V + x`` of the nonzero counts (state ``s``, next byte ``x``).
    counts : int array [N]
        The counts, nonnegative.
    order : int
        ``k >= 1``; the context is ``k - 1`` bytes.
    alpha : float
        Smoothing, ``> 0``.
    vocab_size : int
        ``V`` (256 for bytes; smaller vocabularies are for tests and toy chains).
    pad_byte : int, optional
        Left padding of short histories; default newline (10), or 0 when ``V <= 10``.
    """

    def __init__(
        self,
        index: np.ndarray,
        counts: np.ndarray,
        order: int,
        alpha: float,
        vocab_size: int = 256,
        pad_byte: int | None = None,
    ) -> None:
        if pad_byte is None:
            pad_byte = 10 if vocab_size > 10 else 0
        if not isinstance(order, int) or order < 1:
            raise ValueError(f"order must be an int >= 1, got {order!r}")
        if not (np.isfinite(alpha) and alpha > 0):
            raise ValueError(f"alpha must be a finite float > 0, got {alpha!r}")
        if not 0 <= pad_byte < vocab_size:
            raise ValueError(f"pad_byte must be in [0, {vocab_size}), got {pad_byte!r}")
        self.order, self.alpha, self.pad_byte = order, float(alpha), int(pad_byte)
        self.vocab_size = int(vocab_size)
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

    # -------------------------------------------------------------- construction and storage
    @classmethod
    def from_bytes(
        cls: type[_Self], data: bytes | np.ndarray, order: int = 2, alpha: float = 0.5, **kwargs: Any
    ) -> _Self:
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
    def load(cls: type[_Self], path: str | os.PathLike, **kwargs: Any) -> _Self:
        """Inverse of :meth:`save` (``kwargs`` go to the constructor)."""
        with np.load(path) as f:
            return cls(
                f["index"],
                f["counts"],
                int(f["order"]),
                float(f["alpha"]),
                vocab_size=int(f["vocab_size"]),
                pad_byte=int(f["pad_byte"]),
                **kwargs,
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


def load_shipped_ngram(name: str = "draft-ngram") -> NGramChain:
    """The shipped n-gram model ``name`` as an :class:`NGramChain`, read without torch.

    Examples
    --------
    >>> ngram = load_shipped_ngram()
    >>> ngram.order, ngram.kernel().shape
    (2, (256, 256))
    """
    info_path = WEIGHTS_DIR / f"{name}.json"
    if not info_path.exists():
        shipped = sorted(p.stem for p in WEIGHTS_DIR.glob("*.json"))
        raise ValueError(f"name: no shipped model {name!r}; shipped: {', '.join(shipped)}")
    info = json.loads(info_path.read_text())
    if info.get("kind") != "ngram":
        raise ValueError(f"name: {name!r} is a {info.get('kind')!r} model, not an n-gram (it needs torch)")
    return NGramChain.load(WEIGHTS_DIR / info["weights_file"])

r"""The models the kit hands a whole sampler (:func:`~spectheory.testing.check_sampler`).

:class:`ToyModel` is a first-order toy language model returning raw logits, as a causal
language model does; :class:`Counted` counts its calls (the multi-call protocol);
:func:`process_logits` is the temperature / top-k / top-p processing whose law the output
must follow. HuggingFace-style stubs over them: :mod:`spectheory.testing.hf_models`.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["process_logits", "ToyModel", "Counted"]


def process_logits(
    logits: ArrayLike, temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> np.ndarray:
    r"""The processed law ``softmax(warp(logits))``: temperature, then top-k, then top-p (last axis).

    Top-k keeps the ``top_k`` largest logits; top-p then drops the least likely tokens while
    their cumulative probability stays ``<= 1 - top_p`` (HuggingFace's ``TopPLogitsWarper``;
    at least one token is kept). Tokens dropped get probability exactly 0.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.testing.toy_models import process_logits
    >>> process_logits(np.log([0.5, 0.3, 0.2]), top_k=2).round(3).tolist()
    [0.625, 0.375, 0.0]
    >>> process_logits(np.log([0.5, 0.3, 0.2]), top_p=0.7).round(3).tolist()
    [0.625, 0.375, 0.0]
    """
    z = np.asarray(logits, dtype=np.float64)
    if temperature != 1.0:
        z = z / float(temperature)
    V = z.shape[-1]
    if top_k is not None and top_k < V:
        kth = np.partition(z, V - top_k, axis=-1)[..., V - top_k][..., None]
        z = np.where(z < kth, -np.inf, z)
    m = np.max(z, axis=-1, keepdims=True)
    w = np.exp(z - m)
    law = w / w.sum(-1, keepdims=True)
    if top_p is not None and top_p < 1.0:
        order = np.argsort(law, axis=-1, kind="stable")  # ascending
        srt = np.take_along_axis(law, order, -1)
        drop_sorted = np.cumsum(srt, -1) <= 1.0 - top_p
        drop_sorted[..., -1] = False  # keep at least one token
        drop = np.zeros_like(drop_sorted)
        np.put_along_axis(drop, order, drop_sorted, -1)
        law = np.where(drop, 0.0, law)
        law = law / law.sum(-1, keepdims=True)
    return law


class ToyModel:
    """A first-order toy language model: logits of the next token from the position and the last token.

    ``model(tokens)`` returns ``log(law[min(i - offset, last), tokens[i]])`` for each row ``i``
    (``-inf`` where the law is 0): shape ``[L, V]`` for ``L`` tokens, ``[B, L, V]`` for
    ``[B, L]``. ``offset = len(prefix) - 1`` makes row ``len(prefix) - 1`` the round's
    position 0.

    Parameters
    ----------
    laws : ndarray, shape (P, V, V)
        ``laws[j, s]``: next-token law at position ``j`` after token ``s``.
    offset : int
    """

    def __init__(self, laws: ArrayLike, offset: int = 0) -> None:
        with np.errstate(divide="ignore"):
            self.logits_table = np.log(np.asarray(laws, dtype=np.float64))
        self.vocab_size = self.logits_table.shape[-1]
        self.offset = offset
        self.calls = 0

    def __call__(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        tok = np.asarray(tokens, dtype=np.int64)
        if tok.ndim not in (1, 2) or tok.shape[-1] < 1:
            raise ValueError(
                f"tokens: expected a non-empty [L] or [B, L] int sequence, got shape {tok.shape}"
            )
        if tok.min() < 0 or tok.max() >= self.vocab_size:
            raise ValueError(f"tokens: entries must lie in [0, {self.vocab_size})")
        self.calls += 1
        pos = np.clip(np.arange(tok.shape[-1]) - self.offset, 0, self.logits_table.shape[0] - 1)
        return self.logits_table[pos, tok] if tok.ndim == 1 else self.logits_table[pos[None, :], tok]


class Counted:
    """A model that counts its calls (the multi-call protocol: target calls per round)."""

    def __init__(self, model: ToyModel) -> None:
        self.model = model
        self.calls = 0

    def __call__(self, tokens: Sequence[int] | np.ndarray) -> np.ndarray:
        self.calls += 1
        return self.model(tokens)

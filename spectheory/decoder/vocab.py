r"""Drafts with another vocabulary in the real decoder: Token-Level Intersection (TLI).

Notation: p = target over ``V_t`` tokens, ``q_d`` = draft over its own ``V_d`` tokens,
``to_target[v]`` the target id of draft token ``v`` (``-1`` if the draft token is not a target
token), ``I`` the shared tokens. TLI (Timor et al., ICML 2025, arXiv 2502.05202; the form
shipped in Hugging Face transformers' ``AssistantToTargetTranslator``, see
``docs/vocabularies.md``) suppresses the draft tokens outside the target vocabulary and maps
the draft's logits into the target vocabulary, ``-inf`` where the draft has no token:

.. math:: z_I(x) = z_d(v_x) \text{ if } x = \texttt{to\_target}[v_x], \quad -\infty \text{ otherwise},

so that ``softmax(z_I / T) = q_I``, the draft restricted to ``I`` and renormalised (at any
temperature ``T``; :func:`spectheory.laws.vocabularies.tli_draft_law`). :class:`TLIDraft`
wraps a draft model this way: it takes target ids (each context token is mapped to a draft
id through ``context_map``, by default the inverse of ``to_target``) and returns logits over
``V_t``, so :func:`~spectheory.decoder.speculative_generate` (token verification) runs TLI
unchanged; it is lossless, and its acceptance per position is :math:`\sum_x \min(p, q_I)(x)`.

:class:`TokenTableModel` is a first-order model over any vocabulary (the next token's law is
a row of a table, chosen by the last token), e.g. a merged-token draft whose law depends on
the last byte of its last token (:func:`spectheory.laws.vocabularies.merged_token_draft`):
the decoder then runs a chain whose exact values are known.

Examples
--------
>>> import torch
>>> from spectheory.decoder.vocab import TLIDraft, TokenTableModel, tli_logits
>>> z = tli_logits(torch.tensor([[0.0, 1.0, 2.0]]), [1, -1, 0], 2)   # draft token 1 is not shared
>>> z.tolist()
[[2.0, 0.0]]
>>> draft = TokenTableModel(torch.log(torch.tensor([[0.5, 0.25, 0.25]] * 3)), [0, 0, 0])
>>> tli = TLIDraft(draft, [0, 2, -1], 3)   # draft token 2 is draft-only; target token 1 has none
>>> [round(x, 4) for x in tli(torch.tensor([[0, 2]])).softmax(-1)[0, -1].tolist()]
[0.6667, 0.0, 0.3333]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
import torch.nn as nn

from .._guards import check_int
from .call_checks import check_ids_start

__all__ = ["tli_logits", "TLIDraft", "TokenTableModel"]


def _check_map(to_target: Sequence[int] | np.ndarray | torch.Tensor, V_d: int, V_t: int) -> torch.Tensor:
    m = torch.as_tensor(np.asarray(to_target, dtype=np.int64))
    if m.shape != (V_d,):
        raise ValueError(f"to_target: expected shape ({V_d},), got {tuple(m.shape)}")
    shared = m[m >= 0]
    if bool((m < -1).any()) or bool((shared >= V_t).any()) or shared.unique().numel() != shared.numel():
        raise ValueError(f"to_target: expected distinct target ids in [0, {V_t}) or -1")
    if shared.numel() == 0:
        raise ValueError("to_target: no draft token is a target token (TLI cannot draft)")
    return m


def tli_logits(
    draft_logits: torch.Tensor, to_target: Sequence[int] | np.ndarray | torch.Tensor, target_vocab_size: int
) -> torch.Tensor:
    """The draft's logits ``[..., V_d]`` mapped into the target vocabulary ``[..., V_t]`` (TLI).

    Entry ``x`` is the logit of the draft token with target id ``x``, ``-inf`` for target
    tokens the draft does not have; draft tokens with ``to_target = -1`` are dropped
    (suppressed). ``softmax`` of the result is TLI's drafting law ``q_I``.

    Examples
    --------
    >>> import torch
    >>> from spectheory.decoder.vocab import tli_logits
    >>> tli_logits(torch.tensor([1.0, 5.0]), [-1, 2], 3).tolist()
    [-inf, -inf, 5.0]
    """
    V_t = check_int(target_vocab_size, "target_vocab_size", 1)
    m = _check_map(to_target, draft_logits.shape[-1], V_t).to(draft_logits.device)
    keep = m >= 0
    out = torch.full(
        (*draft_logits.shape[:-1], V_t), -torch.inf, dtype=draft_logits.dtype, device=draft_logits.device
    )
    out[..., m[keep]] = draft_logits[..., keep]
    return out


class TLIDraft(nn.Module):
    """A draft model over its own vocabulary, presented to the decoder in the target's (TLI).

    Parameters
    ----------
    draft : model of the decoder contract with ``vocab_size = V_d``
    to_target : int sequence [V_d]
        Target id of each draft token, ``-1`` for a draft-only token (never drafted).
    target_vocab_size : int
    context_map : int sequence [V_t], optional
        Draft id of each target token, used to feed the context to the draft; default the
        inverse of ``to_target`` (``-1`` for target tokens the draft does not have: a context
        holding one raises ``ValueError``).

    The model contract (:mod:`spectheory.decoder.batching`) with ``vocab_size = V_t``: calls
    (and caches) are the inner draft's on the mapped ids; the logits are
    :func:`tli_logits` of the inner draft's.
    """

    to_target: torch.Tensor  # registered buffer [V_d]
    context_map: torch.Tensor  # registered buffer [V_t]

    def __init__(
        self,
        draft: Any,
        to_target: Sequence[int] | np.ndarray | torch.Tensor,
        target_vocab_size: int,
        context_map: Sequence[int] | np.ndarray | torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        self.inner = draft
        V_t = check_int(target_vocab_size, "target_vocab_size", 1)
        m = _check_map(to_target, int(draft.vocab_size), V_t)
        if context_map is None:
            ctx = torch.full((V_t,), -1, dtype=torch.long)
            ctx[m[m >= 0]] = torch.nonzero(m >= 0).flatten()
        else:
            ctx = torch.as_tensor(np.asarray(context_map, dtype=np.int64))
            if ctx.shape != (V_t,) or bool((ctx < -1).any()) or bool((ctx >= draft.vocab_size).any()):
                raise ValueError(f"context_map: expected {V_t} draft ids in [0, {draft.vocab_size}) or -1")
        self.register_buffer("to_target", m)
        self.register_buffer("context_map", ctx)
        self._vocab_size = V_t

    @property
    def vocab_size(self) -> int:
        """``V_t``: the decoder sees the target's vocabulary."""
        return self._vocab_size

    @property
    def max_seq_len(self) -> int | None:
        """The inner draft's."""
        return self.inner.max_seq_len

    def new_cache(self, batch_size: int, max_len: int, device: Any = None, dtype: Any = None) -> Any:
        """The inner draft's cache."""
        return self.inner.new_cache(batch_size, max_len, device=device, dtype=dtype)

    def forward(self, ids: torch.Tensor, *args: Any, **kwargs: Any) -> torch.Tensor:
        """Logits ``[B, L, V_t]`` (:func:`tli_logits`) of the inner draft on the mapped ``ids``."""
        if not isinstance(ids, torch.Tensor) or ids.dim() != 2:
            raise ValueError(f"ids must be a LongTensor [B, L], got {getattr(ids, 'shape', ids)!r}")
        if bool((ids < 0).any()) or bool((ids >= self._vocab_size).any()):
            raise ValueError(f"ids must be in [0, {self._vocab_size})")
        mapped = self.context_map[ids.long()]
        if bool((mapped < 0).any()):
            raise ValueError("ids: a context token has no draft token (give context_map)")
        return tli_logits(self.inner(mapped, *args, **kwargs), self.to_target, self._vocab_size)


class _NoCache:
    """A first-order model needs no history: the cache only fixes the shape contract."""

    def __init__(self, batch_size: int, max_len: int) -> None:
        self.batch_size, self.max_len = batch_size, max_len


class TokenTableModel(nn.Module):
    """First-order model: after token ``v`` the next token's law is ``softmax(logprobs[state_of[v]])``.

    Parameters
    ----------
    logprobs : tensor [S, V]
        Log-probabilities (``-inf`` for zeros) of the next token, per state.
    state_of : int sequence [V]
        The state (row) each token leads to, e.g. the last byte of a merged token.
    max_seq_len : int
    """

    logprobs: torch.Tensor  # registered buffer [S, V]
    state_of: torch.Tensor  # registered buffer [V]

    def __init__(
        self,
        logprobs: torch.Tensor | np.ndarray,
        state_of: Sequence[int] | np.ndarray,
        max_seq_len: int = 1 << 16,
    ) -> None:
        super().__init__()
        lp = torch.as_tensor(logprobs, dtype=torch.float32)
        if lp.dim() != 2:
            raise ValueError(f"logprobs: expected [S, V], got shape {tuple(lp.shape)}")
        s = torch.as_tensor(np.asarray(state_of, dtype=np.int64))
        if s.shape != (lp.shape[1],) or bool((s < 0).any()) or bool((s >= lp.shape[0]).any()):
            raise ValueError(f"state_of: expected {lp.shape[1]} rows in [0, {lp.shape[0]})")
        self.register_buffer("logprobs", lp)
        self.register_buffer("state_of", s)
        self.max_seq_len = int(max_seq_len)

    @property
    def vocab_size(self) -> int:
        """``V``."""
        return int(self.logprobs.shape[1])

    def new_cache(self, batch_size: int, max_len: int, device: Any = None, dtype: Any = None) -> _NoCache:
        """A shape-only cache (the next law depends on the last token alone)."""
        check_int(batch_size, "batch_size", 1)
        if check_int(max_len, "max_len", 1) > self.max_seq_len:
            raise ValueError(f"max_len={max_len} exceeds max_seq_len={self.max_seq_len}")
        return _NoCache(batch_size, max_len)

    def forward(
        self, ids: torch.Tensor, cache: _NoCache | None = None, start: torch.Tensor | None = None
    ) -> torch.Tensor:
        """Logits ``[B, L, V]``: row ``i`` is the law after ``ids[:, i]``."""
        cb = cache.batch_size if cache is not None else None
        cl = cache.max_len if cache is not None else None
        check_ids_start(ids, cache, start, self.max_seq_len, cb, cl)
        if bool((ids < 0).any()) or bool((ids >= self.vocab_size).any()):
            raise ValueError(f"ids must be in [0, {self.vocab_size})")
        return self.logprobs[self.state_of[ids.long()]]

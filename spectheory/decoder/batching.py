"""Ragged batches for the decoders: the model contract, prompt checks, placement and cache bookkeeping.

Model contract (every model of :mod:`spectheory.decoder` and :class:`~spectheory.decoder.hf.HFCausalLM`):
``model(ids [B, L]) -> logits [B, L, V]`` (causal, no cache);
``cache = model.new_cache(batch_size, max_len, device=, dtype=)``;
``model(ids, cache=cache, start=start)`` with ``start`` LongTensor [B] the position of
``ids[:, 0]`` in each row: it writes the rows' keys/values at ``start[b] .. start[b]+L-1`` and
query ``i`` attends to cache positions ``< start[b]+i+1``. Positions beyond are stale and
never read, so a rollback after a rejection is just a later call with a smaller ``start``.
Attributes ``vocab_size`` and ``max_seq_len`` (``None`` if unbounded). Optional members of a
draft: ``proposal_cap(tokens [B, cap], seq_len [B], k [B]) -> k`` (how many tokens it can
propose this round, 0: the round is a plain target step; prompt lookup) and ``any_vocab``
with ``adopt_vocab(V)`` (a draft of any vocabulary takes the target's).

Bookkeeping (per row ``b``): ``seq_len`` = committed tokens (prompt + generated);
``*_cached`` = positions whose cached keys/values belong to committed tokens. Every call
feeds the committed tokens not yet cached (at least the last one) plus, for the target, the
drafts. Windows of a batched call are right-aligned on each row's last needed position
(re-feeding already cached tokens where rows need fewer), so no write ever goes past
``prompt_len + max_new_tokens``. The protocol is the one of ``docs/protocol.md`` ("what is counted").
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from .._guards import check_int
from .._sizes import check_size
from .logits import check_sampling_args
from .tree_layout import TreeCall, TreeLayout

__all__ = [
    "CausalLM",
    "DecoderModel",
    "keeps_chosen_logits",
    "Prompt",
    "Batch",
    "make_batch",
    "place",
    "as_torch_dtype",
    "check_common",
    "sync",
    "forward_window",
    "prefill",
    "prefill_law",
    "stop_at_eos",
    "new_tokens",
]


# ----------------------------------------------------------------------------- setup


class CausalLM(Protocol):
    """The model contract above, for the type checker: any ``torch.nn.Module`` with these members.

    Structural (nothing to inherit): :class:`~spectheory.decoder.model.GPT`,
    :class:`~spectheory.decoder.ngram_model.NGramModel`, :class:`~spectheory.decoder.hf.HFCausalLM`
    and a user's module with ``vocab_size``, ``max_seq_len`` and ``new_cache`` all qualify.
    """

    @property
    def vocab_size(self) -> int: ...

    @property
    def max_seq_len(self) -> int | None: ...

    def new_cache(self, batch_size: int, max_len: int, device: Any = None, dtype: Any = None) -> Any: ...

    def __call__(self, ids: torch.Tensor, *args: Any, **kwargs: Any) -> Any: ...

    def to(self, *args: Any, **kwargs: Any) -> Any: ...

    def parameters(self, recurse: bool = True) -> Iterator[torch.nn.Parameter]: ...

    def buffers(self, recurse: bool = True) -> Iterator[torch.Tensor]: ...


def keeps_chosen_logits(model: Any) -> bool:
    """Whether ``model`` takes ``logits_to_keep`` (its output head on the last positions only;
    :class:`~spectheory.decoder.hf.HFCausalLM` declares ``accepts_logits_to_keep``). The one
    place the decoder and the cost models read it: such a target scores the prompt in a path
    round's first call (no separate prefill, as HF's assisted generation), and such a draft
    keeps its law after the prompt.

    Examples
    --------
    >>> class M:
    ...     accepts_logits_to_keep = True
    >>> keeps_chosen_logits(M()), keeps_chosen_logits(object())
    (True, False)
    """
    return getattr(model, "accepts_logits_to_keep", False) is True


class DecoderModel(ABC):
    """What the package's own models of the contract share (the GPT, its compiled wrapper, the
    n-gram model, :class:`~spectheory.decoder.hf.HFCausalLM`): ``new_cache`` and the members of
    tree attention (:mod:`spectheory.decoder.tree_attention`), written once here.

    A model mixes it in next to ``torch.nn.Module`` and supplies :meth:`empty_cache` and
    :meth:`score_tree`; ``supports_tree_cache`` it declares itself (``True`` when its cached
    call takes a tree mask, then its cache has ``keep_path`` for :meth:`compact_path`).
    """

    #: Whether the law at a position depends on what else shares the call (dynamic activation
    #: quantisation: one scale for the whole input). Such a model's along-path statistics are
    #: scored as the decoder calls it (:func:`~spectheory.validation.path_stats.path_statistics`:
    #: one row, one token at a time) and its decoder runs are measured one sequence at a time
    #: (:func:`~spectheory.validation.predict.measure_decoder`).
    batch_dependent_law: bool = False

    def new_cache(
        self,
        batch_size: int,
        max_len: int,
        device: str | torch.device | None = None,
        dtype: torch.dtype | None = None,
    ) -> Any:
        """An empty cache for ``batch_size`` rows of up to ``max_len`` positions
        (``max_len <= max_seq_len``); device and dtype default to the model's."""
        for name, value in (("batch_size", batch_size), ("max_len", max_len)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        limit = getattr(self, "max_seq_len", None)
        if limit is not None and max_len > limit:
            raise ValueError(f"max_len={max_len} exceeds max_seq_len={limit}")
        return self.empty_cache(batch_size, max_len, device, dtype)

    @abstractmethod
    def empty_cache(
        self, batch_size: int, max_len: int, device: str | torch.device | None, dtype: torch.dtype | None
    ) -> Any:
        """The model's empty cache, sizes unchecked (``None``: the model's device or dtype)."""

    def new_tree_cache(
        self, batch_size: int, max_len: int, device: str | torch.device | None, dtype: torch.dtype
    ) -> Any:
        """A cache of ``max_len`` slots, which may exceed ``max_seq_len``: a draft tree sits past
        the committed tokens, its positions (``root + depth``) stay in range."""
        return self.empty_cache(batch_size, max_len, device, dtype)

    def tree_logits(
        self,
        cache: Any,
        prefix: torch.Tensor,
        root_slot: torch.Tensor,
        node_tokens: torch.Tensor,
        layout: TreeLayout,
        lo: int,
        hi: int,
        return_hidden: bool = False,
    ) -> Any:
        """Logits after the tree nodes at offsets ``lo .. hi - 1`` (the contract's member):
        :meth:`score_tree` of that :class:`~spectheory.decoder.tree_layout.TreeCall`."""
        return self.score_tree(cache, TreeCall(layout, root_slot, node_tokens, lo, hi), return_hidden)

    @abstractmethod
    def score_tree(self, cache: Any, call: TreeCall, return_hidden: bool) -> Any:
        """Logits ``[B, hi - lo, V]`` after ``call``'s nodes (with the final hidden states for
        ``return_hidden``), or ``None`` when the model cannot score this call: the caller then
        recomputes each node's path without cache."""

    def compact_path(
        self, cache: Any, root_slot: torch.Tensor, path_offsets: torch.Tensor, n_keep: torch.Tensor
    ) -> None:
        """Keep the accepted path: the cache's ``keep_path`` (e.g. :meth:`KVCache.keep_path
        <spectheory.decoder.kv_cache.KVCache.keep_path>`)."""
        cache.keep_path(root_slot, path_offsets, n_keep)


#: A prompt: token ids as a list, a 1-d integer array or tensor, or bytes (byte-level models).
Prompt = Sequence[int] | bytes | bytearray | np.ndarray | torch.Tensor


@dataclass
class Batch:
    tokens: torch.Tensor  # [B, cap] committed tokens, then this round's drafts
    prompt_len: torch.Tensor  # [B]
    seq_len: torch.Tensor  # [B] committed length
    end: torch.Tensor  # [B] prompt_len + max_new_tokens

    @property
    def remaining(self) -> torch.Tensor:
        return self.end - self.seq_len


def as_prompt(p: Prompt, i: int, vocab: int) -> list[int]:
    ids: list[Any] | None
    if isinstance(p, (bytes, bytearray)):
        ids = list(p)
    elif isinstance(p, torch.Tensor):
        ids = p.tolist() if p.ndim == 1 else None
    else:
        a = np.asarray(p)
        ids = a.tolist() if a.ndim == 1 and (a.size == 0 or np.issubdtype(a.dtype, np.integer)) else None
    if ids is None or not all(isinstance(t, int) for t in ids):
        raise ValueError(f"prompts[{i}]: expected a 1-d sequence of integer token ids")
    if not ids:
        raise ValueError(f"prompts[{i}]: empty prompt")
    if min(ids) < 0 or max(ids) >= vocab:
        raise ValueError(f"prompts[{i}]: token ids must lie in [0, {vocab}), got {min(ids)}..{max(ids)}")
    return ids


def make_batch(prompts: Sequence[Prompt], max_new_tokens: int, models: dict, device: torch.device) -> Batch:
    if isinstance(prompts, (bytes, bytearray, str)) or not hasattr(prompts, "__len__"):
        raise ValueError("prompts: expected a list of token sequences (list of lists/arrays/bytes)")
    if len(prompts) == 0:
        raise ValueError("prompts: empty list")
    vocab = next(iter(models.values())).vocab_size
    ids = [as_prompt(p, i, vocab) for i, p in enumerate(prompts)]
    lens = [len(x) for x in ids]
    for name, m in models.items():
        limit = getattr(m, "max_seq_len", None)
        if limit is not None and max(lens) >= limit:  # the prompt alone leaves no room
            i = int(np.argmax(lens))
            raise ValueError(
                f"prompts[{i}]: the prompt has {lens[i]} tokens, {name}.max_seq_len = {limit} leaves "
                f"no room for new tokens; use a prompt of at most {limit - 1} tokens"
            )
        if limit is not None and max(lens) + max_new_tokens > limit:
            raise ValueError(
                f"max_new_tokens: prompt length {max(lens)} + max_new_tokens "
                f"{max_new_tokens} exceeds {name}.max_seq_len = {limit}; at most "
                f"{limit - max(lens)} new tokens fit after this prompt"
            )
    cap = max(lens) + max_new_tokens
    check_size(
        "decode", "prompts" if len(ids) > 1 else "max_new_tokens", batch=len(ids), context=cap, vocab=vocab
    )
    tokens = torch.zeros(len(ids), cap, dtype=torch.int64)
    for b, x in enumerate(ids):
        tokens[b, : len(x)] = torch.tensor(x, dtype=torch.int64)
    plen = torch.tensor(lens, dtype=torch.int64)
    return Batch(
        tokens.to(device), plen.to(device), plen.clone().to(device), (plen + max_new_tokens).to(device)
    )


def as_torch_dtype(dtype: torch.dtype | str | None) -> torch.dtype | None:
    """``torch.float16``, ``"float16"``, ``"fp16"``, ``"bf16"`` ... as a torch dtype (None passes).

    Examples
    --------
    >>> as_torch_dtype("float16"), as_torch_dtype("bf16"), as_torch_dtype(None)
    (torch.float16, torch.bfloat16, None)
    """
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    aliases = {
        "fp16": "float16",
        "half": "float16",
        "bf16": "bfloat16",
        "fp32": "float32",
        "float": "float32",
        "fp64": "float64",
        "double": "float64",
    }
    name = aliases.get(str(dtype).removeprefix("torch."), str(dtype).removeprefix("torch."))
    value = getattr(torch, name, None) if isinstance(dtype, str) else None
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise ValueError(
            f"dtype: expected a floating torch dtype or its name (e.g. 'float16'), got {dtype!r}"
        )
    return value


def place(
    model: CausalLM, device: str | torch.device | None, dtype: torch.dtype | str | None
) -> tuple[torch.device, torch.dtype]:
    """Move ``model`` (in place) to the requested device/dtype; return the device and cache dtype."""
    if isinstance(dtype, str):  # "float16" as well as torch.float16
        dtype = as_torch_dtype(dtype)
    if device is not None or dtype is not None:
        model.to(device=device, dtype=dtype)
    params = list(model.parameters()) + list(model.buffers())
    floats = [p for p in params if p.is_floating_point()]
    dev = (
        torch.device(device) if device is not None else (params[0].device if params else torch.device("cpu"))
    )
    dt = dtype if dtype is not None else (floats[0].dtype if floats else torch.float32)
    return dev, dt


def check_common(
    models: dict, max_new_tokens: int, temperature: float, top_k: int | None, top_p: float | None
) -> tuple[int, tuple[float, int | None, float | None]]:
    max_new_tokens = check_int(max_new_tokens, "max_new_tokens", 1)
    sampling = check_sampling_args(temperature, top_k, top_p)
    vocabs = {name: getattr(m, "vocab_size", None) for name, m in models.items()}
    free = {name for name, m in models.items() if getattr(m, "any_vocab", False) is True}
    sizes = {v for name, v in vocabs.items() if isinstance(v, int) and name not in free}
    for name in free:  # a draft of any vocabulary (prompt lookup) takes the target's
        m = models[name]
        if len(sizes) == 1:
            vocabs[name] = next(iter(sizes))
            m.adopt_vocab(vocabs[name])
    for name, v in vocabs.items():
        m = models[name]
        if v is None and hasattr(m, "config") and hasattr(m, "generate"):  # a bare transformers model
            raise ValueError(
                f"{name}: a Hugging Face model; wrap it with spectheory.decoder.HFCausalLM({name}) first"
            )
        if not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: model has no valid integer vocab_size (got {v!r})")
    if len(set(vocabs.values())) > 1:
        raise ValueError(f"target and draft: mismatched vocabulary sizes {vocabs}")
    return max_new_tokens, sampling


def sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# ----------------------------------------------------------------------------- model calls
def forward_window(
    model: CausalLM,
    cache: Any,
    tokens: torch.Tensor,
    cached: torch.Tensor,
    end: torch.Tensor | None,
    width: int | None = None,
    aligned: bool = False,
    last_only: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Feed ``tokens[b, cached[b]:end[b]]`` (right-aligned, common width); return logits, start.

    ``width``: ``max(end - cached)`` if the caller read it already (else read here: a host sync);
    ``aligned``: every row's window is ``width`` wide (``end - cached == width``), so each
    starts at ``cached`` and needs no clamping (at batch 1 every window is); ``end`` is then not
    read and may be None. ``last_only`` (an aligned window): the caller reads the last
    position's logits only; a model that takes ``logits_to_keep`` then runs its output head
    there alone (logits ``[B, 1, V]``: on a 49k-token vocabulary the head is most of a
    small model's cost per position)."""
    if aligned:
        if width is None:
            raise ValueError("forward_window: an aligned window needs its width")
        idx = cached[:, None] + torch.arange(width, device=tokens.device)
        if last_only and width > 1 and keeps_chosen_logits(model):
            return model(tokens.gather(1, idx), cache=cache, start=cached, logits_to_keep=1), cached
        return model(tokens.gather(1, idx), cache=cache, start=cached), cached
    if end is None:
        raise ValueError("forward_window: end is needed unless the window is aligned")
    if width is None:
        width = int((end - cached).max().item())
    start = torch.clamp(torch.minimum(cached, end - width), min=0)
    idx = (start[:, None] + torch.arange(width, device=tokens.device)).clamp(max=tokens.shape[1] - 1)
    logits = model(tokens.gather(1, idx), cache=cache, start=start)
    return logits, start


def prefill(model: CausalLM, cache: Any, batch: Batch) -> torch.Tensor:
    """Cache every prompt token but the last; return the new ``cached`` lengths (the logits are
    not read: a model that takes ``logits_to_keep`` runs its output head on one position only)."""
    cached = torch.zeros_like(batch.seq_len)
    hi = int((batch.seq_len - 1).max().item())
    if hi > 0 and keeps_chosen_logits(model):
        model(batch.tokens[:, :hi], cache=cache, start=cached, logits_to_keep=1)
    elif hi > 0:
        forward_window(model, cache, batch.tokens, cached, batch.seq_len - 1)
    return batch.seq_len - 1


def prefill_law(model: CausalLM, cache: Any, batch: Batch) -> tuple[torch.Tensor, torch.Tensor]:
    """Cache every prompt token; return the cached lengths and the logits after each prompt
    ``[B, 1, V]`` (the first new token's law: the first step then calls nothing, as a Hugging
    Face ``generate``, whose prompt call gives its first token). A model that takes
    ``logits_to_keep`` runs its output head on the last positions only."""
    zero = torch.zeros_like(batch.seq_len)
    rows = torch.arange(len(zero), device=zero.device)
    if keeps_chosen_logits(model):
        lo, hi = torch.stack((batch.seq_len.min(), batch.seq_len.max())).tolist()
        keep = hi - lo + 1  # every row's last prompt token lies in the last keep positions
        logits = model(batch.tokens[:, :hi], cache=cache, start=zero, logits_to_keep=keep)
        return batch.seq_len.clone(), logits[rows, batch.seq_len - 1 - (hi - keep)][:, None]
    logits, start = forward_window(model, cache, batch.tokens, zero, batch.seq_len)
    return batch.seq_len.clone(), logits[rows, batch.seq_len - 1 - start][:, None]


def stop_at_eos(batch: Batch, eos: int) -> None:
    """Rows whose last committed token is ``eos`` are finished: their end moves to here."""
    rows = torch.arange(batch.tokens.shape[0], device=batch.tokens.device)
    last = batch.tokens[rows, (batch.seq_len - 1).clamp(min=0)]
    done = (last == eos) & (batch.seq_len > batch.prompt_len)
    batch.end = torch.where(done, batch.seq_len, batch.end)


def new_tokens(batch: Batch, max_new_tokens: int) -> list[np.ndarray]:
    """Each row's new tokens: ``max_new_tokens`` of them, or up to and including its eos."""
    out = batch.tokens.cpu().numpy()
    ends = torch.minimum(batch.seq_len, batch.prompt_len + max_new_tokens).tolist()
    return [out[b, p:e].copy() for b, (p, e) in enumerate(zip(batch.prompt_len.tolist(), ends))]

"""Adapter: any Hugging Face causal language model as a model of the decoder's contract.

Needs ``transformers`` (``pip install "spectheory[hf]"``). Nothing is ever downloaded:
:meth:`HFCausalLM.from_pretrained` only opens local folders.

The adapter's cache (:class:`HFKVCache`) is the model's own ``past_key_values`` (a
``DynamicCache``) plus, per row, which cached slots are live and at which position. A
cached call with row starts ``start[b]`` first drops every slot at a position
``>= start[b]`` (the rollback after a rejection), crops slots that are dead in every row
(for one sequence this is exactly HF's ``cache.crop``), then runs the model on the new ids
only, with ``position_ids = start[b] + i`` and an ``attention_mask`` that hides dead and
padding slots. Rows of a ragged batch thus share one batched call; when dead slots pile up
inside the cache it is compacted (each row's live slots gathered to the right). Cost per
call: the new tokens only, like HF's own generation.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from .batching import DecoderModel, as_torch_dtype
from .hf_tree import accepts_tree_mask, hf_keep_path, hf_tree_logits

if TYPE_CHECKING:
    from .tree_layout import TreeCall

__all__ = ["HFCausalLM", "HFKVCache", "as_torch_dtype"]  # as_torch_dtype: batching's, re-exported


def _layers(cache):
    """(object, key attribute, value attribute) of every layer of a DynamicCache (old and new API)."""
    if hasattr(cache, "layers"):
        return [
            (layer, "keys", "values") for layer in cache.layers if getattr(layer, "keys", None) is not None
        ]
    return [(cache.key_cache, i, None) for i in range(len(cache.key_cache))] + [
        (cache.value_cache, i, None) for i in range(len(cache.value_cache))
    ]


def _map_kv(cache: Any, fn: Callable[[torch.Tensor], torch.Tensor]) -> None:
    """Replace every cached key/value tensor ``t`` (``[B, H, P, D]``) by ``fn(t)``."""
    for obj, k, v in _layers(cache):
        if v is None:  # legacy lists: obj[k] is one tensor
            obj[k] = fn(obj[k])
        else:
            setattr(obj, k, fn(getattr(obj, k)))
            setattr(obj, v, fn(getattr(obj, v)))


class HFKVCache:
    """The adapter's cache: HF ``past_key_values`` plus the bookkeeping of live slots.

    Attributes
    ----------
    kv : transformers.DynamicCache or None
        The model's cache (``None`` before the first call).
    position : LongTensor ``[B, P]``
        Token position held by each physical slot.
    live : BoolTensor ``[B, P]``
        Whether the slot belongs to the row's current prefix (dead: rolled back or padding).
    node : LongTensor ``[B, P]``
        Level-order offset of a draft-tree node scored in this round (tree attention,
        :mod:`spectheory.decoder.hf_tree`), ``-1`` for committed slots.
    """

    def __init__(self, batch_size: int, max_len: int, device: str | torch.device | None = None) -> None:
        self.batch_size, self.max_len, self.device = batch_size, max_len, device
        self.kv: Any = None  # a transformers DynamicCache once used
        self.position = torch.zeros(batch_size, 0, dtype=torch.int64, device=device)
        self.live = torch.zeros(batch_size, 0, dtype=torch.bool, device=device)
        self.node = torch.zeros(batch_size, 0, dtype=torch.int64, device=device)

    @property
    def physical_len(self) -> int:
        return self.position.shape[1]

    def rollback(self, start: torch.Tensor) -> None:
        """Kill slots at positions ``>= start[b]``; crop slots dead in every row; compact if sparse."""
        if self.physical_len == 0:
            return
        self.live &= self.position < start[:, None]
        alive_cols = self.live.any(0).nonzero()
        keep = int(alive_cols.max().item()) + 1 if alive_cols.numel() else 0
        if keep < self.physical_len:
            self._select(slice(None), keep)
        n_live = int(self.live.sum(1).max().item()) if keep else 0
        if self.physical_len > 2 * n_live + 32:  # dead slots inside the cache: gather live ones
            order = (
                torch.sort(self.live.to(torch.int8), dim=1, stable=True).indices[:, -n_live:]
                if n_live
                else torch.zeros(self.batch_size, 0, dtype=torch.int64, device=self.live.device)
            )
            self._gather(order)

    def _select(self, _rows: Any, keep: int) -> None:
        self.position, self.live, self.node = (
            self.position[:, :keep],
            self.live[:, :keep],
            self.node[:, :keep],
        )
        if self.kv is not None:
            _map_kv(self.kv, lambda t: t[:, :, :keep])

    def _gather(self, order: torch.Tensor) -> None:
        self.position = self.position.gather(1, order)
        self.live = self.live.gather(1, order)
        self.node = self.node.gather(1, order)
        if self.kv is not None:
            _map_kv(
                self.kv, lambda t: t.gather(2, order[:, None, :, None].expand(-1, t.shape[1], -1, t.shape[3]))
            )

    def append(self, positions: torch.Tensor, node: torch.Tensor | None = None) -> None:
        """Record new live slots at ``positions [B, L]`` (tree nodes: their offsets ``node``)."""
        self.position = torch.cat([self.position, positions], 1)
        self.live = torch.cat([self.live, torch.ones_like(positions, dtype=torch.bool)], 1)
        self.node = torch.cat([self.node, torch.full_like(positions, -1) if node is None else node], 1)

    def keep_path(self, root_slot: torch.Tensor, path_offsets: torch.Tensor, n_keep: torch.Tensor) -> None:
        """Keep a draft tree's accepted path (:func:`~spectheory.decoder.hf_tree.hf_keep_path`)."""
        hf_keep_path(self, root_slot, path_offsets, n_keep)

    def __repr__(self):
        return f"HFKVCache(batch_size={self.batch_size}, max_len={self.max_len}, physical_len={self.physical_len})"


def _config_value(config, *names):
    for name in names:
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


class HFCausalLM(DecoderModel, nn.Module):
    """Wrap a ``transformers`` causal LM (``AutoModelForCausalLM``-like) into the model contract.

    Parameters
    ----------
    hf_model : transformers.PreTrainedModel
        Returns ``.logits [B, L, V']`` from ``hf_model(input_ids=ids)`` and accepts
        ``past_key_values``, ``position_ids`` and ``attention_mask`` (every decoder-only model
        of ``transformers`` does).
    vocab_size : int, optional
        Logits are cut to the first ``vocab_size`` entries (default: the output embedding
        size, else ``config.vocab_size``). Use it to align a pair whose heads are padded
        differently.
    max_seq_len : int, optional
        Default ``config.max_position_embeddings`` or ``n_positions`` (``None`` if absent).
    device, dtype : optional
        Where and in which floating type to run (``dtype`` may be a name: ``"float16"``). The
        caller's ``hf_model`` is never changed: when either is given the adapter holds a moved
        copy (``copy.deepcopy``). Note that ``speculative_generate(..., device=, dtype=)`` moves
        the adapter (and the model it holds) in place.

    Examples
    --------
    >>> import torch
    >>> from transformers import GPT2Config, GPT2LMHeadModel
    >>> lm = HFCausalLM(GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40, n_positions=32)))
    >>> ids = torch.tensor([[1, 2, 3, 4]])
    >>> cache = lm.new_cache(1, 32)
    >>> _ = lm(ids[:, :3], cache=cache, start=torch.tensor([0]))
    >>> last = lm(ids[:, 3:], cache=cache, start=torch.tensor([3]))
    >>> lm.vocab_size, lm.max_seq_len, torch.allclose(last[0, 0], lm(ids)[0, 3], atol=1e-5)
    (40, 32, True)
    """

    _tree_mask_ok: bool  # set by accepts_tree_mask once probed (supports_tree_cache)

    #: The tokenizer, when the adapter came with one (:func:`~spectheory.decoder.load_pretrained`).
    tokenizer: Any = None
    #: The shipped name it was loaded by (``"smollm2-135m"``), else ``None``.
    pretrained_name: str | None = None

    def __init__(
        self,
        hf_model: Any,
        vocab_size: int | None = None,
        max_seq_len: int | None = None,
        device: str | torch.device | None = None,
        dtype: torch.dtype | str | None = None,
    ) -> None:
        super().__init__()
        if isinstance(hf_model, HFCausalLM):
            raise ValueError("hf_model: already an HFCausalLM (wrap the transformers model once)")
        if not hasattr(hf_model, "config") or not callable(hf_model):
            raise ValueError(f"hf_model: expected a transformers causal LM, got {type(hf_model).__name__}")
        dtype = as_torch_dtype(dtype)
        if device is not None or dtype is not None:
            hf_model = copy.deepcopy(hf_model).to(device=device, dtype=dtype)
        self.model = hf_model.eval()
        config = hf_model.config
        if vocab_size is None:
            head = hf_model.get_output_embeddings() if hasattr(hf_model, "get_output_embeddings") else None
            weight = getattr(head, "weight", None)
            vocab_size = int(weight.shape[0]) if weight is not None else _config_value(config, "vocab_size")
        if not isinstance(vocab_size, int) or vocab_size < 1:
            raise ValueError(f"vocab_size: expected a positive int, got {vocab_size!r}")
        self.vocab_size = vocab_size
        self.max_seq_len = (
            max_seq_len
            if max_seq_len is not None
            else _config_value(config, "max_position_embeddings", "n_positions", "n_ctx")
        )
        self.eos_token_id = getattr(config, "eos_token_id", None)
        import inspect

        params = inspect.signature(hf_model.forward).parameters
        self._cache_arg = "cache" if "cache" in params else "past_key_values"  # renamed in transformers 5
        #: Whether ``forward`` takes ``logits_to_keep`` (the head on the last positions only).
        self.accepts_logits_to_keep = "logits_to_keep" in params

    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike,
        device: str | torch.device | None = None,
        dtype: torch.dtype | str | None = None,
        vocab_size: int | None = None,
        max_seq_len: int | None = None,
        **kwargs: Any,
    ) -> HFCausalLM:
        """Load ``AutoModelForCausalLM`` from a LOCAL folder (never downloads).

        ``dtype`` may be a torch dtype or its name (``"float16"``).

        Raises
        ------
        ValueError
            ``path`` is not an existing directory, or ``dtype`` is not a floating type.
        """
        from transformers import AutoModelForCausalLM

        dtype = as_torch_dtype(dtype)
        if not os.path.isdir(path):
            raise ValueError(f"path: {path!r} is not a local directory (nothing is downloaded)")
        model: Any = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **kwargs)
        if device is not None or dtype is not None:
            model = model.to(device=device, dtype=dtype)  # our own fresh copy: moving it is fine
        return cls(model, vocab_size=vocab_size, max_seq_len=max_seq_len)

    def empty_cache(
        self, batch_size: int, max_len: int, device: str | torch.device | None, dtype: torch.dtype | None
    ) -> HFKVCache:
        """An empty :class:`HFKVCache` (its dtype is the model's: ``dtype`` is not read)."""
        if device is None:
            device = next(self.model.parameters()).device
        return HFKVCache(batch_size, max_len, device)

    # ------------------------------------------ tree attention (decoder.tree_attention's contract)
    @property
    def supports_tree_cache(self) -> bool:
        """Whether the wrapped model honours a 4-d attention mask (probed once, a warning if not:
        :func:`~spectheory.decoder.hf_tree.accepts_tree_mask`)."""
        return accepts_tree_mask(self)

    def new_tree_cache(
        self, batch_size: int, max_len: int, device: str | torch.device | None, dtype: torch.dtype
    ) -> HFKVCache:
        """A cache of ``max_len`` slots, capped at ``max_seq_len`` (the tree's slots are physical:
        it never needs room past the positions)."""
        cap = max_len if self.max_seq_len is None else min(max_len, self.max_seq_len)
        return self.new_cache(batch_size, cap, device=device)

    def score_tree(self, cache: HFKVCache | None, call: TreeCall, return_hidden: bool) -> torch.Tensor | None:
        """The tree nodes in one call through a 4-d mask
        (:func:`~spectheory.decoder.hf_tree.hf_tree_logits`); ``None`` (recompute the paths)
        without a cache or for ``return_hidden``."""
        if cache is None or return_hidden:
            return None
        return hf_tree_logits(self, cache, call)

    def cached_call(
        self,
        cache: HFKVCache,
        ids: torch.Tensor,
        position_ids: torch.Tensor,
        attention_mask: torch.Tensor,
        node: torch.Tensor | None = None,
        logits_to_keep: int = 0,
    ) -> torch.Tensor:
        """Run the wrapped model on ``ids [B, L]`` over ``cache`` (rolled back by the caller);
        keep the cache it returns, record the new slots (:meth:`HFKVCache.append`); the logits
        (of the last ``logits_to_keep`` positions only, when positive)."""
        from transformers import DynamicCache

        if cache.kv is None:
            cache.kv = DynamicCache()
        keep = {"logits_to_keep": logits_to_keep} if logits_to_keep > 0 else {}
        out = self.model(
            input_ids=ids,
            position_ids=position_ids,
            attention_mask=attention_mask,
            use_cache=True,
            **keep,
            **{self._cache_arg: cache.kv},
        )
        returned = out.get(self._cache_arg, None) if hasattr(out, "get") else None
        if returned is not None:
            cache.kv = returned
        cache.append(position_ids, node)
        return out.logits[..., : self.vocab_size]

    def forward(
        self,
        ids: torch.Tensor,
        cache: HFKVCache | None = None,
        start: torch.Tensor | None = None,
        logits_to_keep: int = 0,
    ) -> torch.Tensor:
        """Logits ``[B, L, V]`` for ``ids [B, L]``; with a cache, rows start at ``start [B]``.

        ``logits_to_keep > 0`` (cached calls of a model that takes it,
        ``accepts_logits_to_keep``): only the last ``logits_to_keep`` positions' logits,
        ``[B, logits_to_keep, V]``, the output head skipped elsewhere (a prefill needs one)."""
        if logits_to_keep and (not self.accepts_logits_to_keep or cache is None):
            raise ValueError("logits_to_keep: needs a cache and a wrapped model that takes it")
        if ids.ndim != 2:
            raise ValueError(f"ids: expected shape [B, L], got {tuple(ids.shape)}")
        if cache is None:
            return self.model(input_ids=ids, use_cache=False).logits[..., : self.vocab_size]
        B, L = ids.shape
        if start is None or start.shape != (B,) or B != cache.batch_size:
            raise ValueError("start: expected a LongTensor [B] matching ids and the cache batch")
        if int(start.min()) < 0 or int((start + L).max()) > cache.max_len:
            raise ValueError(f"start: positions must lie in [0, {cache.max_len}) for this cache")
        cache.rollback(start)
        position_ids = start[:, None] + torch.arange(L, device=ids.device)
        # hide rolled-back and padding slots (all ones otherwise: HF then takes its causal fast path)
        mask = torch.cat([cache.live, torch.ones(B, L, dtype=torch.bool, device=ids.device)], 1).long()
        return self.cached_call(cache, ids, position_ids, mask, logits_to_keep=logits_to_keep)

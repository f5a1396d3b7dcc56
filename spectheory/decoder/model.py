"""A byte-level GPT, with a KV cache that supports ragged rollback.

Read top to bottom: config -> attention -> MLP -> block -> GPT. The KV cache lives in
:mod:`spectheory.decoder.kv_cache`, the checks of a call's arguments in
:mod:`spectheory.decoder.call_checks` (:class:`KVCache` and :func:`check_ids_start` are
re-exported here).
Shapes use B = batch, L = tokens in this call, T = cache length, H = heads,
D = head dim, C = n_embd = H * D, V = vocab_size = 256 (bytes).

The model interface shared by every model in ``spectheory.decoder`` (GPT, n-gram,
adapters) is:

* ``model(ids)`` with ``ids`` a LongTensor ``[B, L]`` returns logits ``[B, L, V]``;
  causal, no cache needed.
* ``cache = model.new_cache(batch_size, max_len, device=None, dtype=None)``.
* ``model(ids, cache=cache, start=start)`` with ``start`` a LongTensor ``[B]`` (the
  position of ``ids[b, 0]`` in sequence ``b``) writes keys/values at positions
  ``start[b] .. start[b] + L - 1`` and lets query ``i`` of sequence ``b`` attend to the
  cache positions ``< start[b] + i + 1``. Entries past that are stale and masked, so
  rolling back after a rejection is just calling again with a smaller ``start``.
  Cached logits equal the uncached logits of the full sequence.
* attributes ``vocab_size`` and ``max_seq_len`` (every position must be ``< max_seq_len``).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, NamedTuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from .batching import DecoderModel
from .call_checks import check_ids_start, check_tree_call
from .kv_cache import KVCache
from .tree_layout import TreeCall, masked_tree_call

__all__ = ["GPTConfig", "KVCache", "GPT", "check_ids_start"]


# ----------------------------------------------------------------------------- config
@dataclass
class GPTConfig:
    """Architecture of a :class:`GPT`.

    Parameters
    ----------
    n_layer, n_head, n_embd : int
        Transformer blocks, attention heads per block, residual width
        (``n_embd % n_head == 0``).
    block_size : int
        Context length: positions ``0 .. block_size - 1`` have learned embeddings.
    vocab_size : int
        256 for bytes.

    Examples
    --------
    >>> GPTConfig(n_layer=1, n_head=2, n_embd=32, block_size=64).head_dim
    16
    """

    n_layer: int = 4
    n_head: int = 4
    n_embd: int = 256
    block_size: int = 256
    vocab_size: int = 256

    def __post_init__(self):
        for name in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name} must be a positive int, got {value!r}")
        if self.n_embd % self.n_head:
            raise ValueError(f"n_embd ({self.n_embd}) must be divisible by n_head ({self.n_head})")

    @property
    def head_dim(self) -> int:
        return self.n_embd // self.n_head

    def to_dict(self) -> dict:
        return asdict(self)


# ----------------------------------------------------------------------------- layers
class LayerCache(NamedTuple):
    """What a cached call hands each layer: its keys and values ``k, v [B, T, H, D]`` (written
    in place), the slots ``pos [B, L]`` the new keys/values go to, and ``visible [B, L, T_used]``
    (True = attend): which cache slots each query sees (the causal rule, or a tree's mask);
    ``T_used`` bounds the slots read."""

    k: torch.Tensor
    v: torch.Tensor
    pos: torch.Tensor
    visible: torch.Tensor


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention, optionally reading/writing a KV cache."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.n_head, self.head_dim = config.n_head, config.head_dim
        self.qkv = nn.Linear(config.n_embd, 3 * config.n_embd)  # C -> 3C
        self.proj = nn.Linear(config.n_embd, config.n_embd)  # C -> C

    def forward(self, x: torch.Tensor, layer_cache: LayerCache | None = None) -> torch.Tensor:
        """``x [B, L, C]``, attending over the cache slots ``layer_cache`` makes visible (causal
        and uncached without one)."""
        B, L, C = x.shape
        q, k, v = self.qkv(x).split(C, dim=2)  # 3 x [B, L, C]
        q = q.view(B, L, self.n_head, self.head_dim)  # [B, L, H, D]
        k = k.view(B, L, self.n_head, self.head_dim)  # [B, L, H, D]
        v = v.view(B, L, self.n_head, self.head_dim)  # [B, L, H, D]
        if layer_cache is None:
            y = F.scaled_dot_product_attention(
                q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), is_causal=True
            )  # [B, H, L, D]
        else:
            k_cache, v_cache, pos, visible = layer_cache  # k, v [B, T, H, D]
            rows = torch.arange(B, device=x.device)[:, None]  # [B, 1]
            k_cache[rows, pos] = k.to(k_cache.dtype)  # write at [b, pos[b, i]]
            v_cache[rows, pos] = v.to(v_cache.dtype)
            T_used = visible.shape[2]  # keys past this are never visible
            keys = k_cache[:, :T_used].transpose(1, 2)  # [B, H, T_used, D]
            values = v_cache[:, :T_used].transpose(1, 2)  # [B, H, T_used, D]
            y = F.scaled_dot_product_attention(
                q.transpose(1, 2), keys.to(q.dtype), values.to(q.dtype), attn_mask=visible[:, None]
            )  # [B, H, L, D]
        y = y.transpose(1, 2).reshape(B, L, C)  # [B, L, C]
        return self.proj(y)


class MLP(nn.Module):
    """Position-wise feed-forward: C -> 4C -> GELU -> C."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.fc = nn.Linear(config.n_embd, 4 * config.n_embd)
        self.proj = nn.Linear(4 * config.n_embd, config.n_embd)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x)))  # [B, L, C]


class Block(nn.Module):
    """Pre-LayerNorm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.ln_1 = nn.LayerNorm(config.n_embd)
        self.attn = CausalSelfAttention(config)
        self.ln_2 = nn.LayerNorm(config.n_embd)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor, layer_cache: LayerCache | None = None) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x), layer_cache)
        x = x + self.mlp(self.ln_2(x))
        return x  # [B, L, C]


# ----------------------------------------------------------------------------- model
class GPT(DecoderModel, nn.Module):
    """Byte-level GPT: token + learned position embeddings, pre-LN blocks, tied head.

    ``logits = LayerNorm(blocks(wte[ids] + wpe[pos])) @ wte.T`` with shape ``[B, L, V]``;
    ``softmax(logits[b, i])`` is the model's next-byte law after ``ids[b, :i+1]``.

    Examples
    --------
    >>> import torch
    >>> model = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32)).eval()
    >>> ids = torch.tensor([[104, 105, 33]])
    >>> model(ids).shape
    torch.Size([1, 3, 256])
    >>> cache = model.new_cache(1, 32)
    >>> a = model(ids[:, :2], cache=cache, start=torch.tensor([0]))
    >>> b = model(ids[:, 2:], cache=cache, start=torch.tensor([2]))
    >>> torch.allclose(b[0, 0], model(ids)[0, 2], atol=1e-5)
    True
    """

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        self.wte = nn.Embedding(config.vocab_size, config.n_embd)  # token embedding, tied head
        self.wpe = nn.Embedding(config.block_size, config.n_embd)  # learned positions
        self.blocks = nn.ModuleList(Block(config) for _ in range(config.n_layer))
        self.ln_f = nn.LayerNorm(config.n_embd)
        self.apply(self._init_weights)
        for name, p in self.named_parameters():  # GPT-2 scaled residual init
            if name.endswith("proj.weight"):
                nn.init.normal_(p, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    @staticmethod
    def _init_weights(module):
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    @property
    def vocab_size(self) -> int:
        return self.config.vocab_size

    @property
    def max_seq_len(self) -> int:
        return self.config.block_size

    def num_params(self) -> int:
        """Number of parameters (the tied head counted once)."""
        return sum(p.numel() for p in self.parameters())

    def empty_cache(
        self, batch_size: int, max_len: int, device: str | torch.device | None, dtype: torch.dtype | None
    ) -> KVCache:
        """An empty :class:`KVCache` (:meth:`new_cache` checks the sizes); device and dtype
        default to the model's."""
        ref = self.wte.weight
        c = self.config
        return KVCache(
            c.n_layer, batch_size, max_len, c.n_head, c.head_dim, device or ref.device, dtype or ref.dtype
        )

    # ------------------------------------------ tree attention (decoder.tree_attention's contract)
    #: The cached call takes a tree mask and per-node positions (``positions=``, ``attn_mask=``).
    supports_tree_cache = True

    def score_tree(self, cache: KVCache | None, call: TreeCall, return_hidden: bool) -> Any:
        """The tree nodes in one masked cached call (the mask spans the slots in use); ``None``
        without a cache."""
        if cache is None:
            return None
        width = int(call.root_slot.max()) + call.hi
        return masked_tree_call(self, cache, call, width, return_hidden)

    def forward(
        self,
        ids: torch.Tensor,
        cache: KVCache | None = None,
        start: torch.Tensor | None = None,
        positions: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
        return_hidden: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
        """Logits ``[B, L, V]`` for ``ids [B, L]``; see the module docstring for caching.

        Tree attention (used by :mod:`spectheory.decoder.tree_attention`): with a cache,
        ``positions [B, L]`` replaces the position ids ``start + i`` of the embeddings and
        ``attn_mask [B, L, T]`` (bool, True = attend, ``T >= start + L``) replaces the causal
        visibility of the cache slots; keys/values are still written at slots
        ``start .. start + L - 1``. ``return_hidden=True`` also returns the final hidden
        state ``ln_f(x) [B, L, C]`` (the input of the tied LM head; Medusa heads read it).
        """
        cache_batch = cache.batch_size if cache is not None else None
        cache_len = cache.max_len if cache is not None else None
        if positions is None and attn_mask is None:
            pos = check_ids_start(ids, cache, start, self.max_seq_len, cache_batch, cache_len)
            emb_pos = pos
        else:
            pos, emb_pos = check_tree_call(ids, cache, start, positions, attn_mask, self.max_seq_len)
        B, L = ids.shape
        if emb_pos is None:
            x = self.wte(ids) + self.wpe(torch.arange(L, device=ids.device))  # [B, L, C]
        else:
            x = self.wte(ids) + self.wpe(emb_pos)  # [B, L, C]
        visible = None
        if pos is not None:  # cache slots each query sees, built once for all layers
            T_used = int(pos.max()) + 1  # keys past the last written slot are never visible
            if attn_mask is None:  # causal: slot t is visible to the query at position p iff t <= p
                key_pos = torch.arange(T_used, device=ids.device)  # [T_used]
                visible = key_pos[None, None, :] <= pos[:, :, None]  # [B, L, T_used]
            else:  # tree attention: the caller's mask
                visible = attn_mask[:, :, :T_used]
        for layer, block in enumerate(self.blocks):
            layer_cache = None
            if cache is not None and pos is not None and visible is not None:
                layer_cache = LayerCache(cache.k[layer], cache.v[layer], pos, visible)
            x = block(x, layer_cache)  # [B, L, C]
        x = self.ln_f(x)  # [B, L, C]
        logits = x @ self.wte.weight.T  # [B, L, V]
        return (logits, x) if return_hidden else logits

    def static_forward(
        self,
        ids: torch.Tensor,
        k: torch.Tensor,
        v: torch.Tensor,
        start: torch.Tensor,
        positions: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Cached logits ``[B, L, V]`` with fixed shapes and no host read, for ``torch.compile``
        and CUDA graphs (:mod:`spectheory.decoder.compiled`).

        The same model as :meth:`forward` with ``cache`` (``k = cache.k``, ``v = cache.v``, both
        ``[n_layer, B, T, H, D]``), but every query attends over all ``T`` cache slots instead of
        slicing the slots in use (which needs the largest position on the host): under the
        causal mask ``slot <= position``, or, for tree attention, under ``attn_mask [B, L, T]``
        (bool, True = attend) with position ids ``positions [B, L]`` (keys/values still written
        at slots ``start .. start + L - 1``). Nothing is validated: the caller (the decoder)
        keeps ``start + L <= T``. Masked slots add exact zeros, so the logits equal
        :meth:`forward`'s up to the order of floating-point sums.
        """
        B, L = ids.shape
        slot = start[:, None] + torch.arange(L, device=ids.device)  # [B, L]
        if attn_mask is None:
            cache_slots = torch.arange(k.shape[2], device=ids.device)  # [T]
            attn_mask = cache_slots[None, None, :] <= slot[:, :, None]  # [B, L, T]
        x = self.wte(ids) + self.wpe(slot if positions is None else positions)  # [B, L, C]
        for layer, block in enumerate(self.blocks):
            x = block(x, LayerCache(k[layer], v[layer], slot, attn_mask))  # [B, L, C]
        return self.ln_f(x) @ self.wte.weight.T  # [B, L, V]

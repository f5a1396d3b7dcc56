r"""Tree attention: score a whole draft tree in one model call, keep the accepted path.

A round of tree decoding starts with ``n`` committed tokens ``x_0..x_{n-1}``; the last
one, ``x_{n-1}``, is the *root* of the draft tree (:class:`~spectheory.trees.DraftTree`,
node 0) and is not yet in the model's KV cache. The tree's nodes are laid out in
*level order* (breadth first, slot order kept) at consecutive cache slots after the
prefix: node with level-order offset ``o`` (root ``o = 0``) sits at slot ``n - 1 + o``
and has position id ``n - 1 + depth``. Node ``i``'s query attends to

- every committed slot ``< n - 1`` (the cached prefix), and
- the slots of its ancestors and itself in the tree (the *tree mask*),

so its logits are exactly those of the sequence ``prefix + path(i)``. Level order makes
the nodes of one depth contiguous, so a draft model can extend the tree level by level
with one call per level. After verification, :func:`compact_path` copies the keys/values
of the accepted path's nodes to slots ``n, n + 1, ...`` (their true positions) and the
rest of the tree is dropped (it is stale: later calls never attend past the path).

Models: the shipped :class:`~spectheory.decoder.model.GPT` takes the mask and positions
directly (``positions=``, ``attn_mask=``); a Hugging Face model wrapped in
:class:`~spectheory.decoder.hf.HFCausalLM` takes them as a 4-d attention mask and
``position_ids`` when it honours one (:mod:`spectheory.decoder.hf_tree`, probed once); an
order-2 n-gram needs no context (its law after a node depends on the node's token only);
any other model falls back to recomputing each node's full path without cache (correct,
slower).

Examples
--------
>>> from spectheory.trees import DraftTree
>>> lay = TreeLayout(DraftTree.from_branching([2, 1]))
>>> lay.order.tolist(), lay.offset_depth.tolist()     # level order: root, depth 1, depth 2
([0, 1, 3, 2, 4], [0, 1, 1, 2, 2])
>>> lay.ancestors.astype(int)[3].tolist()             # offset 3 = node 2: root, node 1, itself
[1, 1, 0, 1, 0]
"""

from __future__ import annotations

from typing import Any

import torch

from .compiled import CompiledLM
from .hf import HFCausalLM, HFKVCache
from .hf_tree import accepts_tree_mask, hf_keep_path, hf_tree_logits
from .model import GPT, KVCache
from .ngram import NGramModel
from .tree_layout import TreeLayout, tree_attn_mask  # noqa: F401  (the layout, re-exported)

__all__ = [
    "tree_logits",
    "compact_path",
    "new_tree_cache",
    "supports_tree_cache",
]


def supports_tree_cache(model: object) -> bool:
    """True for models whose cached call takes a tree mask and per-node positions: the shipped
    GPT, and Hugging Face models that honour a 4-d attention mask."""
    return isinstance(model, (GPT, CompiledLM)) or (
        isinstance(model, HFCausalLM) and accepts_tree_mask(model)
    )


def new_tree_cache(
    model: Any, batch_size: int, max_len: int, device: str | torch.device | None, dtype: torch.dtype
) -> Any:
    """A cache with room for the tree past ``max_seq_len`` slots (positions stay in range)."""
    if isinstance(model, (GPT, CompiledLM)):
        c = (model.model if isinstance(model, CompiledLM) else model).config
        cache = KVCache(c.n_layer, batch_size, max_len, c.n_head, c.head_dim, device, dtype)
        return model.pin(cache) if isinstance(model, CompiledLM) else cache
    if isinstance(model, HFCausalLM):
        cap = max_len if model.max_seq_len is None else min(max_len, model.max_seq_len)
        return model.new_cache(batch_size, cap, device=device)
    return None


def _fallback_logits(model, prefix, root_slot, node_tokens, layout, lo, hi):
    """Recompute each node's full path (prefix + ancestors + node) without a cache."""
    B = prefix.shape[0]
    anc = torch.as_tensor(layout.ancestors, device=prefix.device)
    depth = layout.offset_depth
    seqs = []
    for o in range(lo, hi):
        path = torch.nonzero(anc[o]).flatten()  # offsets root -> node, level order
        toks = node_tokens[:, path]  # [B, d + 1]
        seqs.append((toks, int(depth[o])))
    L = int(root_slot.max()) + int(depth[lo:hi].max()) + 1
    out = []
    for toks, d in seqs:
        ids = torch.zeros(B, L, dtype=torch.long, device=prefix.device)
        w = min(prefix.shape[1], L)
        ids[:, :w] = prefix[:, :w]
        rows = torch.arange(B, device=prefix.device)[:, None]
        cols = root_slot[:, None] + torch.arange(d + 1, device=prefix.device)[None, :]
        ids[rows, cols] = toks
        logits = model(ids)
        out.append(logits[torch.arange(B), root_slot + d])
    return torch.stack(out, 1)


def tree_logits(
    model: Any,
    cache: Any,
    prefix: torch.Tensor,
    root_slot: torch.Tensor,
    node_tokens: torch.Tensor,
    layout: TreeLayout,
    lo: int,
    hi: int,
    return_hidden: bool = False,
) -> Any:
    """Logits ``[B, hi - lo, V]`` after the nodes at offsets ``lo .. hi - 1``, in one call.

    Parameters
    ----------
    model : model of the decoder contract
    cache : the model's cache from :func:`new_tree_cache` (GPT), or ``None``
    prefix : LongTensor [B, cap]
        Committed tokens (``prefix[b, :root_slot[b] + 1]`` valid, the root last).
    root_slot : LongTensor [B]
        ``n - 1``: slot (and position) of the root. Slots ``< root_slot`` must be cached
        (GPT) when ``lo = 0``; for ``lo > 0`` the offsets ``< lo`` must have been fed.
    node_tokens : LongTensor [B, N]
        Tokens in level order (offset 0 = the root; absent nodes any valid id).
    """
    ids = node_tokens[:, lo:hi]
    if isinstance(model, (GPT, CompiledLM)):
        _, dep = layout.torch_tables(root_slot.device)
        positions = root_slot[:, None] + dep[lo:hi][None, :]
        # the fixed-shape path attends over the whole cache (no host read); eager, the slots in use
        width = cache.max_len if isinstance(model, CompiledLM) else int(root_slot.max()) + hi
        mask = tree_attn_mask(layout, root_slot, lo, hi, width)
        return model(
            ids,
            cache=cache,
            start=root_slot + lo,
            positions=positions,
            attn_mask=mask,
            return_hidden=return_hidden,
        )
    if return_hidden:
        raise ValueError(
            "return_hidden: only the shipped GPT (or its compile_model wrapper) returns hidden states"
        )
    if isinstance(cache, HFKVCache):
        return hf_tree_logits(model, cache, root_slot, node_tokens, layout, lo, hi)
    if isinstance(model, NGramModel) and model.order <= 2:
        B, L = ids.shape
        return model(ids.reshape(B * L, 1)).reshape(B, L, -1)
    return _fallback_logits(model, prefix, root_slot, node_tokens, layout, lo, hi)


def compact_path(
    cache: Any, root_slot: torch.Tensor, path_offsets: torch.Tensor, n_keep: torch.Tensor
) -> None:
    """Keep the accepted path in a GPT :class:`KVCache`: copy slot ``root + path_offsets[b, d-1]``
    to slot ``root + d`` for ``d = 1 .. n_keep[b]`` (the rest of the tree becomes stale).

    Safe in place: in level order a node of depth ``d`` has offset ``>= d``, so a copy never
    overwrites a source still to be read (sources are read before any write, all at once).
    """
    if cache is None or path_offsets.shape[1] == 0:
        return
    if isinstance(cache, HFKVCache):
        hf_keep_path(cache, root_slot, path_offsets, n_keep)
        return
    D = path_offsets.shape[1]
    d = torch.arange(1, D + 1, device=root_slot.device)[None, :]
    keep = d <= n_keep[:, None]  # [B, D]
    src = root_slot[:, None] + torch.where(keep, path_offsets, d)  # unchanged where not kept
    dst = root_slot[:, None] + d
    src = src.clamp(max=cache.max_len - 1)
    dst = dst.clamp(max=cache.max_len - 1)
    rows = torch.arange(root_slot.shape[0], device=root_slot.device)[:, None]
    for store in (cache.k, cache.v):  # [n_layer, B, T, H, Dh]
        moved = store[:, rows, src]  # [n_layer, B, D, H, Dh]
        store[:, rows, dst] = torch.where(keep[None, :, :, None, None], moved, store[:, rows, dst])

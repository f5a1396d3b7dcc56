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

Models: the tree path is a capability of each model adapter, which this module only calls.
A model that scores a tree in one cached call declares it with four members:

- ``supports_tree_cache`` (bool): its cached call takes a tree mask and per-node positions;
- ``new_tree_cache(batch_size, max_len, device, dtype)``: a cache with room for the tree past
  ``max_seq_len`` slots;
- ``tree_logits(cache, prefix, root_slot, node_tokens, layout, lo, hi, return_hidden=False)``:
  the logits after the nodes ``lo .. hi - 1``, or ``None`` when it cannot score this call (then
  the uncached recomputation below runs);
- ``compact_path(cache, root_slot, path_offsets, n_keep)``: keep the accepted path.

The package's own models write these members once, in
:class:`~spectheory.decoder.batching.DecoderModel` (``tree_logits`` hands each model's
``score_tree`` a :class:`~spectheory.decoder.tree_layout.TreeCall`). The shipped
:class:`~spectheory.decoder.model.GPT` (and its
:class:`~spectheory.decoder.compiled.CompiledLM` wrapper) takes the mask and positions
directly; a Hugging Face model wrapped in :class:`~spectheory.decoder.hf.HFCausalLM` takes
them as a 4-d attention mask and ``position_ids`` when it honours one
(:mod:`spectheory.decoder.hf_tree`, probed once); an order-2 n-gram
(:class:`~spectheory.decoder.ngram_model.NGramModel`) scores a tree without its cache (its law after
a node depends on the node's token only). Any other model of the decoder contract
declares nothing and falls back to recomputing each node's full path without cache (correct,
slower). The layout itself is :class:`~spectheory.decoder.tree_layout.TreeLayout`.

Examples
--------
>>> from spectheory.decoder.model import GPT, GPTConfig
>>> gpt = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32))
>>> supports_tree_cache(gpt), new_tree_cache(gpt, 1, 40, "cpu", gpt.wte.weight.dtype).max_len
(True, 40)
"""

from __future__ import annotations

from typing import Any

import torch

from .tree_layout import TreeLayout, tree_attn_mask  # noqa: F401  (the layout, re-exported)

__all__ = [
    "tree_logits",
    "compact_path",
    "new_tree_cache",
    "supports_tree_cache",
]


def supports_tree_cache(model: object) -> bool:
    """True for models whose cached call takes a tree mask and per-node positions (they declare
    ``supports_tree_cache``: the shipped GPT, Hugging Face models that honour a 4-d mask)."""
    return bool(getattr(model, "supports_tree_cache", False))


def new_tree_cache(
    model: Any, batch_size: int, max_len: int, device: str | torch.device | None, dtype: torch.dtype
) -> Any:
    """The model's tree cache (room for the tree past ``max_seq_len`` slots), ``None`` for a model
    without one."""
    if not supports_tree_cache(model):
        return None
    return model.new_tree_cache(batch_size, max_len, device, dtype)


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

    The model's own ``tree_logits`` scores the call when it declares one and does not return
    ``None``; otherwise each node's path is recomputed without cache (``return_hidden`` then
    raises a ValueError: only the shipped GPT returns hidden states).
    """
    own = getattr(model, "tree_logits", None)
    out = None
    if own is not None:
        out = own(cache, prefix, root_slot, node_tokens, layout, lo, hi, return_hidden=return_hidden)
    if out is not None:
        return out
    if return_hidden:
        raise ValueError(
            "return_hidden: only the shipped GPT (or its compile_model wrapper) returns hidden states"
        )
    return _fallback_logits(model, prefix, root_slot, node_tokens, layout, lo, hi)


def compact_path(
    model: Any, cache: Any, root_slot: torch.Tensor, path_offsets: torch.Tensor, n_keep: torch.Tensor
) -> None:
    """Keep the accepted path in the model's tree cache: the root and the first ``n_keep[b]`` nodes
    of ``path_offsets [B, D]`` (level-order offsets) end up at slots ``root + 0 .. n_keep[b]``,
    the rest of the tree becomes stale. Nothing to do without a cache.
    """
    if cache is None or path_offsets.shape[1] == 0:
        return
    model.compact_path(cache, root_slot, path_offsets, n_keep)

r"""Tree attention for Hugging Face models: a whole draft tree in one call through a 4-d mask.

The adapter's cache (:class:`~spectheory.decoder.hf.HFKVCache`) keeps, per physical slot, the
token position, whether the slot is live, and -- for the nodes of the draft tree scored in the
current round -- the node's level-order offset (``node``, ``-1`` for committed slots). A tree
call (:func:`hf_tree_logits`) feeds the nodes at offsets ``lo .. hi - 1`` with
``position_ids = root + depth`` and a float mask ``[B, 1, hi - lo, P + hi - lo]`` (0 = attend,
the dtype's minimum = hidden): node ``o`` attends to

- every live committed slot at a position ``<= root`` (the prefix and, for a draft model that
  fed the root with an ordinary call, the root), and
- every live tree slot whose node is an ancestor of ``o`` or ``o`` itself,

so its logits are those of ``prefix + path(o)``. Physical order never matters (the mask is
explicit). After verification :func:`hf_keep_path` turns the accepted path's slots into
committed slots and kills the rest of the tree; the adapter's rollback and compaction
(dead slots are cropped or gathered away) do the rest, so later ordinary calls (2-d mask)
see exactly the committed sequence.

``transformers`` passes a 4-d mask through unchanged in the models built on its
``masking_utils`` (GPT-2, Llama, ... in transformers >= 4.5x: "if the mask is already 4D,
simply return as-is"); :func:`accepts_tree_mask` checks it on the model itself with one tiny
probe and caches the answer. Models that refuse it fall back to recomputing every node's
path without cache (:func:`spectheory.decoder.tree_attention.tree_logits`), with a warning.

These functions are the adapter's tree capability: :class:`~spectheory.decoder.hf.HFCausalLM`
calls them from its ``supports_tree_cache`` and ``score_tree``, its cache from ``keep_path`` (so
this module does not import the adapter).
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import torch

if TYPE_CHECKING:
    from .tree_layout import TreeCall

__all__ = ["accepts_tree_mask", "hf_tree_logits", "hf_keep_path"]


def _float_mask(allowed, dtype):
    """Bool ``[B, M, P]`` -> additive float mask ``[B, 1, M, P]``."""
    zero = torch.zeros((), dtype=dtype, device=allowed.device)
    return torch.where(allowed, zero, torch.finfo(dtype).min)[:, None]


def _model_dtype(lm):
    p = next(lm.model.parameters(), None)
    return p.dtype if p is not None and p.is_floating_point() else torch.float32


def accepts_tree_mask(lm: Any) -> bool:
    """Whether the wrapped model honours a custom 4-d float mask with ``position_ids`` (probed once).

    The probe scores ``[a, b, c]`` with ``c`` hiding ``b`` and sitting at position 1, and
    compares with the plain call on ``[a, c]``. The answer is cached on the adapter.

    Examples
    --------
    >>> from transformers import GPT2Config, GPT2LMHeadModel
    >>> from spectheory.decoder.hf import HFCausalLM
    >>> lm = HFCausalLM(GPT2LMHeadModel(GPT2Config(n_layer=1, n_embd=16, n_head=2, vocab_size=40, n_positions=32)))
    >>> accepts_tree_mask(lm)
    True
    """
    ok = getattr(lm, "_tree_mask_ok", None)
    if ok is not None:
        return ok
    dev = next(lm.model.parameters()).device
    ids = torch.tensor([[1, 2, 3]], device=dev)
    allowed = torch.tensor([[[True, False, False], [True, True, False], [True, False, True]]], device=dev)
    try:
        with torch.inference_mode():
            got = lm.model(
                input_ids=ids,
                position_ids=torch.tensor([[0, 1, 1]], device=dev),
                attention_mask=_float_mask(allowed, _model_dtype(lm)),
                use_cache=False,
            ).logits[0, 2]
            ref = lm.model(input_ids=ids[:, [0, 2]], use_cache=False).logits[0, 1]
        tol = 1e-3 * max(1.0, float(ref.abs().max()))
        ok = bool(torch.isfinite(got).all() and (got - ref).abs().max() <= tol)
    except Exception:  # noqa: BLE001 -- any refusal means: no 4-d mask for this model
        ok = False
    if not ok:
        warnings.warn(
            f"{type(lm.model).__name__} does not honour a 4-d attention mask: tree decoding falls "
            "back to recomputing each node's path without cache (correct, slower)",
            stacklevel=2,
        )
    lm._tree_mask_ok = ok
    return ok


def hf_tree_logits(lm: Any, cache: Any, call: TreeCall) -> torch.Tensor:
    """Logits ``[B, hi - lo, V]`` after the tree nodes of ``call`` (offsets ``lo .. hi - 1``) in
    one call of the adapter ``lm``.

    ``call.root_slot [B]`` is the root's position. With ``lo = 0`` the call first rolls the cache
    back to the positions ``< root`` and feeds the root as offset 0 (the target's round); with
    ``lo > 0`` the offsets ``< lo`` (or the root as an ordinary committed slot) must be cached.
    """
    root_slot, lo, hi = call.root_slot, call.lo, call.hi
    anc, _ = call.layout.torch_tables(root_slot.device)
    if lo == 0:
        cache.rollback(root_slot)
    ids, positions = call.ids, call.positions()
    M = hi - lo
    new_node = torch.arange(lo, hi, device=ids.device)[None, :].expand(ids.shape[0], -1)
    node = torch.cat([cache.node, new_node], 1)  # [B, P + M]
    position = torch.cat([cache.position, positions], 1)
    live = torch.cat([cache.live, torch.ones_like(new_node, dtype=torch.bool)], 1)
    committed = (node < 0) & (position <= root_slot[:, None])
    tree_anc = anc[lo:hi][None, :, :].expand(ids.shape[0], -1, -1)  # [B, M, N]
    in_tree = (
        torch.gather(tree_anc, 2, node.clamp(min=0)[:, None, :].expand(-1, M, -1)) & (node >= 0)[:, None, :]
    )
    allowed = live[:, None, :] & (committed[:, None, :] | in_tree)
    return lm.cached_call(cache, ids, positions, _float_mask(allowed, _model_dtype(lm)), node=new_node)


def hf_keep_path(
    cache: Any, root_slot: torch.Tensor, path_offsets: torch.Tensor, n_keep: torch.Tensor
) -> None:
    """Keep the root and the first ``n_keep[b]`` nodes of ``path_offsets [B, D]`` as committed
    slots; kill every other tree slot of the round."""
    if cache.physical_len == 0:
        return
    D = path_offsets.shape[1]
    keep_off = torch.where(
        torch.arange(D, device=root_slot.device)[None, :] < n_keep[:, None], path_offsets, -2
    )
    tree = cache.node >= 0
    kept = tree & ((cache.node == 0) | (cache.node[:, :, None] == keep_off[:, None, :]).any(-1))
    cache.live &= ~tree | kept
    cache.node = torch.where(tree, torch.full_like(cache.node, -1), cache.node)

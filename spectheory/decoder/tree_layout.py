r"""The level-order layout of a draft tree in the KV cache, and its attention mask.

The layout of :mod:`spectheory.decoder.tree_attention` (its module docstring has the whole
picture): node with level-order offset ``o`` (root ``o = 0``) sits at slot ``root_slot + o``
and attends to the cached prefix and to its ancestors. Kept apart from the models so that
every tree path (the shipped GPT's, the Hugging Face one in :mod:`.hf_tree`, Medusa's) reads
the same layout without importing the others.

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

from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

if TYPE_CHECKING:
    from .._protocols import TreeLike

__all__ = ["TreeLayout", "TreeCall", "tree_attn_mask", "masked_tree_call"]


class TreeLayout:
    """Level-order layout of a :class:`~spectheory.trees.DraftTree` in the cache.

    Attributes
    ----------
    tree : TreeLike (a DraftTree)
    order : ndarray [N]
        ``order[o]`` = tree node at level-order offset ``o`` (``order[0] = 0``, the root).
    offset : ndarray [N]
        Inverse of ``order``: ``offset[node]``.
    offset_depth : ndarray [N]
        Depth of the node at each offset.
    ancestors : ndarray [N, N] bool
        ``ancestors[o, o']``: the node at ``o'`` is an ancestor of (or is) the node at ``o``.
    level_start : ndarray [D + 2]
        Offsets of depth ``d`` are ``level_start[d] .. level_start[d + 1] - 1``.
    """

    def __init__(self, tree: TreeLike) -> None:
        self.tree = tree
        depth = np.asarray(tree.depth)
        self.order = np.argsort(depth, kind="stable")
        self.offset = np.empty_like(self.order)
        self.offset[self.order] = np.arange(self.order.size)
        self.offset_depth = depth[self.order]
        N = self.order.size
        anc = np.zeros((N, N), dtype=bool)
        for o, node in enumerate(self.order):
            anc[o, 0] = True
            for u in tree.path_to(node):
                anc[o, self.offset[u]] = True
        self.ancestors = anc
        self.level_start = np.searchsorted(self.offset_depth, np.arange(tree.max_depth + 2))

    @property
    def n_nodes(self) -> int:
        return int(self.order.size)

    @cached_property
    def parent_offset(self) -> np.ndarray:
        """Offset of each offset's parent (-1 for the root)."""
        par = np.asarray(self.tree.parents)[self.order]
        return np.where(par >= 0, self.offset[np.maximum(par, 0)], -1)

    def torch_tables(self, device: str | torch.device) -> tuple[torch.Tensor, torch.Tensor]:
        """``(ancestors, offset_depth)`` as tensors on ``device`` (cached per device)."""
        key = str(device)
        cache = self.__dict__.setdefault("_tables", {})
        if key not in cache:
            cache[key] = (
                torch.as_tensor(self.ancestors, device=device),
                torch.as_tensor(self.offset_depth, device=device),
            )
        return cache[key]


def tree_attn_mask(layout: TreeLayout, root_slot: torch.Tensor, lo: int, hi: int, width: int) -> torch.Tensor:
    """Boolean mask ``[B, hi - lo, width]`` for the nodes at offsets ``lo .. hi - 1``.

    Row ``b``'s query at offset ``o`` may attend to slot ``t`` iff ``t < root_slot[b]``
    or ``t = root_slot[b] + o'`` with ``ancestors[o, o']``.
    """
    anc, _ = layout.torch_tables(root_slot.device)
    t = torch.arange(width, device=root_slot.device)
    rel = t[None, :] - root_slot[:, None]  # [B, width]
    inside = (rel >= 0) & (rel < layout.n_nodes)
    a = anc[lo:hi][None, :, :].expand(root_slot.shape[0], -1, -1)  # [B, L, N]
    tree_part = torch.gather(a, 2, rel.clamp(0, layout.n_nodes - 1)[:, None, :].expand(-1, hi - lo, -1))
    return (rel < 0)[:, None, :] | (inside[:, None, :] & tree_part)


@dataclass(frozen=True)
class TreeCall:
    """One tree-attention call: the nodes at level-order offsets ``lo .. hi - 1`` of ``layout``.

    What a model's :meth:`~spectheory.decoder.batching.DecoderModel.score_tree` reads:
    ``root_slot [B]`` is the slot (and position) of each row's root, ``node_tokens [B, N]`` the
    tokens in level order. The node at offset ``o`` sits at slot ``root_slot + o`` with position
    id ``root_slot + depth``.
    """

    layout: TreeLayout
    root_slot: torch.Tensor
    node_tokens: torch.Tensor
    lo: int
    hi: int

    @property
    def ids(self) -> torch.Tensor:
        """The tokens fed, ``[B, hi - lo]``."""
        return self.node_tokens[:, self.lo : self.hi]

    def positions(self) -> torch.Tensor:
        """Position ids ``root_slot + depth`` of the nodes fed, ``[B, hi - lo]``."""
        _, dep = self.layout.torch_tables(self.root_slot.device)
        return self.root_slot[:, None] + dep[self.lo : self.hi][None, :]

    def attn_mask(self, width: int) -> torch.Tensor:
        """The :func:`tree_attn_mask` of the nodes fed over ``width`` cache slots."""
        return tree_attn_mask(self.layout, self.root_slot, self.lo, self.hi, width)


def masked_tree_call(model: Any, cache: Any, call: TreeCall, width: int, return_hidden: bool = False) -> Any:
    """Feed ``call``'s nodes to a model whose cached call takes ``positions`` and ``attn_mask``
    (the shipped GPT and its compiled wrapper): slots ``root + lo ..``, position ids
    ``root + depth``, the :func:`tree_attn_mask` of ``width`` slots."""
    return model(
        call.ids,
        cache=cache,
        start=call.root_slot + call.lo,
        positions=call.positions(),
        attn_mask=call.attn_mask(width),
        return_hidden=return_hidden,
    )

"""Drafting a token tree for the tree decoder: one level of children, and the draft-model drafter.

:func:`draw_level` draws the children of one tree level from their parents' draft laws with the
verifier's child policy (:meth:`~spectheory.children.ChildPolicy.torch_draw`);
:class:`ModelDrafter` runs the draft model level by level (one draft call per level, tree
attention in its cache) and keeps the accepted path in that cache. Step 1 of a round of
:func:`spectheory.decoder.tree_decode.tree_generate` (the protocol is described there); Medusa
heads draft the same levels (:mod:`spectheory.decoder.medusa`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..children import get_child_policy
from .batching import forward_window, prefill
from .tree_attention import compact_path, new_tree_cache, supports_tree_cache, tree_logits
from .tree_layout import TreeLayout

if TYPE_CHECKING:
    from ..children import ChildPolicy
    from .batching import CausalLM

__all__ = ["draw_level", "LevelDrafter", "ModelDrafter"]


# ----------------------------------------------------------------------------- drafting
def draw_level(
    parent_laws: torch.Tensor,
    layout: TreeLayout,
    d: int,
    children: ChildPolicy,
    u_draft: torch.Tensor,
    present_parent: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Tokens of the depth-``d`` nodes from their parents' draft laws (torch, one level).

    Parameters
    ----------
    parent_laws : Tensor [B, n_{d-1}, V]
        Draft laws at the depth ``d - 1`` nodes (level order).
    children : ChildPolicy or {"iid", "wo", "topk"}
        How the children are drawn (:meth:`~spectheory.children.ChildPolicy.torch_draw`).
    u_draft : Tensor [B, N]
        Per-node uniforms (column = level-order offset).
    present_parent : BoolTensor [B, n_{d-1}]

    Returns
    -------
    tokens : LongTensor [B, n_d] (``-1`` = not drafted), present : BoolTensor [B, n_d]

    The ``j``-th child's law is the policy's slot law
    (:meth:`~spectheory.children.ChildPolicy.slot_law`): ``q`` (iid), ``q`` without
    the earlier siblings renormalised (wo; absent when no mass is left), or the point mass on
    the ``j``-th largest entry (topk, stable order).
    """
    children = get_child_policy(children)
    lo_p = layout.level_start[d - 1]
    lo, hi = layout.level_start[d], layout.level_start[d + 1]
    slots = np.asarray(layout.tree.slot)[layout.order]
    toks, pres = [], []
    cache: dict = {}
    for o in range(lo, hi):
        p = int(layout.parent_offset[o]) - lo_p
        x, ok = children.torch_draw(
            parent_laws, p, int(slots[o]), u_draft[:, o], present_parent[:, p].clone(), cache
        )
        toks.append(torch.where(ok, x, torch.full_like(x, -1)))
        pres.append(ok)
    return torch.stack(toks, 1), torch.stack(pres, 1)


class LevelDrafter:
    """Drafts the tree level by level (step 1 of a tree round): the root's law (:meth:`root_law`),
    then, per level ``d = 1..K``, the children drawn from their parents' laws
    (:func:`draw_level`, present where ``d <= k``) and, above the deepest level, the new nodes'
    laws (:meth:`level_laws`). ``level_calls``: the draft calls a level costs (the root's call
    and those of the ``K - 1`` levels above the deepest; 0 for heads)."""

    needs_hidden = False
    level_calls = 0
    layout: TreeLayout
    k: torch.Tensor  # this round's draft depth per row, set by the tree round step

    def plan_depth(self, batch: Any, k: torch.Tensor, K_fixed: int | None) -> int:
        """This round's deepest level ``K``: ``K_fixed`` in the fixed horizon, else ``max(k)``
        (one host read). A drafter that needs more from the host per round reads it here,
        with the depth, in the same read."""
        return K_fixed if K_fixed is not None else int(k.max().item())

    def root_law(self, batch: Any, K: int) -> torch.Tensor:
        """The root's draft law ``[B, V]`` (each row's last committed token)."""
        raise NotImplementedError

    def level_laws(self, batch: Any, node_tokens: torch.Tensor, d: int, lo: int, hi: int) -> torch.Tensor:
        """The draft laws after the depth-``d`` nodes (offsets ``lo .. hi - 1``)."""
        raise NotImplementedError

    def level_tokens(
        self, depth: int, tokens: torch.Tensor, laws: torch.Tensor, level_start: int
    ) -> torch.Tensor:
        """The drafted tokens ``[B, n_d]`` of level ``depth`` as used (a hook: the validation's
        forced drafter overrides it to put a given path onto one branch)."""
        return tokens

    def keep(self, present: torch.Tensor, laws: torch.Tensor) -> torch.Tensor:
        """The drafted nodes kept for verification (all of them; dynamic trees select)."""
        return present

    def observe(self, hidden: torch.Tensor) -> None:
        """Hidden states at the last accepted nodes; only drafters with ``needs_hidden`` use them."""

    def commit(
        self, batch: Any, root_slot: torch.Tensor, path_offsets: torch.Tensor, j: torch.Tensor
    ) -> None:
        """Keep the accepted path ``path_offsets[:, :j]`` (nothing to keep without a cache)."""

    def laws(
        self,
        batch: Any,
        node_tokens: torch.Tensor,
        K: int,
        children: ChildPolicy,
        u_draft: torch.Tensor,
        present_root: torch.Tensor,
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, int]:
        """Draft the levels ``1..K``; return (node tokens, present, draft laws [B, N, V], draft calls)."""
        lay = self.layout
        root_law = self.root_law(batch, K)
        B, V = root_law.shape
        laws = torch.zeros(B, lay.n_nodes, V, dtype=root_law.dtype, device=root_law.device)
        laws[:, 0] = root_law
        present = torch.zeros(B, lay.n_nodes, dtype=torch.bool, device=node_tokens.device)
        present[:, 0] = present_root
        for d in range(1, K + 1):
            lo_p, lo, hi = lay.level_start[d - 1], lay.level_start[d], lay.level_start[d + 1]
            x, ok = draw_level(laws[:, lo_p:lo], lay, d, children, u_draft, present[:, lo_p:lo])
            x = self.level_tokens(d, x, laws, lo)
            ok &= (d <= self.k)[:, None]
            node_tokens[:, lo:hi] = torch.where(ok, x, 0)
            present[:, lo:hi] = ok
            if d < K:  # laws after depth-d nodes
                laws[:, lo:hi] = self.level_laws(batch, node_tokens, d, lo, hi)
        return node_tokens, self.keep(present, laws), laws, K * self.level_calls


class ModelDrafter(LevelDrafter):
    """Drafts the tree with a draft model, one call per level (tree attention when it is a GPT)."""

    level_calls = 1
    #: this round's first draft window ``max(seq_len - cached)``, read with the depth (one host
    #: read per round) or fixed in the fixed horizon (:meth:`plan_depth`); None: read here
    window: int | None = None

    def __init__(
        self,
        draft: CausalLM,
        law: Callable[[torch.Tensor], torch.Tensor],
        dev: torch.device,
        dtype: torch.dtype,
        batch: Any,
        layout: TreeLayout,
    ) -> None:
        self.draft, self.law, self.layout = draft, law, layout
        cap = batch.tokens.shape[1]
        self.cached_model = supports_tree_cache(draft)
        self.cache = (
            new_tree_cache(draft, batch.tokens.shape[0], cap + layout.n_nodes, dev, dtype)
            if self.cached_model
            else draft.new_cache(batch.tokens.shape[0], cap, device=dev, dtype=dtype)
        )
        self.cached = prefill(draft, self.cache, batch)

    def plan_depth(self, batch: Any, k: torch.Tensor, K_fixed: int | None) -> int:
        """The depth and this round's first window: fixed in the fixed horizon (2 tokens, or
        ``K + 1`` for a model without a tree cache: the module docstring), else read with the
        depth in one host read (``max(seq_len - cached)``)."""
        if K_fixed is not None:
            self.window = 2 if self.cached_model else K_fixed + 1
            return K_fixed
        K, self.window = torch.stack((k.max(), (batch.seq_len - self.cached).max())).tolist()
        return int(K)

    def root_law(self, batch: Any, K: int) -> torch.Tensor:
        """One call on the tokens committed since the draft's last call; the last one's law."""
        rows = torch.arange(batch.tokens.shape[0], device=batch.tokens.device)
        width, self.window = self.window, None  # used once
        logits, start = forward_window(
            self.draft, self.cache, batch.tokens, self.cached, batch.seq_len, width
        )
        self.root_slot, self.fed = batch.seq_len - 1, K - 1
        return self.law(logits[rows, batch.seq_len - 1 - start])

    def level_laws(self, batch: Any, node_tokens: torch.Tensor, d: int, lo: int, hi: int) -> torch.Tensor:
        """One tree-attention call on the depth-``d`` nodes."""
        cache = self.cache if self.cached_model else None
        lg = tree_logits(self.draft, cache, batch.tokens, self.root_slot, node_tokens, self.layout, lo, hi)
        return self.law(lg)

    def commit(
        self, batch: Any, root_slot: torch.Tensor, path_offsets: torch.Tensor, j: torch.Tensor
    ) -> None:
        """Keep the accepted path (at most the ``K - 1`` levels fed) in the draft's cache."""
        keep = torch.clamp(j, max=self.fed)
        if self.cached_model:
            compact_path(self.draft, self.cache, root_slot, path_offsets, keep)
            self.cached = root_slot + 1 + keep
        else:
            self.cached = root_slot + 1  # history caches: the path is re-fed

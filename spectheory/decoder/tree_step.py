r"""The round of a tree speculative decode: :class:`TreeStep`, played by the decoder's loop.

What :func:`~spectheory.decoder.tree_decode.tree_generate` builds and
:func:`~spectheory.decoder.driver.decode_rounds` plays, one round per call of its methods
(the contract of :mod:`spectheory.decoder.driver`; the protocol is in the module docstring of
:mod:`spectheory.decoder.tree_decode`):

- ``plan``: each row's depth ``k = min(depth, r)`` and the drafter's first window (its
  :meth:`~spectheory.decoder.tree_draft.LevelDrafter.plan_depth`);
- ``draft``: the drafter fills the tree level by level (:mod:`.tree_draft`);
- ``score``: ONE target call over the root and every node (:mod:`.tree_attention`);
- ``commit``: the tree rule (:class:`TreeRules`) picks the accepted path and the next token,
  which are appended, and the path is kept in both caches.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .batching import prefill
from .driver import StepDefaults
from .tree_attention import compact_path, new_tree_cache, supports_tree_cache, tree_logits
from .tree_draft import ModelDrafter
from .tree_layout import TreeLayout

if TYPE_CHECKING:
    from ..children import ChildPolicy
    from .batching import Batch, CausalLM

__all__ = ["TreeStep", "TreeRules", "layout_offset"]


@dataclass(frozen=True)
class TreeRules:
    """How a tree round verifies: the ``rule`` (:func:`~spectheory.decoder.tree_decode.resolve_rule`), its child policy
    ``children``, the child policy of its torch form when it runs on the device
    (``torch_children``, else ``None``: the numpy rule), its ``name`` and ``bonus``."""

    rule: Callable[..., Any]
    children: ChildPolicy
    torch_children: ChildPolicy | None
    name: str
    bonus: bool


class TreeStep(StepDefaults):
    """The round step of a tree (:mod:`spectheory.decoder.driver`): the drafter fills the tree
    truncated at depth ``k = min(depth, r)`` per row, ONE target call scores every node
    (:mod:`.tree_attention`), the tree rule (:class:`TreeRules`) picks the accepted path and the
    next token, and the path is kept in both caches. ``K_fixed``: the depth every round drafts
    in the fixed horizon."""

    def __init__(
        self,
        target: CausalLM,
        draft: CausalLM | None,
        dtype: torch.dtype,
        batch: Batch,
        law: Callable[[torch.Tensor], torch.Tensor],
        layout: TreeLayout,
        rules: TreeRules,
        drafter: Callable[..., Any] | None,
        K_fixed: int,
    ) -> None:
        self.target, self.draft_model, self.dtype, self.batch, self.law = target, draft, dtype, batch, law
        self.layout, self.tree, self.rules, self.drafter = layout, layout.tree, rules, drafter
        self.name, self.bonus, self.gamma, self.K_fixed = (
            rules.name,
            rules.bonus,
            layout.tree.max_depth,
            K_fixed,
        )
        dev = batch.tokens.device
        self.paths = torch.as_tensor(_tree_tables(layout.tree, layout), device=dev)
        self.depth_of = torch.as_tensor(np.asarray(layout.tree.depth), device=dev)
        self.hidden: torch.Tensor | None = None

    def prefill(self) -> None:
        """The target's tree cache and the drafter (which prefills the draft), then the target's prefill."""
        target, batch, layout, dt = self.target, self.batch, self.layout, self.dtype
        B, cap = batch.tokens.shape
        dev = batch.tokens.device
        cached_target = supports_tree_cache(target)
        self.tcache = tcache = (
            new_tree_cache(target, B, cap + layout.n_nodes, dev, dt) if cached_target else None
        )
        if self.drafter is None:
            if self.draft_model is None:
                raise ValueError("draft: a draft model is required unless a drafter is given")
            self.dr = ModelDrafter(self.draft_model, self.law, dev, dt, batch, layout)
        else:
            self.dr = self.drafter(batch, self.law, dev, dt, layout, tcache)
        if cached_target and not getattr(self.dr, "prefilled_target", False):
            prefill(target, tcache, batch)

    def plan(self, remaining: torch.Tensor, fixed: bool) -> tuple[int, int | None] | None:
        """``k = min(depth, remaining)`` per row; one host read (the depth, and the draft's first
        window), none in the fixed horizon; every node's uniforms."""
        k = torch.clamp(remaining, max=self.tree.max_depth)
        # the deepest round in the fixed horizon; else the drafter reads the depth (and what else
        # it needs from the host, a model drafter its first window) in one read
        K = self.dr.plan_depth(self.batch, k, self.K_fixed if fixed else None)
        if K == 0:
            return None
        self.k, self.remaining, self.K = k, remaining, K
        return self.layout.n_nodes, None

    def draft(self, u: torch.Tensor) -> int:
        """Fill the tree from the root (each row's last committed token); the draft calls made."""
        batch, dr, k = self.batch, self.dr, self.k
        B = batch.tokens.shape[0]
        dev = batch.tokens.device
        self.u_a, self.u_f = u[..., 1], u[:, 0, 2]
        node_tokens = torch.zeros(B, self.layout.n_nodes, dtype=torch.long, device=dev)
        self.root_slot = root_slot = batch.seq_len - 1
        node_tokens[:, 0] = batch.tokens[torch.arange(B, device=dev), root_slot]
        dr.k = k
        self.node_tokens, self.present, self.draft_laws, n_calls = dr.laws(
            batch, node_tokens, self.K, self.rules.children, u[..., 0], k > 0
        )
        return n_calls

    def score(self) -> None:
        """The one target call over the root and every node (tree attention)."""
        needs_hidden = self.dr.needs_hidden
        out = tree_logits(
            self.target,
            self.tcache,
            self.batch.tokens,
            self.root_slot,
            self.node_tokens,
            self.layout,
            0,
            self.layout.n_nodes,
            return_hidden=needs_hidden,
        )
        logits, self.hidden = out if needs_hidden else (out, None)
        self.target_laws = self.law(logits)

    def commit(self) -> torch.Tensor:
        """Verify, append the accepted path and the next token, keep the path in both caches;
        the round's counts ``[4, B]``."""
        batch, dr, k, root_slot, node_tokens = self.batch, self.dr, self.k, self.root_slot, self.node_tokens
        dev = node_tokens.device
        node, token, residual = _verify(
            self.rules,
            self.tree,
            self.layout,
            node_tokens,
            self.present,
            self.target_laws,
            self.draft_laws,
            self.u_a,
            self.u_f,
        )
        j = self.depth_of[node]
        emitted = residual | (self.bonus & (j < self.remaining) & (k > 0))
        rows = torch.arange(batch.tokens.shape[0], device=dev)
        path_off = self.paths[node]  # [B, D]
        _write_accepted(batch, node_tokens, path_off, j, emitted, token)
        if self.tcache is not None:
            compact_path(self.target, self.tcache, root_slot, path_off, j)
        dr.commit(batch, root_slot, path_off, j)
        if dr.needs_hidden and self.hidden is not None:
            dr.observe(self.hidden[rows, layout_offset(self.layout, node, dev)])
        batch.seq_len = batch.seq_len + j + emitted.to(torch.int64)
        return torch.stack([k, j, emitted.to(torch.int64), residual.to(torch.int64)])


def layout_offset(layout: TreeLayout, node: torch.Tensor, device: str | torch.device) -> torch.Tensor:
    """Level-order offsets of tree nodes ``node [B]`` (torch)."""
    return torch.as_tensor(layout.offset, device=device)[node]


def _tree_tables(tree, layout):
    """``path_offsets [N, D]`` (level-order offsets of the path to each node, padded 0)."""
    D = max(tree.max_depth, 1)
    tab = np.zeros((tree.n_nodes, D), dtype=np.int64)
    for v in range(tree.n_nodes):
        for i, u in enumerate(tree.path_to(v)):
            tab[v, i] = layout.offset[u]
    return tab


def _verify(rules, tree, layout, node_tokens, present, target_laws, draft_laws, u_acc, u_fin):
    """Run the rule on the round's laws (tree node numbering): the numpy rule, or its torch form
    on the device when ``rules.torch_children`` (the child policy) is given; torch tensors."""
    offs = torch.as_tensor(layout.offset, device=node_tokens.device)
    tok = torch.where(present, node_tokens, -1)[:, offs]
    tok[:, 0] = -1
    tl = target_laws.to(torch.float64)[:, offs]
    dl = draft_laws.to(torch.float64)[:, offs]
    dl = torch.where((dl.sum(-1) <= 0)[..., None], tl, dl)  # leaves: no draft law needed
    ua = u_acc[:, offs]
    if rules.torch_children is not None:
        from ..verifiers.tree_torch import recursive_rejection_torch

        return recursive_rejection_torch(tree, rules.torch_children, tok, tl, dl, ua, u_fin)
    host = (a.cpu().numpy() for a in (tok, tl, dl, ua, u_fin))
    node, token, residual = rules.rule(tree, *host)
    dev = node_tokens.device
    return (
        torch.as_tensor(np.asarray(node), device=dev),
        torch.as_tensor(np.asarray(token), device=dev),
        torch.as_tensor(np.asarray(residual), device=dev),
    )


def _write_accepted(
    batch: Any,
    node_tokens: torch.Tensor,
    path_off: torch.Tensor,
    j: torch.Tensor,
    emitted: torch.Tensor,
    token: torch.Tensor,
) -> None:
    """Append each row's accepted path (the first ``j [B]`` nodes of ``path_off [B, D]``) to
    ``batch.tokens`` in place, then the emitted token after it where ``emitted [B]``."""
    B, cap = batch.tokens.shape
    dev = node_tokens.device
    rows = torch.arange(B, device=dev)
    path_tok = node_tokens.gather(1, path_off)  # [B, D]
    # no host read (a nonzero would be one): entry d >= j of a row rewrites the row's last
    # accepted slot with its own token (j = 0: the slot at seq_len with what it holds), so
    # every write to a slot carries the same value
    last = torch.minimum(torch.arange(path_off.shape[1], device=dev)[None, :], (j - 1).clamp(min=0)[:, None])
    pos = (batch.seq_len[:, None] + last).clamp(max=cap - 1)  # [B, D]
    value = torch.where((j > 0)[:, None], path_tok.gather(1, last), batch.tokens.gather(1, pos))
    batch.tokens.scatter_(1, pos, value)
    slot = (batch.seq_len + j).clamp(max=cap - 1)
    batch.tokens[rows, slot] = torch.where(emitted, token, batch.tokens[rows, slot])

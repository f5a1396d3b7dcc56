r"""Tree speculative decoding in the real decoder: draft a tree, score it in one target call.

Notation: p = target, q = draft (laws after temperature/top-k/top-p). One *round* per
sequence with ``n`` committed tokens and ``r`` still to generate (the tree protocol of
docs/trees.md, ``bonus=True`` by default):

1. the drafter builds the draft tree (:class:`~spectheory.trees.DraftTree`) truncated at
   depth ``k = min(depth, r)``: a draft model level by level (one draft call per level,
   tree attention in its cache), children drawn by the verifier's *child policy*
   (:class:`~spectheory.children.IID`,
   :class:`~spectheory.children.WithoutReplacement`,
   :class:`~spectheory.children.TopK`;
   :meth:`~spectheory.children.ChildPolicy.torch_draw`), or Medusa heads
   (:mod:`spectheory.decoder.medusa`: ``TopK`` of the heads' laws);
2. ONE target call scores the root and every node (:mod:`.tree_attention`);
3. the tree verifier -- the pure rule of :mod:`spectheory.verifiers.tree_rules` (or any callable of
   the same signature, e.g. Medusa's typical acceptance) -- runs on the laws with
   uniforms hashed from ``(seed, round, node, purpose)``, and returns the accepted path
   and the next token (a correction after a rejection, or the bonus ``~ p`` at a leaf
   if tokens remain and ``bonus``);
4. the accepted path's keys/values are kept in both caches, the rest dropped.

The rule is the library's own numpy function applied to the laws (float64, on CPU), so
the decoder and the exact theory share one definition of every tree verifier.
``temperature=0`` returns the target's greedy continuation exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .._guards import check_int
from .._sizes import check_size
from ..children import get_child_policy
from ..trees import DraftTree
from ..verifiers.base import Verifier, get_verifier
from .batching import check_common, make_batch, place, prefill
from .driver import RoundUniforms, StepDefaults, decode_rounds
from .generation_result import GenerationResult
from .logits import logits_to_probs
from .rng import check_seeds, seed_tensor
from .tree_attention import compact_path, new_tree_cache, supports_tree_cache, tree_logits
from .tree_draft import ModelDrafter, draw_level
from .tree_layout import TreeLayout

if TYPE_CHECKING:
    from .._protocols import TreeRule
    from ..children import ChildPolicy
    from .batching import Batch, CausalLM, Prompt

__all__ = ["tree_generate", "draw_level", "resolve_rule", "ModelDrafter"]

_BLOCK = (
    16  # rounds whose uniforms are hashed together: u[b, node, purpose] of (seed_b, round, node, purpose)
)


# ----------------------------------------------------------------------------- verification
def resolve_rule(
    verifier: str | Verifier | TreeRule | Callable[..., Any], children: ChildPolicy | str | None = None
) -> tuple[Callable[..., Any], ChildPolicy, str]:
    """``(rule, children, name)`` from a tree-verifier name/object or a callable rule.

    A verifier (a registered name or a :class:`~spectheory.verifiers.Verifier`; ``"token"``
    stands for its tree form, ``tree_rrs``) brings its own child policy; ``children`` may
    only repeat it. A callable must have the signature of
    :meth:`spectheory.verifiers.tree_base.TreeVerifier.verify` (``fn(tree, tokens,
    target_laws, draft_laws, u_accept, u_final) -> (node, token, residual)``) and needs
    ``children`` (a :class:`~spectheory.children.ChildPolicy` or its shorthand).
    """
    if isinstance(verifier, (str, Verifier)):
        v = get_verifier(verifier).for_tree()
        if children is not None and get_child_policy(children) != v.children:
            raise ValueError(f"children: verifier {v.name!r} draws children {v.children!r}, got {children!r}")
        return v.verify, v.children, v.name
    if callable(verifier):
        if children is None:
            raise ValueError(
                "children: a callable verifier needs the child policy (IID(), WithoutReplacement() or TopK())"
            )
        return (
            verifier,
            get_child_policy(children),
            getattr(verifier, "name", getattr(verifier, "__name__", "custom")),
        )
    raise ValueError(f"verifier: expected a tree verifier name, Verifier or callable, got {verifier!r}")


def _tree_tables(tree, layout):
    """``path_offsets [N, D]`` (level-order offsets of the path to each node, padded 0)."""
    D = max(tree.max_depth, 1)
    tab = np.zeros((tree.n_nodes, D), dtype=np.int64)
    for v in range(tree.n_nodes):
        for i, u in enumerate(tree.path_to(v)):
            tab[v, i] = layout.offset[u]
    return tab


def _device_rule(rule: Any, children: Any, wanted: bool | None, device: torch.device) -> Any:
    """The child policy to run ``rule`` in torch with (:mod:`spectheory.verifiers.tree_torch`),
    or None for the numpy rule: ``wanted`` (default: on CUDA) and the rule is recursive
    rejection with a child policy the torch form knows; ``wanted=True`` without one is refused."""
    from ..verifiers.tree_rules import RecursiveRejectionTree

    ok = isinstance(getattr(rule, "__self__", None), RecursiveRejectionTree) and bool(
        getattr(children, "has_torch_slot_law", False)
    )
    if wanted and not ok:
        raise ValueError(
            "rule_on_device: only recursive rejection (tree_rrs, tree_rrs_wo, tree_topk, tree_greedy) "
            "has a torch form"
        )
    on_device = device.type == "cuda" if wanted is None else wanted
    return children if ok and on_device else None


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


# ----------------------------------------------------------------------------- generation
def tree_generate(
    target: CausalLM,
    draft: CausalLM | None,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    tree: DraftTree,
    verifier: str | Verifier | TreeRule | Callable[..., Any] = "tree_rrs",
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    bonus: bool = True,
    seed: int | Sequence[int] = 0,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    children: ChildPolicy | str | None = None,
    drafter: Callable[..., Any] | None = None,
    rule_on_device: bool | None = None,
    check_every: int | None = None,
) -> GenerationResult:
    """Tree speculative decoding of a batch of prompts (ragged), one target call per round.

    Parameters
    ----------
    target, draft : models of the decoder contract (same ``vocab_size``); ``draft`` may be
        ``None`` when ``drafter`` is given (Medusa heads).
    prompts : list of token sequences
    max_new_tokens : int >= 1
    tree : DraftTree
    verifier : str, TreeVerifier or callable
        A tree verifier (``"tree_rrs"``, ``"tree_rrs_wo"``, ``"tree_topk"``, ``"traversal"``,
        ...), or a callable rule (then ``children`` is required), e.g.
        :func:`spectheory.decoder.medusa.typical_rule`.
    children : ChildPolicy or {"iid", "wo", "topk"}, optional
        How the children are drawn; default the verifier's own
        (:class:`~spectheory.children.ChildPolicy`).
    temperature, top_k, top_p, bonus, seed, device, dtype : as in
        :func:`~spectheory.decoder.speculative.speculative_generate`.
    drafter : callable, optional
        ``drafter(batch, law, dev, dtype, layout, target_cache) -> object`` with the
        methods of :class:`~spectheory.decoder.tree_draft.LevelDrafter` (a subclass says
        where the root's and each level's draft laws come from: a draft model,
        :class:`ModelDrafter`; heads, :class:`~spectheory.decoder.medusa.MedusaDrafter`);
        default: a :class:`ModelDrafter` on ``draft``.
    rule_on_device : bool, optional
        Run recursive rejection (``tree_rrs``, ``tree_rrs_wo``, ``tree_topk``,
        ``tree_greedy``) in torch on the models' device
        (:func:`~spectheory.verifiers.tree_torch.recursive_rejection_torch`: the same rule,
        no copy of the laws to the host) instead of the numpy rule. Default: on CUDA only
        (on a CPU the numpy rule is the cheaper of the two). ``True`` for another rule:
        ``ValueError``.
    check_every : int >= 1, optional
        The fixed-horizon loop of
        :func:`~spectheory.decoder.speculative.speculative_generate`: every round drafts the
        tree to depth ``min(depth, max_new_tokens)`` (a row's ``k`` still bounds what is
        present) and feeds the draft a fixed first window (2 tokens, or ``depth + 1`` for a
        draft without a tree cache), so the loop reads neither the depth nor the window on the
        host; it checks every ``check_every`` rounds whether any row is unfinished and stops
        after ``max_new_tokens`` rounds. Tokens and per-row statistics equal the default
        loop's. The rule itself still reads the host each round unless it runs on the device
        (the numpy rule copies the laws there; ``rule_on_device=True`` does not), as do
        drafters that read the drafted laws (dynamic trees). Default ``None``: one host read
        per round (the depth and the draft's window).

    Returns
    -------
    GenerationResult
        ``stats.gamma`` is the tree depth; ``round_accepted`` the accepted path lengths;
        ``draft_tokens`` the draft levels run per sequence.

    Examples
    --------
    >>> import torch
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> from spectheory.trees import DraftTree
    >>> t = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> d = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> res = tree_generate(t, d, [[1, 2, 3], [4]], 8, DraftTree.from_branching([2, 1]), seed=3)
    >>> [len(x) for x in res.tokens]
    [8, 8]
    """
    if not isinstance(tree, DraftTree):
        raise ValueError(f"tree: expected a DraftTree, got {type(tree).__name__}")
    rule, children, name = resolve_rule(verifier, children)
    models = {"target": target} if draft is None else {"target": target, "draft": draft}
    max_new_tokens, (temperature, top_k, top_p) = check_common(
        models, max_new_tokens, temperature, top_k, top_p
    )
    if check_every is not None:
        check_every = check_int(check_every, "check_every", 1)
    dev, dt = place(target, device, dtype)
    if draft is not None:
        place(draft, dev if device is not None else None, dtype)
    torch_children = _device_rule(rule, children, rule_on_device, dev)  # None: the numpy rule
    batch = make_batch(prompts, max_new_tokens, models, dev)
    B, cap = batch.tokens.shape
    layout = TreeLayout(tree)
    V = int(target.vocab_size)
    check_size(
        "tree_decode", "tree", nodes=layout.n_nodes, batch=B, context=cap, vocab=V, tokens=max_new_tokens
    )
    seeds = seed_tensor(check_seeds(seed, B), dev)
    law = partial(logits_to_probs, temperature=temperature, top_k=top_k, top_p=top_p)
    rules = TreeRules(rule, children, torch_children, name, bool(bonus))
    step = TreeStep(
        target, draft, dt, batch, law, layout, rules, drafter, min(tree.max_depth, max_new_tokens)
    )
    rng = RoundUniforms(seeds, layout.n_nodes, block=_BLOCK, clamp_draft=False)
    return decode_rounds(step, rng, max_new_tokens, check_every)


@dataclass(frozen=True)
class TreeRules:
    """How a tree round verifies: the ``rule`` (:func:`resolve_rule`), its child policy
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
        batch, dr = self.batch, self.dr
        k = torch.clamp(remaining, max=self.tree.max_depth)
        model_drafter = isinstance(dr, ModelDrafter)
        if fixed:  # the deepest round; the widest first window (module docstring of tree_draft)
            K = self.K_fixed
            if model_drafter:
                dr.window = 2 if dr.cached_model else K + 1
        elif model_drafter:  # one host read per round: the depth and the draft's first window together
            K, dr.window = torch.stack((k.max(), (batch.seq_len - dr.cached).max())).tolist()
        else:
            K = int(k.max().item())
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

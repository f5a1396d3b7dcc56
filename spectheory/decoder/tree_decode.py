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
from functools import partial
from typing import TYPE_CHECKING, Any

import torch

from .._guards import check_int
from .._sizes import check_size
from ..children import get_child_policy
from ..trees import DraftTree
from ..verifiers.base import Verifier, get_verifier
from .batching import check_common, make_batch, place
from .driver import RoundUniforms, decode_rounds
from .generation_result import GenerationResult
from .logits import logits_to_probs
from .rng import check_seeds, seed_tensor
from .tree_draft import ModelDrafter, draw_level
from .tree_layout import TreeLayout
from .tree_step import TreeRules, TreeStep

if TYPE_CHECKING:
    from .._protocols import TreeRule
    from ..children import ChildPolicy
    from .batching import CausalLM, Prompt

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

r"""Dynamic draft trees in the real decoder: EAGLE-2's and OPT-Tree's rules on a draft model.

Notation: p = target, q = draft. A rule of :mod:`spectheory.kinds.dynamic.rules` reads only the
draft's laws along the tree it expands. The decoder drafts the rule's *envelope* (the complete
``min(width, V)``-ary tree of the rule's depth with the draft's top-k children, every candidate
the rule may expand; :meth:`~spectheory.kinds.dynamic.rules.Eagle2Tree.envelope`) level by level
with the draft model (:class:`~spectheory.decoder.tree_draft.ModelDrafter`), then runs the
rule per row on the drafted laws -- the same code that builds the rule's trees on a chain
(``eagle2_select``, ``opt_select``) -- with the depth limited to the row's tokens left, and
drops the nodes the rule does not keep (not present: not verified, not emitted). The kept tree
is verified by ``tree_topk`` in one target call (:func:`~spectheory.decoder.tree_generate`).

So on models that are exactly a chain (:func:`spectheory.stopping.runtime.chain_models`) the
decoder's rounds have the law of the chain's :class:`~spectheory.trees.DynamicTreeRound`
(tested within 5 SE). The envelope is drafted and scored whole, so the decoder's wall time is
not the rule's; the counters (target calls, accepted tokens, rejections) are.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ..kinds.dynamic.rules import Candidates
from .tree_decode import tree_generate
from .tree_draft import ModelDrafter

if TYPE_CHECKING:
    from ..kinds.dynamic.rules import Eagle2Tree, OptTree
    from .batching import CausalLM, Prompt
    from .generation_result import GenerationResult

__all__ = ["dynamic_tree_generate", "RuleDrafter"]


class RuleDrafter(ModelDrafter):
    """A :class:`~spectheory.decoder.tree_draft.ModelDrafter` on the envelope that keeps, per
    row, only the nodes the dynamic rule selects from the drafted laws."""

    rule: Any = None

    def keep(self, present: torch.Tensor, laws: torch.Tensor) -> torch.Tensor:
        """The nodes the rule selects, per row, from the drafted laws (depth at most ``k``)."""
        lay = self.layout
        env = lay.tree
        q = laws.to(torch.float64).cpu().numpy()
        depth_left = self.k.cpu().numpy()
        keep = np.zeros(present.shape, dtype=bool)
        keep[:, 0] = True
        for b in range(q.shape[0]):
            if depth_left[b] <= 0:
                continue
            row = q[b]

            def law(node: int, d: int, row: np.ndarray = row) -> np.ndarray:
                return row[lay.offset[node]]

            def child(node: int, x: int, j: int) -> int:
                return int(env.children[node][j])

            c = Candidates(law, child, 0)
            for i in self.rule.select(c, int(min(depth_left[b], self.rule.depth(1)))):
                keep[b, lay.offset[c.key[i]]] = True
        return present & torch.as_tensor(keep, device=present.device)


def dynamic_tree_generate(
    target: CausalLM,
    draft: CausalLM,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    rule: Eagle2Tree | OptTree,
    **options: Any,
) -> GenerationResult:
    """Speculative decoding with a dynamic tree rule (module docstring).

    Parameters
    ----------
    target, draft : models of the decoder contract (same ``vocab_size``)
    prompts : list of token sequences
    max_new_tokens : int >= 1
    rule : Eagle2Tree or OptTree
    **options
        ``temperature``, ``top_k``, ``top_p``, ``bonus``, ``seed``, ``device``, ``dtype``,
        ``check_every`` of :func:`~spectheory.decoder.tree_generate`.

    Returns
    -------
    GenerationResult
        ``stats.target_calls`` and ``stats.round_accepted`` count the kept trees' rounds.

    Examples
    --------
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> from spectheory.trees import Eagle2Tree
    >>> t = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> d = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> res = dynamic_tree_generate(t, d, [[1, 2, 3]], 8, Eagle2Tree(4, top_k=2, depth=3), seed=1)
    >>> len(res.tokens[0])
    8
    """
    select = getattr(rule, "select", None)
    if select is None or not hasattr(rule, "envelope"):
        raise ValueError(
            f"rule: expected a draft-only dynamic tree rule (Eagle2Tree, OptTree), got {type(rule).__name__}"
        )
    for name in ("tree", "verifier", "children", "drafter"):
        if name in options:
            raise ValueError(f"{name}: fixed by the dynamic rule; do not pass it")
    env = rule.envelope(int(target.vocab_size))

    def drafter(batch: Any, law: Any, dev: Any, dt: Any, layout: Any, tcache: Any) -> RuleDrafter:
        dr = RuleDrafter(draft, law, dev, dt, batch, layout)
        dr.rule = rule
        return dr

    return tree_generate(
        target, draft, prompts, max_new_tokens, env, verifier="tree_topk", drafter=drafter, **options
    )

r"""Round emission weights on branching trees by forcing one branch (importance weights).

Notation: p = target, q = draft; ``w(n, j)`` and :func:`~spectheory.validation.tree_rounds.emission_dp`
as in :mod:`spectheory.validation.tree_rounds`. For a node ``v`` at depth ``j`` write
``a_1..a_j = v`` for its ancestors. The unbiased estimate of

.. math:: E\big[\mathbf 1\{\mathrm{path}(v) = x_{n+1..n+j}\}\, P(\text{accept } v \mid \text{tree})
          f_v(x_{n+j+1})\big]

draws the tree from a proposal in which every ``a_d`` carries ``x_{n+d}`` and weights it by
``W = P(\text{siblings}) / Q(\text{siblings})``, group by group along the branch:

- i.i.d. children (:class:`~spectheory.children.IID`): the other siblings are independent of ``a_d``, so ``W = q(x_{n+d})``;
- children without replacement (successive sampling,
  :class:`~spectheory.children.WithoutReplacement`): the proposal draws the other
  siblings of ``a_d`` (slot ``s``) successively from ``q`` without ``x`` and without the earlier
  ones, so with ``y_s = x``

  .. math:: P = \prod_i \frac{q(y_i)}{1 - \sum_{l < i} q(y_l)}, \qquad
            Q = \prod_{i \ne s} \frac{q(y_i)}{1 - q(x) - \sum_{l < i,\, l \ne s} q(y_l)}.

Both are :meth:`spectheory.children.ChildPolicy.force`. Everything off the branch is drafted by the decoder as usual (tree attention, its own
draft model), so the drafted tree's laws are exact. Summing ``W P(accept v) f_v / p(x...)``
over the nodes of depth ``j`` (one forced run per node) estimates ``w(n, j)``; ``j = 0``
uses an unforced tree. No indicator is left, so the estimate is random only through the
off-branch siblings and subtrees.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from .._guards import as_rng
from .._typing import RNGLike
from ..children import get_child_policy
from ..decoder.tree_decode import ModelDrafter, tree_generate
from ..verifiers.base import get_verifier
from .tree_decoding import FirstRoundRecorded, run_first_round

if TYPE_CHECKING:
    import torch

    from ..children import ChildPolicy
    from ..decoder.batching import CausalLM
    from ..trees import DraftTree
    from ..verifiers.base import Verifier

__all__ = ["ForcedDrafter", "forced_tree_weights"]


class ForcedDrafter(ModelDrafter):
    """A :class:`~spectheory.decoder.tree_decode.ModelDrafter` whose FIRST round carries the
    tokens ``branch_tokens [B, j]`` on the tree nodes ``branch`` (a root-to-node path), with the
    log importance weight of the forcing in ``logw [B]``."""

    def __init__(
        self,
        *args: Any,
        branch: Sequence[int],
        branch_tokens: np.ndarray,
        children: ChildPolicy,
        rng: RNGLike | Sequence[int],
    ) -> None:
        """``args``: the :class:`~spectheory.decoder.tree_decode.ModelDrafter`'s (``draft, law,
        dev, dtype, batch, layout``)."""
        super().__init__(*args)
        self.branch, self.branch_tokens = list(branch), np.asarray(branch_tokens)
        self.children = get_child_policy(children)
        self.rng = as_rng(rng)
        self.logw = np.zeros(self.cached.shape[0])  # one per row
        self.active = True

    def _force(self, d, x, parent_laws, lo):
        lay = self.layout
        o = int(lay.offset[self.branch[d - 1]])
        po = int(lay.parent_offset[o])
        group = [g for g in range(lo, lo + x.shape[1]) if int(lay.parent_offset[g]) == po]
        q = parent_laws.to(torch.float64).cpu().numpy()
        tokens, logw = self.children.force(
            q, self.branch_tokens[:, d - 1], len(group), group.index(o), self.rng
        )
        out = x.clone()
        for i, y in tokens.items():
            out[:, group[i] - lo] = torch.as_tensor(y, device=x.device)
        self.logw += logw
        return out

    def level_tokens(
        self, depth: int, tokens: torch.Tensor, laws: torch.Tensor, level_start: int
    ) -> torch.Tensor:
        if self.active and depth <= len(self.branch):
            po = int(self.layout.parent_offset[int(self.layout.offset[self.branch[depth - 1]])])
            tokens = self._force(depth, tokens, laws[:, po], level_start)
        return tokens

    def commit(
        self, batch: Any, root_slot: torch.Tensor, path_offsets: torch.Tensor, j: torch.Tensor
    ) -> None:
        super().commit(batch, root_slot, path_offsets, j)
        self.active = False  # the first round is over: the later ones are drafted as usual


def forced_tree_weights(
    target: CausalLM,
    draft: CausalLM,
    verifier: str | Verifier,
    tree: DraftTree,
    paths: np.ndarray,
    n_prompt: int,
    horizon: int,
    seed: int = 0,
) -> np.ndarray:
    r"""Round emission weights ``[N, T, D + 1]`` on a branching tree, one forced run per node.

    Each (round start ``n``, node ``v``) is one decoder run over all paths (prompts
    ``x_{<= n}``) whose first round forces the branch to ``v`` onto the path; ``j = 0`` uses an
    unforced run. Cost: ``T * (nodes)`` decoder calls of ``N`` rows.
    """
    v = get_verifier(verifier).for_tree()
    paths = np.asarray(paths, dtype=np.int64)
    N, L, T, D = paths.shape[0], int(n_prompt), int(horizon), tree.max_depth
    x = paths[:, L:]
    rows = np.arange(N)
    out = np.zeros((N, T, D + 1))
    for n in range(T):
        left = T - n
        kmax = min(D, left)
        width = min(D + 1, left)
        for node in range(tree.n_nodes):
            branch = tree.path_to(node)
            j = len(branch)
            if j > kmax:
                continue
            seen: list[np.ndarray] = []
            holder: list[Any] = []

            def make(batch, law, dev, dt, layout, tcache, _b=branch, _j=j, _n=n, _node=node, _holder=holder):
                dr = ForcedDrafter(
                    draft,
                    law,
                    dev,
                    dt,
                    batch,
                    layout,
                    branch=_b,
                    branch_tokens=x[:, _n : _n + _j],
                    children=v.children,
                    rng=[seed, _n, _node],
                )
                _holder.append(dr)
                return dr

            def rule(
                tree_, tokens, tl, dl, ua, uf, _node=node, _j=j, _n=n, _seen=seen, _holder=holder, _left=left
            ):
                accept, final = v.outcome_law(tree_, tokens, tl, dl)
                num = accept[:, _node] * (np.exp(_holder[0].logw) if _holder else 1.0)
                den = np.ones(N)
                prev = 0
                for i, u in enumerate(tree_.path_to(_node)):
                    den *= tl[rows, prev, x[:, _n + i]]
                    prev = u
                if _j < _left:
                    num = num * final[rows, _node, x[:, _n + _j]]
                    den = den * tl[rows, _node, x[:, _n + _j]]
                _seen.append(np.where(den > 0, num / np.where(den > 0, den, 1.0), 0.0))
                raise FirstRoundRecorded  # only the first round is read

            rule.name = v.name  # type: ignore[attr-defined]  # the kit and the decoder read a rule's name
            kwargs: dict[str, Any] = {} if j == 0 else {"drafter": make}
            run_first_round(
                tree_generate,
                target,
                draft,
                [list(p) for p in paths[:, : L + n]],
                width,
                tree,
                rule,
                seed=seed + 7919 * n + node,
                children=v.children,
                **kwargs,
            )
            out[:, n, j] += seen[0]
    return out

r"""Medusa heads on the frozen target, their trees, and Medusa's typical acceptance.

Medusa (Cai et al. 2024): ``K`` extra heads read the target's last hidden state ``h_t``
(here ``ln_f`` output of the shipped GPT, the input of its tied LM head ``W_emb``); head
``k`` (1-based) is one residual block followed by the target's LM head,

.. math:: \mathrm{logits}_k(h_t) = (h_t + \mathrm{SiLU}(W_k h_t + b_k))\, W_{emb}^\top,

and predicts the token ``k + 1`` steps ahead, ``x_{t+1+k}`` (the LM head itself predicts
``x_{t+1}``). ``W_k`` starts at zero (head = LM head) as in Medusa.

In a round with ``n`` committed tokens the root is ``x_{n-1}``, emitted by the previous
round from the target law at ``h_{n-2}``; head ``d`` of ``h_{n-2}`` gives the draft law of
every depth-``d`` node (candidates for ``x_{n-1+d}``), the same law for all nodes of a
depth: Medusa's drafts do not condition on the tree path. Candidates are the heads'
top-k (the child policy :class:`~spectheory.children.TopK` applied to the heads'
laws): the Cartesian tree :meth:`DraftTree.from_branching`
``([k] * K)`` or the *sparse tree* of :func:`sparse_tree`, the ``n`` nodes of largest
estimated acceptance ``prod_d acc_d(rank_d)`` (Medusa's construction from the heads'
measured top-k accuracies).

Verification: any lossless tree verifier with the heads' laws as the draft laws (the
tree rules of :mod:`spectheory.trees` are lossless for any draft law), or Medusa's
*typical acceptance* :func:`typical_rule` (lossy): a candidate token ``x`` after a node is
accepted iff ``p(x) > min(epsilon, delta * exp(-H(p)))`` (the per-step rule
:func:`spectheory.verifiers.biased.typical_acceptance`), the longest accepted candidate
path wins (first in tree order on ties), and the next token is drawn from ``p`` at its end.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from ..children import TopK
from ..kinds.tree.sparse import sparse_tree
from ..trees import DraftTree
from ..verifiers.biased import typical_acceptance
from ..verifiers.multidraft import _categorical
from .tree_draft import LevelDrafter

if TYPE_CHECKING:
    from .._protocols import TreeRule
    from ..verifiers.base import Verifier
    from .batching import CausalLM, Prompt
    from .generation_result import GenerationResult

__all__ = [
    "MedusaHeads",
    "sparse_tree",
    "typical_rule",
    "MedusaDrafter",
    "medusa_generate",
    "load_heads",
    "HEADS_NAME",
]

HEADS_NAME = "medusa-heads"


class MedusaHeads(nn.Module):
    """``K`` residual heads over hidden size ``C``; logits through the target's LM head.

    Examples
    --------
    >>> import torch
    >>> heads = MedusaHeads(3, 8)
    >>> emb = torch.randn(5, 8)                       # a tied LM head [V, C]
    >>> heads(torch.randn(2, 8), emb).shape           # [B, K, V]
    torch.Size([2, 3, 5])
    """

    def __init__(self, n_heads: int, n_embd: int) -> None:
        super().__init__()
        self.n_heads, self.n_embd = int(n_heads), int(n_embd)
        self.w = nn.Parameter(torch.zeros(self.n_heads, self.n_embd, self.n_embd))
        self.b = nn.Parameter(torch.zeros(self.n_heads, self.n_embd))

    def hidden(self, h: torch.Tensor) -> torch.Tensor:
        """``h + SiLU(W_k h + b_k)`` for every head: ``[..., C] -> [..., K, C]``."""
        z = torch.einsum("kij,...j->...ki", self.w, h) + self.b
        return h[..., None, :] + F.silu(z)

    def forward(self, h: torch.Tensor, lm_head: torch.Tensor) -> torch.Tensor:
        """Logits ``[..., K, V]`` from hidden states ``h [..., C]`` and ``lm_head [V, C]``."""
        return self.hidden(h) @ lm_head.T


def typical_rule(
    epsilon: float = 0.09, delta: float = 0.3
) -> Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Medusa's typical acceptance on a tree, as a pure rule with the signature of
    :meth:`spectheory.verifiers.tree_base.TreeVerifier.verify` (child policy and rule fixed; draft
    laws unused).

    Node ``c`` (token ``x``) under ``u`` passes iff ``b(x) = 1`` for the per-step
    :func:`~spectheory.verifiers.biased.typical_acceptance` at ``p(. | u)``; the accepted
    node is the deepest node whose whole path passes (first in pre-order on ties); the
    token is drawn from ``p`` at that node by inverse CDF at ``u_final`` (``residual``: the
    node had drafted children, all failing).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.trees import DraftTree
    >>> tree = DraftTree.from_branching([2])
    >>> t = np.tile([0.05, 0.15, 0.8], (1, 3, 1))
    >>> rule = typical_rule(0.09, 0.3)
    >>> node, tok, res = rule(tree, [[-1, 0, 1]], t, t, np.zeros((1, 3)), [0.5])
    >>> node.tolist(), res.tolist()
    ([2], [False])
    """
    acc_fn = typical_acceptance(epsilon, delta)

    def rule(tree, tokens, target_laws, draft_laws, u_accept, u_final):
        x = np.asarray(tokens, dtype=np.int64)
        t = np.asarray(target_laws, dtype=np.float64)
        R, N, V = t.shape
        b = acc_fn(t, t)  # [R, N, V]: pass after node u
        par = np.asarray(tree.parents)
        ok = np.zeros((R, N), dtype=bool)
        ok[:, 0] = True
        rows = np.arange(R)
        for c in range(1, N):  # pre-order: parents first
            xc = x[:, c]
            ok[:, c] = ok[:, par[c]] & (xc >= 0) & (b[rows, par[c], np.maximum(xc, 0)] > 0.5)
        depth = np.asarray(tree.depth)
        score = np.where(ok, depth[None, :], -1)
        node = score.argmax(1)  # first maximum = pre-order first
        kids = np.zeros((R, N), dtype=bool)
        for c in range(1, N):
            kids[:, par[c]] |= x[:, c] >= 0
        residual = kids[rows, node]
        token = _categorical(t[rows, node], np.asarray(u_final, dtype=np.float64))
        return node, token, residual

    rule.name = f"typical(eps={epsilon:g},delta={delta:g})"  # type: ignore[attr-defined]  # the kit and the decoder read a rule's name
    return rule


class MedusaDrafter(LevelDrafter):
    """Drafter for :func:`~spectheory.decoder.tree_decode.tree_generate`: the heads' laws at
    the last accepted node's hidden state (head ``d`` for every node of depth ``d``), no draft
    model calls."""

    needs_hidden = True
    prefilled_target = True

    def __init__(
        self,
        target: Any,
        heads: MedusaHeads,
        batch: Any,
        law: Callable[[torch.Tensor], torch.Tensor],
        tcache: Any,
    ) -> None:
        self.target, self.heads, self.law = target, heads, law
        if int(batch.seq_len.min()) < 2:
            raise ValueError(
                "prompts: Medusa decoding needs prompts of at least 2 tokens (heads read h_{n-2})"
            )
        width = int((batch.seq_len - 1).max())
        start = torch.clamp(batch.seq_len - 1 - width, min=0)
        idx = (start[:, None] + torch.arange(width, device=start.device)).clamp(max=batch.tokens.shape[1] - 1)
        _, hidden = target(batch.tokens.gather(1, idx), cache=tcache, start=start, return_hidden=True)
        rows = torch.arange(len(start), device=start.device)
        self.h = hidden[rows, batch.seq_len - 2 - start]

    def root_law(self, batch: Any, K: int) -> torch.Tensor:
        """Every head's law at the last hidden state; the root's is head 0's."""
        if self.layout.tree.max_depth > self.heads.n_heads:
            raise ValueError(
                f"tree: depth {self.layout.tree.max_depth} exceeds the {self.heads.n_heads} Medusa heads"
            )
        self.head_laws = self.law(self.heads(self.h, self.target.wte.weight))  # [B, K_heads, V]
        return self.head_laws[:, 0]

    def level_laws(self, batch: Any, node_tokens: torch.Tensor, d: int, lo: int, hi: int) -> torch.Tensor:
        """Head ``d``'s law at every depth-``d`` node."""
        return self.head_laws[:, d, None, :]

    def observe(self, h: torch.Tensor) -> None:
        self.h = h


def medusa_generate(
    target: CausalLM,
    heads: MedusaHeads,
    prompts: Sequence[Prompt],
    max_new_tokens: int,
    tree: DraftTree,
    verifier: str | Verifier | TreeRule | Callable[..., Any] = "tree_topk",
    **kwargs: Any,
) -> GenerationResult:
    """Tree decoding with Medusa heads as the drafter (see :func:`tree_generate`).

    ``verifier``: a lossless tree verifier name (``"tree_topk"``: Medusa's top-k children;
    ``"tree_rrs"``/``"tree_rrs_wo"``/``"traversal"``: children sampled from the heads'
    laws) or a callable rule such as :func:`typical_rule` (then ``children=TopK()`` is used
    unless given). Prompts need at least 2 tokens.
    """
    from .tree_decode import tree_generate

    def make(batch, law, dev, dt, layout, tcache):
        d = MedusaDrafter(target, heads.to(dev), batch, law, tcache)
        d.layout = layout
        return d

    if callable(verifier) and not isinstance(verifier, str):
        kwargs.setdefault("children", TopK())
    return tree_generate(target, None, prompts, max_new_tokens, tree, verifier, drafter=make, **kwargs)


def load_heads(
    folder: str | os.PathLike | None = None, device: str | torch.device = "cpu"
) -> tuple[MedusaHeads, dict]:
    """The shipped Medusa heads of the shipped target and their metadata dict."""
    from .registry import WEIGHTS_DIR

    folder = WEIGHTS_DIR if folder is None else folder
    with open(os.path.join(folder, f"{HEADS_NAME}.json")) as fh:
        info = json.load(fh)
    heads = MedusaHeads(info["n_heads"], info["n_embd"])
    state = torch.load(os.path.join(folder, info["weights_file"]), map_location="cpu", weights_only=True)
    heads.load_state_dict({k: v.float() for k, v in state.items()})
    return heads.to(device).eval(), info

r"""Recursive rejection on a token tree in torch, on the decoder's device (issue 22).

The tree decoder's rule is the library's numpy function
(:class:`~spectheory.verifiers.tree_rules.RecursiveRejectionTree`), so on a GPU every round
copied the laws ``[B, N, V]`` to the host and back: at batch 1024 that copy and the numpy work
dominated the round. :func:`recursive_rejection_torch` is the same rule, step for step, on
torch tensors -- vectorised over the rows, a loop over the tree's nodes (pre-order) and
children, no host read -- for the child policies that declare a torch form of their slot law
(:meth:`ChildPolicy.torch_slot_law <spectheory.children.policy.ChildPolicy.torch_slot_law>`,
:attr:`~spectheory.children.policy.ChildPolicy.has_torch_slot_law`: ``IID``,
``WithoutReplacement``, ``TopK``, ``Greedy``).

Notation as in :mod:`spectheory.verifiers.tree_rules`: at node ``u`` with residual target
``r = p(. | u)``, child ``c`` (token ``x``, slot law ``s``) is accepted with probability
``min(1, r(x) / s(x))``; otherwise ``r <- norm(max(r - s, 0))`` (``r`` kept where that has
no mass). All children rejected, or none drafted: ``y ~ r`` by inverse CDF at ``u_final``.
The arithmetic (float64, ``cumsum(w) / sum(w)`` and "the number of CDF entries ``<= u``")
is the numpy rule's, so on the CPU the two give the same node, token and residual flag (the
tests check this on random trees, child policies, ragged rows and zero masses).

Examples
--------
One node drafted below the root (p = (1/3, 2/3), q = (2/3, 1/3)), token 0: accepted iff
``u < p(0)/q(0) = 1/2`` (the numpy docstring's example).

>>> import torch
>>> from spectheory.trees import DraftTree
>>> from spectheory.children import IID
>>> tree = DraftTree.from_branching([1])
>>> t = torch.tensor([1 / 3, 2 / 3], dtype=torch.float64).expand(2, 2, 2)
>>> d = torch.tensor([2 / 3, 1 / 3], dtype=torch.float64).expand(2, 2, 2)
>>> x = torch.tensor([[-1, 0], [-1, 0]])
>>> ua = torch.tensor([[0.0, 0.4], [0.0, 0.6]], dtype=torch.float64)
>>> node, tok, res = recursive_rejection_torch(tree, IID(), x, t, d, ua, torch.tensor([0.5, 0.5]))
>>> node.tolist(), res.tolist(), tok.tolist()
([1, 0], [False, True], [1, 1])
"""

from __future__ import annotations

from typing import Any

import torch

from ..laws.torch_sampling import safe_div as _safe_div

__all__ = ["recursive_rejection_torch", "torch_categorical"]


def torch_categorical(weights: torch.Tensor, u: torch.Tensor) -> torch.Tensor:
    """Inverse CDF of unnormalised ``weights [..., V]`` at ``u [...]``, as the numpy rule draws
    (:func:`~spectheory.laws.sampling.sample_categorical`: the number of entries of
    ``cumsum(w) / sum(w)`` at most ``u``)."""
    cdf = torch.cumsum(weights.to(torch.float64), dim=-1)
    cdf = cdf / cdf[..., -1:]
    return (cdf <= u.to(torch.float64)[..., None]).sum(-1)


def _ratio(r: torch.Tensor, s: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``r(x) / s(x)`` per row (0 where ``s(x) = 0`` or the node is absent)."""
    xs = x.clamp(min=0)[:, None]
    value = _safe_div(r.gather(1, xs)[:, 0], s.gather(1, xs)[:, 0])
    return torch.where(x >= 0, value, torch.zeros_like(value))


def _update(r: torch.Tensor, s: torch.Tensor, rejected: torch.Tensor) -> torch.Tensor:
    ex = torch.clamp(r - s, min=0.0)
    Z = ex.sum(-1)
    new = torch.where((Z > 0)[:, None], _safe_div(ex, Z[:, None]), r)
    return torch.where(rejected[:, None], new, r)


def recursive_rejection_torch(
    tree: Any,
    children: Any,
    tokens: torch.Tensor,
    target_laws: torch.Tensor,
    draft_laws: torch.Tensor,
    u_accept: torch.Tensor,
    u_final: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Recursive rejection on ``tree`` (module docstring), vectorised over ``R`` rows.

    Parameters
    ----------
    tree : DraftTree
    children : ChildPolicy
        A child policy with a torch slot law (``children.has_torch_slot_law``; else
        ``ValueError`` naming it).
    tokens : LongTensor [R, N]
        Node tokens in tree numbering (``-1``: not drafted; the root's entry is ignored).
    target_laws, draft_laws : Tensor [R, N, V]
        ``p`` and ``q`` at each node (a leaf's ``q`` is never read).
    u_accept : Tensor [R, N]
        The acceptance uniform of each node (the root's is ignored).
    u_final : Tensor [R]
        The uniform of the emitted token.

    Returns
    -------
    node : LongTensor [R]
        The last accepted node (0: the root, nothing accepted).
    token : LongTensor [R]
        The token emitted after it (a correction if ``residual``, else a bonus candidate).
    residual : BoolTensor [R]
        Whether a child of ``node`` was drafted and rejected.
    """
    if not getattr(children, "has_torch_slot_law", False):
        raise ValueError(
            f"children: no torch slot law for {type(children).__name__} (a child policy runs on "
            "the device when its class defines torch_slot_law, the torch form of its slot_law)"
        )
    slot_law = children.torch_slot_law
    t = target_laws.to(torch.float64)
    d = draft_laws.to(torch.float64)
    R, N, _ = t.shape
    dev = t.device
    node = torch.zeros(R, dtype=torch.int64, device=dev)
    law = t[:, 0].clone()
    residual = torch.zeros(R, dtype=torch.bool, device=dev)
    cur = torch.zeros(R, dtype=torch.int64, device=dev)
    done = torch.zeros(R, dtype=torch.bool, device=dev)
    ua = u_accept.to(torch.float64)
    for u in range(N):  # pre-order: a child follows its parent
        here = ~done & (cur == u)
        r = t[:, u]
        kids = list(tree.children[u])
        had = torch.zeros(R, dtype=torch.bool, device=dev)
        for j, c in enumerate(kids):
            xc = tokens[:, c]
            present = here & (xc >= 0)
            s = slot_law(d[:, u], tokens, kids, j)
            a = torch.clamp(_ratio(r, s, xc), max=1.0)
            acc = present & (ua[:, c] < a)
            cur = torch.where(acc, c, cur)
            here = here & ~acc
            rej = present & ~acc
            had = had | rej
            r = _update(r, s, rej)
        node = torch.where(here, u, node)
        law = torch.where(here[:, None], r, law)
        residual = torch.where(here, had, residual)
        done = done | here
    return node, torch_categorical(law, u_final), residual

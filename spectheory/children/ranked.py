r"""The ranked child policies: :class:`TopK` (Medusa/EAGLE engines) and :class:`Greedy`
(greedy drafting, Hu et al. 2025: top tokens plus a random one).

The table of every policy and what each engine asks of it: :mod:`spectheory.children`.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ..laws.sampling import categorical as _categorical
from ..laws.sampling import norm_excess as _norm_excess
from .policy import ChildPolicy, _node_args
from .sampled import IID

__all__ = ["TopK", "Greedy"]


@dataclass(frozen=True, repr=False)
class TopK(ChildPolicy):
    """The draft's ``k`` largest entries, deterministic (stable order; ``-1`` past ``V``).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.children import TopK
    >>> TopK().draw(np.array([[0.2, 0.5, 0.3]]), 4, None).tolist()
    [[1, 2, 0, -1]]
    """

    name = "topk"

    def draw(self, draft_rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """No randomness (``rng`` is not used)."""
        d = np.asarray(draft_rows, dtype=np.float64)
        R, V = d.shape
        order = np.argsort(-d, axis=-1, kind="stable")[:, : min(k, V)]
        out = np.full((R, k), -1, dtype=np.int64)
        out[:, : order.shape[1]] = order
        return out

    def node_laws(self, target: Any, draft: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        t, d, k = _node_args(target, draft, k)
        S, V = t.shape
        A = np.zeros((k, S, V))
        order = np.argsort(-d, axis=-1, kind="stable")
        rows = np.arange(S)
        res = t.copy()
        for j in range(min(k, V)):
            x = order[:, j]
            A[j, rows, x] = t[rows, x]
            res[rows, x] = 0.0
        return A, res

    def slot_law(self, draft_u: Any, tokens: np.ndarray, kids: list, j: int) -> Any:
        rows = np.arange(draft_u.shape[0])
        out = np.zeros_like(draft_u)
        x = tokens[:, kids[j]]
        out[rows, np.where(x >= 0, x, 0)] = 1
        return np.where((x >= 0)[:, None], out, draft_u)

    def torch_slot_law(self, draft_u: Any, tokens: Any, kids: list, j: int) -> Any:
        import torch

        xc = tokens[:, kids[j]]
        one_hot = torch.zeros_like(draft_u)
        one_hot[torch.arange(draft_u.shape[0], device=draft_u.device), xc.clamp(min=0)] = 1.0
        return torch.where((xc >= 0)[:, None], one_hot, draft_u)

    def next_child_law(self, draft_u: Any, tokens: np.ndarray, siblings: list) -> Any:
        R, V = draft_u.shape
        one = Fraction(1) if draft_u.dtype == object else 1.0
        order = np.argsort(-draft_u.astype(np.float64), axis=-1, kind="stable")
        j = len(siblings)
        w = np.zeros_like(draft_u)
        if j < V:
            w[np.arange(R), order[:, j]] = one
        return w

    def torch_draw(self, parent_laws: Any, p: int, j: int, u: Any, ok: Any, cache: dict) -> tuple[Any, Any]:
        import torch

        order = cache.get("order")
        if order is None:
            order = cache["order"] = torch.sort(parent_laws, dim=-1, descending=True, stable=True).indices
        V = parent_laws.shape[-1]
        if j >= V:
            ok = ok & False
        return order[:, p, min(j, V - 1)], ok


@dataclass(frozen=True, repr=False)
class Greedy(ChildPolicy):
    r"""Greedy drafting (Hu et al., ICLR 2025): one i.i.d. draw from ``q``, then the ``k - 1``
    largest entries of ``q`` (stable order; ``-1`` past ``V``).

    The drafted set is that of :func:`spectheory.analysis.drafting_laws.greedy_tuple_law`
    (``n_top = k - 1``, i.i.d.); the random slot comes first so that a slot's law does not
    depend on the number of siblings. Recursive rejection over these slots tests the random
    token against ``q`` and each top token against its point mass (accept with the residual's
    mass there), which is lossless like every recursive rejection (docs/trees.md).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.children import Greedy
    >>> Greedy().draw(np.array([[0.2, 0.5, 0.3]]), 3, np.random.default_rng(0))[:, 1:].tolist()
    [[1, 2]]
    >>> A, R = Greedy().node_laws(np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]]), 2)
    >>> np.round(A.sum(0) + R, 12).tolist()          # lossless at a node
    [[0.5, 0.5]]
    """

    name = "greedy"

    def draw(self, draft_rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """The random child by inverse CDF (one uniform per row), then the top ``k - 1`` tokens."""
        d = np.asarray(draft_rows, dtype=np.float64)
        R, V = d.shape
        out = np.full((R, k), -1, dtype=np.int64)
        out[:, 0] = _categorical(d, rng.random(R))
        order = np.argsort(-d, axis=-1, kind="stable")[:, : min(k - 1, V)]
        out[:, 1 : 1 + order.shape[1]] = order
        return out

    def node_laws(self, target: Any, draft: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        t, d, k = _node_args(target, draft, k)
        S, V = t.shape
        A = np.zeros((k, S, V))
        a = np.minimum(t, d)
        A[0] = a
        # the residual mass after the random slot, then TopK's point-mass tests on it
        res = np.clip(1.0 - a.sum(-1), 0.0, 1.0)[:, None] * _norm_excess(t, d)[0]
        order = np.argsort(-d, axis=-1, kind="stable")
        rows = np.arange(S)
        for j in range(1, min(k, V + 1)):
            x = order[:, j - 1]
            A[j, rows, x] = res[rows, x]
            res[rows, x] = 0.0
        return A, res

    def slot_law(self, draft_u: Any, tokens: np.ndarray, kids: list, j: int) -> Any:
        if j == 0:
            return draft_u
        return TopK().slot_law(draft_u, tokens, kids, j)

    def torch_slot_law(self, draft_u: Any, tokens: Any, kids: list, j: int) -> Any:
        if j == 0:
            return draft_u
        return TopK().torch_slot_law(draft_u, tokens, kids, j)

    def next_child_law(self, draft_u: Any, tokens: np.ndarray, siblings: list) -> Any:
        if not siblings:
            return draft_u
        return TopK().next_child_law(draft_u, tokens, siblings[1:])

    def torch_draw(self, parent_laws: Any, p: int, j: int, u: Any, ok: Any, cache: dict) -> tuple[Any, Any]:
        if j == 0:
            return IID().torch_draw(parent_laws, p, j, u, ok, cache)
        return TopK().torch_draw(parent_laws, p, j - 1, u, ok, cache)

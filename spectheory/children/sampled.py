r"""The sampled child policies: :class:`IID` (SpecInfer) and :class:`WithoutReplacement`
(Sequoia, recursive speculative decoding), with the exact without-replacement enumeration.

The table of every policy and what each engine asks of it: :mod:`spectheory.children`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._sizes import MAX_PATHS, positive_branches
from ..laws.sampling import categorical as _categorical
from ..laws.sampling import norm_excess as _norm_excess
from .policy import ChildPolicy, _node_args, _safe_div

__all__ = ["IID", "WithoutReplacement"]

#: Paths of the without-replacement enumeration per chunk of states (:meth:`WithoutReplacement.node_laws`).
_WO_CHUNK = 65_536


@dataclass(frozen=True, repr=False)
class IID(ChildPolicy):
    """Children drawn i.i.d. from the draft law (SpecInfer).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.children import IID
    >>> A, R = IID().node_laws(np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]]), 2)
    >>> round(float(A.sum()), 6)
    0.64
    """

    name = "iid"

    def draw(self, draft_rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """Inverse CDF per child (one uniform per child, row-major)."""
        d = np.asarray(draft_rows, dtype=np.float64)
        R, V = d.shape
        w = np.broadcast_to(d[:, None, :], (R, k, V))
        return _categorical(w, rng.random((R, k))).astype(np.int64)

    def node_laws(self, target: Any, draft: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        t, d, k = _node_args(target, draft, k)
        S, V = t.shape
        A = np.zeros((k, S, V))
        r, reach = t.copy(), np.ones(S)
        for j in range(k):
            a = np.minimum(r, d)
            A[j] = reach[:, None] * a
            reach = reach * np.clip(1.0 - a.sum(-1), 0.0, 1.0)
            r = _norm_excess(r, d)[0]
        return A, reach[:, None] * r

    def slot_law(self, draft_u: Any, tokens: np.ndarray, kids: list, j: int) -> Any:
        return draft_u

    def torch_slot_law(self, draft_u: Any, tokens: Any, kids: list, j: int) -> Any:
        return draft_u

    def next_child_law(self, draft_u: Any, tokens: np.ndarray, siblings: list) -> Any:
        return draft_u

    def torch_draw(self, parent_laws: Any, p: int, j: int, u: Any, ok: Any, cache: dict) -> tuple[Any, Any]:
        from ..laws.torch_sampling import sample_from_uniform

        return sample_from_uniform(parent_laws[:, p], u), ok

    def force(
        self, q: np.ndarray, forced: np.ndarray, group: int, slot: int, rng: np.random.Generator
    ) -> tuple[dict, np.ndarray]:
        """The other siblings are independent of the forced one: weight ``q(x)``."""
        rows = np.arange(q.shape[0])
        with np.errstate(divide="ignore"):
            return {slot: forced}, np.log(q[rows, forced])


@dataclass(frozen=True, repr=False)
class WithoutReplacement(ChildPolicy):
    """Children drawn by successive sampling without replacement (Sequoia); ``-1`` once the
    draft's support is exhausted.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.children import WithoutReplacement
    >>> x = WithoutReplacement().draw(np.array([[0.5, 0.5, 0.0]]), 3, np.random.default_rng(0))
    >>> sorted(x[0, :2].tolist()), int(x[0, 2])
    ([0, 1], -1)
    """

    name = "wo"

    def draw(self, draft_rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """Gumbel top-k (one uniform per vocabulary entry and row)."""
        d = np.asarray(draft_rows, dtype=np.float64)
        R, V = d.shape
        if k > V:
            out = np.full((R, k), -1, dtype=np.int64)
            out[:, :V] = self.draw(d, V, rng)
            return out
        with np.errstate(divide="ignore"):
            keys = np.log(d) - np.log(-np.log(np.clip(rng.random((R, V)), 1e-300, 1.0 - 1e-16)))
        order = np.argsort(-keys, axis=-1, kind="stable")[:, :k]
        return np.where(np.take_along_axis(d, order, 1) > 0, order, -1).astype(np.int64)

    def node_laws(self, target: Any, draft: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
        t, d, k = _node_args(target, draft, k)
        S, V = t.shape
        A = np.zeros((k, S, V))
        step = max(1, _WO_CHUNK // self.node_law_paths(V, k))
        for lo in range(0, S, step):
            hi = min(S, lo + step)
            A[:, lo:hi] = _wo_accept(t[lo:hi], d[lo:hi], k)
        return A, np.clip(t - A.sum(0), 0.0, None)

    def node_law_paths(self, V: int, k: int) -> int:
        return V ** (k - 1)

    def slot_law(self, draft_u: Any, tokens: np.ndarray, kids: list, j: int) -> Any:
        return self.next_child_law(draft_u, tokens, kids[:j])

    def torch_slot_law(self, draft_u: Any, tokens: Any, kids: list, j: int) -> Any:
        import torch

        from ..laws.torch_sampling import safe_div as _safe_div

        rem = draft_u.clone()
        rows = torch.arange(draft_u.shape[0], device=draft_u.device)
        for c in kids[:j]:  # the earlier siblings' tokens, removed (rows where c is drafted)
            xc = tokens[:, c]
            at = xc.clamp(min=0)
            rem[rows, at] = rem[rows, at] * (xc < 0)
        return _safe_div(rem, rem.sum(-1)[:, None])

    def next_child_law(self, draft_u: Any, tokens: np.ndarray, siblings: list) -> Any:
        rows = np.arange(draft_u.shape[0])
        rem = draft_u.copy()
        for c in siblings:
            x = tokens[:, c]
            ok = x >= 0
            rem[rows[ok], x[ok]] = 0
        return _safe_div(rem, rem.sum(-1)[:, None])

    def torch_draw(self, parent_laws: Any, p: int, j: int, u: Any, ok: Any, cache: dict) -> tuple[Any, Any]:
        import torch

        from ..laws.torch_sampling import sample_from_uniform

        law = parent_laws[:, p]
        rem = cache.get(p)
        rem = law.clone() if rem is None else rem
        ok = ok & (rem.sum(-1) > 1e-300)
        x = sample_from_uniform(torch.where(ok[:, None], rem, law), u)
        rem = rem.clone()
        rem[torch.arange(law.shape[0], device=law.device), x] = 0.0
        cache[p] = rem
        return x, ok

    def force(
        self, q: np.ndarray, forced: np.ndarray, group: int, slot: int, rng: np.random.Generator
    ) -> tuple[dict, np.ndarray]:
        r"""The other siblings are drawn successively from ``q`` without the forced token and the
        earlier ones (one uniform per row and sibling, in slot order); with ``y_slot = x``

        .. math:: P = \prod_i \frac{q(y_i)}{1 - \sum_{l < i} q(y_l)}, \qquad
                  Q = \prod_{i \ne s} \frac{q(y_i)}{1 - q(x) - \sum_{l < i,\, l \ne s} q(y_l)}.
        """
        B = q.shape[0]
        rows = np.arange(B)
        removed = np.zeros_like(q, dtype=bool)
        removed[rows, forced] = True
        cum_p, cum_q = np.zeros(B), q[rows, forced].copy()
        logp, logq = np.zeros(B), np.zeros(B)
        tokens = {}
        with np.errstate(divide="ignore", invalid="ignore"):
            for i in range(group):
                if i == slot:
                    y = forced
                else:
                    w = np.where(removed, 0.0, q)
                    c = np.cumsum(w, 1)
                    u = rng.random(B) * c[:, -1]
                    y = np.minimum((c <= u[:, None]).sum(1), q.shape[1] - 1)
                    removed[rows, y] = True
                    logq += np.log(q[rows, y]) - np.log1p(-cum_q)
                    cum_q += q[rows, y]
                    tokens[i] = y
                logp += np.log(q[rows, y]) - np.log1p(-cum_p)
                cum_p += q[rows, y]
        tokens[slot] = forced
        return tokens, logp - logq


def _wo_accept(t, d, k):
    """``accept [k, S, V]`` of recursive rejection without replacement (enumerates the
    rejected siblings of slots ``0..k-2``; slot ``k-1``'s rejections are not needed)."""
    S, V = t.shape
    A = np.zeros((k, S, V))
    sid, prob, r, dc = np.arange(S), np.ones(S), t.copy(), d.copy()
    n_paths = S
    for j in range(k):
        mass = dc.sum(-1)
        live = mass > 0  # draft support exhausted: no more children
        sid, prob, r, dc = sid[live], prob[live], r[live], dc[live] / mass[live, None]
        if prob.size == 0:
            break
        np.add.at(A[j], sid, prob[:, None] * np.minimum(r, dc))
        if j == k - 1:
            break
        rej = prob[:, None] * np.maximum(dc - r, 0.0)
        r_next = _norm_excess(r, dc)[0]
        p_idx, x_idx, n_paths = positive_branches(
            rej,
            n_paths,
            MAX_PATHS,
            lambda: (
                f"k: exact recursive rejection without replacement needs more than {MAX_PATHS} "
                f"paths (S={S}, V={V}, k={k}); use Monte Carlo"
            ),
        )
        sid, prob, r = sid[p_idx], rej[p_idx, x_idx], r_next[p_idx]
        dc = dc[p_idx].copy()
        dc[np.arange(p_idx.size), x_idx] = 0.0
    return A

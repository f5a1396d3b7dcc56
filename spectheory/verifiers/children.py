r"""Child policies: how the children of a draft-tree node are drawn, as objects.

Notation: p = target, q = draft (code says ``target``/``draft``). A node with ``k`` children
draws them from the draft law ``q`` after the node; the *child policy* fixes the joint law
of the ``k`` tokens, and through it the law of the ``j``-th child given the earlier ones
(its *slot law* ``s_j``), which the tree rules test against:

================================  ============  =============================================
class                             shorthand     slot law ``s_j`` / who uses it
================================  ============  =============================================
:class:`IID`                      ``"iid"``     ``s_j = q`` (SpecInfer)
:class:`WithoutReplacement`       ``"wo"``      ``q`` without the earlier siblings' tokens,
                                                renormalised (Sequoia, recursive speculative
                                                decoding); successive sampling
:class:`TopK`                     ``"topk"``    the point mass on the ``j``-th largest entry
                                                of ``q`` (stable order; Medusa/EAGLE engines:
                                                Medusa's candidates are ``TopK`` of the
                                                heads' laws)
:class:`Greedy`                   ``"greedy"``  slot 0: ``q`` (one random draft); slot
                                                ``j >= 1``: the point mass on the ``j``-th
                                                largest entry of ``q`` (greedy drafting, Hu
                                                et al. 2025: top tokens plus a random one)
================================  ============  =============================================

Every engine asks the policy, never its name: Monte Carlo :meth:`ChildPolicy.draw`
(``[R, k]`` tokens from ``[R, V]`` rows), the exact per-node engine
:meth:`ChildPolicy.node_laws` (recursive rejection's accept/residual laws at a node), the
pure tree rules :meth:`ChildPolicy.slot_law`, the enumeration engine
:meth:`ChildPolicy.next_child_law`, the real decoder :meth:`ChildPolicy.torch_draw` and the
decoder validation's importance forcing :meth:`ChildPolicy.force`. A new policy is one
subclass plus :func:`register_child_policy`; the strings are shorthands resolved by
:func:`get_child_policy` at the API boundary only.

Examples
--------
>>> import numpy as np
>>> from spectheory.verifiers.children import get_child_policy
>>> wo = get_child_policy("wo")
>>> wo, wo.name
(WithoutReplacement(), 'wo')
>>> A, R = wo.node_laws(np.array([[0.5, 0.5]]), np.array([[0.9, 0.1]]), 2)
>>> np.round(A.sum(0) + R, 12).tolist()          # lossless at a node: the target law
[[0.5, 0.5]]
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .child_policy import (
    CHILD_POLICIES,
    ChildPolicy,
    _node_args,
    _safe_div,  # noqa: F401  (re-exported)
    get_child_policy,
    list_child_policies,
    register_child_policy,
)
from .multidraft import MAX_PATHS, _categorical, _norm_excess

__all__ = [
    "ChildPolicy",
    "IID",
    "WithoutReplacement",
    "TopK",
    "Greedy",
    "CHILD_POLICIES",
    "get_child_policy",
    "register_child_policy",
    "list_child_policies",
]

#: Paths of the without-replacement enumeration per chunk of states (:meth:`WithoutReplacement.node_laws`).
_WO_CHUNK = 65_536


@dataclass(frozen=True, repr=False)
class IID(ChildPolicy):
    """Children drawn i.i.d. from the draft law (SpecInfer).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.children import IID
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

    def next_child_law(self, draft_u: Any, tokens: np.ndarray, siblings: list) -> Any:
        return draft_u

    def torch_draw(self, parent_laws: Any, p: int, j: int, u: Any, ok: Any, cache: dict) -> tuple[Any, Any]:
        from .torch_forms import sample_from_uniform

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
    >>> from spectheory.verifiers.children import WithoutReplacement
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

        from .torch_forms import sample_from_uniform

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


@dataclass(frozen=True, repr=False)
class TopK(ChildPolicy):
    """The draft's ``k`` largest entries, deterministic (stable order; ``-1`` past ``V``).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.children import TopK
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
    >>> from spectheory.verifiers.children import Greedy
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

    def next_child_law(self, draft_u: Any, tokens: np.ndarray, siblings: list) -> Any:
        if not siblings:
            return draft_u
        return TopK().next_child_law(draft_u, tokens, siblings[1:])

    def torch_draw(self, parent_laws: Any, p: int, j: int, u: Any, ok: Any, cache: dict) -> tuple[Any, Any]:
        if j == 0:
            return IID().torch_draw(parent_laws, p, j, u, ok, cache)
        return TopK().torch_draw(parent_laws, p, j - 1, u, ok, cache)


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
        p_idx, x_idx = np.nonzero(rej > 0)
        n_paths += p_idx.size
        if n_paths > MAX_PATHS:
            raise ValueError(
                f"k: exact recursive rejection without replacement needs more than {MAX_PATHS} "
                f"paths (S={S}, V={V}, k={k}); use Monte Carlo"
            )
        sid, prob, r = sid[p_idx], rej[p_idx, x_idx], r_next[p_idx]
        dc = dc[p_idx].copy()
        dc[np.arange(p_idx.size), x_idx] = 0.0
    return A


for _p in (IID(), WithoutReplacement(), TopK(), Greedy()):
    register_child_policy(_p)

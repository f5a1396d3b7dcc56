r"""SpecHub as a tree round: its drafting law as a child policy, its transport plan as a tree rule.

Notation: p = target, q = draft, ``a = argmax q`` the hub (the smaller index on ties). SpecHub
(Sun, Zhou, Chen & Sun, EMNLP 2024, arXiv 2411.05289) as the authors run it
(MasterGodzilla/Speculative_decoding_OT @ 7d592b7, EAGLE): every node of a full binary draft
tree (their ``binary2`` ... ``binary5`` tree choices, ``EAGLE/eagle/model/choices.py``, are
:meth:`DraftTree.from_branching([2] * depth) <spectheory.trees.DraftTree.from_branching>` with
depth 1 to 4) draws its two children with the hub drafting law (``EAGLE/eagle/model/cnets.py``,
``sample``, ``mode == 'spechub'``) and is verified with the hub transport plan (the
``mode == 'spechub'`` branch of ``evaluate_posterior`` in ``EAGLE/eagle/model/utils.py``; the
plan, its four stages and the proof that it is lossless and optimal for its drafting law are in
:mod:`spectheory.verifiers.spechub`). A node with one drafted child (the hub is the only token
of ``q``, or a one-child node of another tree) is token verification, as the authors' loop does
when it finds one candidate; more than two children is refused, as the authors' code refuses.

- :class:`HubChildren` (shorthand ``"spechub"``): slot 0 ``x_1 ~ q``; slot 1 ``x_2 = a`` if
  ``x_1 != a``, else ``x_2 ~ q`` without ``a``, renormalised (``-1`` when ``q = 1_a``).
- :class:`SpecHubTree`: at a node with children ``(x_1, x_2)`` and target ``p`` after it, the
  stage masses of :func:`hub_stage_masses` give, for the pair ``(i, a)``: accept ``i`` iff
  ``u_1 < m1_i / q_i``, else the hub iff ``u_2 < m4 / S4``; for the pair ``(a, i)``: accept
  ``i`` iff ``u_2 < m2_i / Q(a, i)``, else the hub iff ``u_1 < m3 / S3`` (``u_c`` the uniform
  of child ``c``); otherwise emit ``y ~ norm(r)`` (a correction). Node-local: the decision
  depends only on the children's tokens, so the per-node exact engine applies, with

  .. math::
      A_0(x) = m1_x \ (x \ne a), \quad A_0(a) = m3, \qquad
      A_1(x) = m2_x \ (x \ne a), \quad A_1(a) = m4, \qquad R = r,

  and ``A_0 + A_1 + R = p`` at every node: lossless (the subtree under the accepted child is
  drafted afresh from its token, as for every node-local rule; docs/trees.md).

:data:`SPECHUB` is the rule's instance. Like ``BATCH_TREE`` it is defined on trees with at most
two children per node, so it is not in the verifier registry that loops over every tree
verifier read: pass the object (``TreeRound(DraftTree.from_branching([2, 2]), SPECHUB)``,
``tree_generate(..., verifier=SPECHUB)``).

Examples
--------
>>> import spectheory as st
>>> from spectheory.trees import DraftTree, TreeRound
>>> from spectheory.verifiers.spechub_tree import SPECHUB
>>> chain = st.DecodingChain.iid([1/3, 2/3], [2/3, 1/3])
>>> res = chain.protocol(6, TreeRound(DraftTree.from_branching([2]), SPECHUB))
>>> round(float(res.accepted_count_law[1]), 12)    # both tokens drafted: every round accepts one
1.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..children import IID
from ..children.policy import ChildPolicy, _safe_div, register_child_policy
from .multidraft import _categorical
from .tree_base import TreeVerifier
from .tree_rules import _descend, _min1, _ratio, _residual

__all__ = ["hub_stage_masses", "HubChildren", "SpecHubTree", "SPECHUB"]


def _zeros_like(x: Any) -> Any:
    return np.zeros_like(x) if x.dtype != object else np.full(x.shape, 0 * x.flat[0], dtype=object)


def hub_stage_masses(target: Any, draft: Any) -> dict[str, Any]:
    r"""The four stage masses of SpecHub's plan per row (:mod:`spectheory.verifiers.spechub`).

    Vectorised over rows; float arrays or ``fractions.Fraction`` object arrays.

    Parameters
    ----------
    target, draft : array, shape (R, V)

    Returns
    -------
    dict
        ``a [R]`` (the hub), ``m1``, ``m2``, ``q_ai``, ``r`` (``[R, V]``; zero at the hub except
        ``r``) and ``s3``, ``m3``, ``s4``, ``m4`` (``[R]``): ``m1_i = min(p_i, q_i)``,
        ``Q(a, i) = q_a q_i / (1 - q_a)``, ``m2_i = min(p_i - m1_i, Q(a, i))``, ``S3 = sum_i
        (Q(a, i) - m2_i)`` (1 when ``q = 1_a``), ``m3 = min(p_a, S3)``, ``S4 = sum_i (q_i -
        m1_i)``, ``m4 = min(p_a - m3, S4)``, ``r_i = p_i - m1_i - m2_i``, ``r_a = p_a - m3 - m4``.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.spechub_tree import hub_stage_masses
    >>> st = hub_stage_masses(np.array([[0.5, 0.3, 0.2]]), np.array([[0.2, 0.5, 0.3]]))
    >>> int(st["a"][0]), np.round(st["m1"] + st["m2"], 12).tolist()
    (1, [[0.4, 0.0, 0.2]])
    """
    p, q = np.atleast_2d(np.asarray(target)), np.atleast_2d(np.asarray(draft))
    R, V = q.shape
    rows = np.arange(R)
    a = np.argmax(q, axis=-1)
    zero = _zeros_like(q)
    others = (np.arange(V)[None, :] != a[:, None]) & (q > 0)
    rest = np.where(others, q, zero).sum(-1)
    q_a, p_a = q[rows, a], p[rows, a]
    m1 = np.where(others, np.minimum(p, q), zero)
    q_ai = np.where(others, q_a[:, None] * _safe_div(q, rest[:, None]), zero)
    m2 = np.where(others, np.minimum(p - m1, q_ai), zero)
    s3 = np.where(others.any(-1), (q_ai - m2).sum(-1), 1 + 0 * q_a)
    m3 = np.minimum(p_a, s3)
    s4 = np.where(others, q - m1, zero).sum(-1)
    m4 = np.minimum(p_a - m3, s4)
    r = p - m1 - m2
    r[rows, a] = p_a - m3 - m4
    if r.dtype != object:
        r = np.maximum(r, 0.0)
    return dict(a=a, m1=m1, m2=m2, q_ai=q_ai, s3=s3, m3=m3, s4=s4, m4=m4, r=r)


def _check(k: int) -> None:
    if k > 2:
        raise ValueError(f"tree: SpecHub drafts at most 2 children per node, got a node with {k}")


def _hub_rest(q: Any, a: np.ndarray) -> Any:
    """``q`` without the hub, renormalised (zero rows when ``q = 1_a``)."""
    rem = q.copy()
    rem[np.arange(q.shape[0]), a] = 0
    return _safe_div(rem, rem.sum(-1)[:, None])


def _point_mass(q: Any, x: np.ndarray) -> Any:
    out = _zeros_like(q)
    out[np.arange(q.shape[0]), x] = 1
    return out


@dataclass(frozen=True, repr=False)
class HubChildren(ChildPolicy):
    """SpecHub's drafting law (module docstring): one draw from ``q``, then the hub or, when the
    draw is the hub, a draw from ``q`` without it. At most two children.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.spechub_tree import HubChildren
    >>> x = HubChildren().draw(np.tile([0.5, 0.3, 0.2], (1000, 1)), 2, np.random.default_rng(0))
    >>> bool(((x == 0).sum(1) == 1).all())     # every pair holds the hub once
    True
    """

    name = "spechub"

    def draw(self, draft_rows: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
        """Two uniforms per row (the first child, then the second when the first is the hub)."""
        _check(k)
        d = np.asarray(draft_rows, dtype=np.float64)
        R, _ = d.shape
        u = rng.random((R, k))
        first = _categorical(d, u[:, 0]).astype(np.int64)
        if k == 1:
            return first[:, None]
        a = np.argmax(d, axis=-1)
        rest = _hub_rest(d, a)
        has = rest.sum(-1) > 0
        other = np.where(has, _categorical(np.where(has[:, None], rest, d), u[:, 1]), -1)
        return np.stack([first, np.where(first == a, other, a)], axis=1).astype(np.int64)

    def slot_law(self, draft_u: Any, tokens: np.ndarray, kids: list, j: int) -> Any:
        return self.next_child_law(draft_u, tokens, kids[:j])

    def next_child_law(self, draft_u: Any, tokens: np.ndarray, siblings: list) -> Any:
        _check(len(siblings) + 1)
        if not siblings:
            return draft_u
        a = np.argmax(draft_u, axis=-1)
        x1 = tokens[:, siblings[0]]
        hub = (x1 == a)[:, None]
        return np.where(hub, _hub_rest(draft_u, a), _point_mass(draft_u, a))

    def torch_draw(self, parent_laws: Any, p: int, j: int, u: Any, ok: Any, cache: dict) -> tuple[Any, Any]:
        import torch

        from .torch_forms import sample_from_uniform

        _check(j + 1)
        law = parent_laws[:, p]
        if j == 0:
            x = sample_from_uniform(law, u)
            cache[p] = x
            return x, ok
        a = torch.argmax(law, dim=-1)
        rest = law.clone()
        rest[torch.arange(law.shape[0], device=law.device), a] = 0.0
        has = rest.sum(-1) > 1e-300
        other = sample_from_uniform(torch.where(has[:, None], rest, law), u)
        hub_first = cache[p] == a
        return torch.where(hub_first, other, a), ok & (has | ~hub_first)


class SpecHubTree(TreeVerifier):
    """SpecHub's transport plan at every node of a draft tree (module docstring); node-local."""

    node_local = True

    def __init__(self, name: str = "spechub") -> None:
        super().__init__(name, HubChildren())

    def node_laws(self, target: np.ndarray, draft: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Exact per-node laws ``(accept [k, S, V], residual [S, V])`` (module docstring)."""
        _check(k)
        t = np.atleast_2d(np.asarray(target, dtype=np.float64))
        d = np.atleast_2d(np.asarray(draft, dtype=np.float64))
        if k == 1:
            return IID().node_laws(t, d, 1)
        st = hub_stage_masses(t, d)
        rows = np.arange(t.shape[0])
        A = np.stack([st["m1"], st["m2"]])
        A[0, rows, st["a"]] = st["m3"]
        A[1, rows, st["a"]] = st["m4"]
        return A, st["r"]

    def _node(self, t: Any, d: Any, x1: np.ndarray, x2: np.ndarray) -> tuple[Any, Any, np.ndarray, Any]:
        """Per row, given the pair ``(x1, x2)``: P(accept the drafted non-hub child), P(accept the
        hub | the other rejected), whether the hub is child 0, and the correction law."""
        st = hub_stage_masses(t, d)
        rows = np.arange(t.shape[0])
        hub_first = x1 == st["a"]
        other = np.where(hub_first, x2, x1)
        o = np.maximum(other, 0)
        ratio = np.where(
            hub_first,
            _safe_div(st["m2"][rows, o], st["q_ai"][rows, o]),
            _safe_div(st["m1"][rows, o], d[rows, o]),
        )
        ratio = np.where(other >= 0, ratio, 0 * ratio)
        hub = np.where(hub_first, _safe_div(st["m3"], st["s3"]), _safe_div(st["m4"], st["s4"]))
        z = st["r"].sum(-1)
        law = np.where((z > 0)[:, None], _safe_div(st["r"], z[:, None]), t)
        return ratio, hub, hub_first, law

    def _pair(self, t: Any, d: Any, x1: np.ndarray, x2: np.ndarray) -> tuple[Any, Any, Any]:
        """P(accept child 0), P(accept child 1) given the pair, and the correction law."""
        ratio, hub, hub_first, law = self._node(t, d, x1, x2)
        hub_acc = (1 - ratio) * hub
        return np.where(hub_first, hub_acc, ratio), np.where(hub_first, ratio, hub_acc), law

    def _one(self, t: Any, d: Any, x: np.ndarray) -> tuple[Any, Any]:
        """One child: token verification (accept ``min(1, p/q)``, else ``norm((p - q)_+)``), the
        recursive-rejection step of :mod:`.tree_rules` (0 where the child is absent)."""
        return _min1(_ratio(t, d, x)), _residual(t, d)

    def _verify(self, tree, x, t, d, ua, uf):
        R = t.shape[0]

        def node_step(u, here, cur):
            kids = list(tree.children[u])
            _check(len(kids))
            r = t[:, u]
            had = np.zeros(R, dtype=bool)
            if kids:
                c1 = kids[0]
                present = here & (x[:, c1] >= 0)
                if len(kids) == 1:
                    a1, r_rej = self._one(t[:, u], d[:, u], x[:, c1])
                    acc1 = present & (ua[:, c1] < a1)
                    acc2 = np.zeros(R, dtype=bool)
                else:
                    c2 = kids[1]
                    ratio, hub, hub_first, r_rej = self._node(t[:, u], d[:, u], x[:, c1], x[:, c2])
                    # the drafted (non-hub) child is tested first, with its own uniform; then the hub
                    u_other = np.where(hub_first, ua[:, c2], ua[:, c1])
                    u_hub = np.where(hub_first, ua[:, c1], ua[:, c2])
                    other_ok = (u_other < ratio) & (np.where(hub_first, x[:, c2], x[:, c1]) >= 0)
                    hub_ok = ~other_ok & (u_hub < hub)
                    acc1 = present & np.where(hub_first, hub_ok, other_ok)
                    acc2 = present & np.where(hub_first, other_ok, hub_ok)
                    cur[acc2] = c2
                cur[acc1] = c1
                here = here & ~acc1 & ~acc2
                had = present & here
                r = np.where(had[:, None], r_rej, r)
            return here, r, had

        return _descend(tree, t, uf, node_step)

    def _outcome_law(self, tree, x, t, d):
        R = t.shape[0]
        accept = np.zeros(x.shape, dtype=t.dtype)
        final = np.zeros_like(t)
        one = np.full(R, 1, dtype=object) if t.dtype == object else np.ones(R)

        def visit(u, reach):
            kids = list(tree.children[u])
            _check(len(kids))
            stay, r = one, t[:, u]
            if kids:
                present = x[:, kids[0]] >= 0
                if len(kids) == 1:
                    p1, r_rej = self._one(t[:, u], d[:, u], x[:, kids[0]])
                    probs = [p1]
                else:
                    p1, p2, r_rej = self._pair(t[:, u], d[:, u], x[:, kids[0]], x[:, kids[1]])
                    probs = [p1, p2]
                for c, pc in zip(kids, probs):
                    visit(c, reach * np.where(present, pc, 0 * pc))
                stay = np.where(present, 1 - sum(probs), one)
                r = np.where(present[:, None], r_rej, r)
            accept[:, u] = reach * stay
            final[:, u] = r

        visit(0, one)
        return accept, final


register_child_policy(HubChildren())

#: SpecHub's tree rule with its drafting law (not registered: at most two children per node).
SPECHUB = SpecHubTree()

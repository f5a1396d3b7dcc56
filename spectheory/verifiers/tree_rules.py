r"""The tree rules: recursive rejection (top-down) and traversal (leaf-to-root), registered.

Notation: p = target, q = draft; a realisation and the uniform convention as in
:mod:`spectheory.verifiers.tree_base`; ``s`` is the slot law of a child under the verifier's
child policy (:meth:`spectheory.children.ChildPolicy.slot_law`). Recursive
rejection is lossless for every child policy (proof in docs/trees.md). Traversal is proved
lossless by Weng et al. in their setting (children without replacement, ``traversal``); here
both registered forms, ``traversal`` and ``traversal_iid``, are *checked* lossless exactly (in
Fractions, on small chains; docs/trees.md): for i.i.d. children that check is all there is.

- :class:`RecursiveRejectionTree` (top-down): at node ``u`` with residual target
  ``r = p(. | u)``, for each child ``c`` (token ``x``, slot law ``s``): accept ``c`` with
  probability ``min(1, r(x)/s(x))`` and descend; otherwise ``r <- norm(max(r - s, 0))``.
  All children rejected: emit ``y ~ r``. With top-k children this is "accept ``x`` with
  probability ``r(x)``, else zero it and renormalise". On a single path it is token
  verification (:meth:`spectheory.verifiers.TokenVerifier.for_tree`).
- :class:`TraversalTree` (Weng et al. 2025, arXiv 2505.12398, leaf-to-root): every node
  carries a sequence-level weight ``w`` (root 1; child ``w_c = min(1, w_u r_u(x_c)/s(x_c))``
  when its subtree is entered). The first remaining leaf in depth-first order is tested:
  accepted with probability ``w``, it ends the round (emit its path, then ``y ~ r`` at that
  node). Rejected, it is deleted and its parent updates ``Z = sum (w_u r_u - s)_+``,
  ``r_u <- (w_u r_u - s)_+ / Z``, ``w_u <- Z / (Z + 1 - w_u)`` (1 if that is 0/0). On a
  single path this is block verification (Sun et al. 2024); at depth 1 it is recursive
  rejection.

Registered (:func:`spectheory.verifiers.get_verifier`):

=================  =========================  ==========================  ===================================
name               rule                       children                    who uses it
=================  =========================  ==========================  ===================================
``tree_rrs``       RecursiveRejectionTree     IID                         SpecInfer (Miao et al. 2024)
``tree_rrs_wo``    RecursiveRejectionTree     WithoutReplacement          Sequoia (Chen et al. 2024)
``tree_topk``      RecursiveRejectionTree     TopK                        Medusa / EAGLE engines
``tree_greedy``    RecursiveRejectionTree     Greedy                      Hu et al. 2025 (greedy drafting)
``traversal``      TraversalTree              WithoutReplacement          Weng et al. 2025
``traversal_iid``  TraversalTree              IID                         traversal on i.i.d. children
=================  =========================  ==========================  ===================================

Examples
--------
One node drafted below the root (p = (1/3, 2/3), q = (2/3, 1/3)), token 0: accepted iff
``u < p(0)/q(0) = 1/2``.

>>> import numpy as np
>>> from spectheory.trees import DraftTree
>>> from spectheory.verifiers import get_verifier
>>> tree = DraftTree.from_branching([1])
>>> t = np.tile([1/3, 2/3], (2, 2, 1)); d = np.tile([2/3, 1/3], (2, 2, 1))
>>> v = get_verifier("tree_rrs")
>>> node, tok, res = v.verify(tree, [[-1, 0], [-1, 0]], t, d, [[0, 0.4], [0, 0.6]], [0.5, 0.5])
>>> node.tolist(), res.tolist(), tok.tolist()
([1, 0], [False, True], [1, 1])
"""

from __future__ import annotations

import numpy as np

from ..children import IID, Greedy, TopK, WithoutReplacement, _safe_div
from .base import register_verifier
from .multidraft import _categorical
from .tree_base import TreeVerifier

__all__ = [
    "RecursiveRejectionTree",
    "TraversalTree",
    "TREE_RRS",
    "TREE_RRS_WO",
    "TREE_TOPK",
    "TREE_GREEDY",
    "TRAVERSAL",
    "TRAVERSAL_IID",
]


def _ratio(r, s, x):
    """``r(x) / s(x)`` per run (0 where ``s(x) = 0`` or the node is absent)."""
    rows = np.arange(r.shape[0])
    xs = np.where(x >= 0, x, 0)
    return np.where(x >= 0, _safe_div(r[rows, xs], s[rows, xs]), 0)


def _min1(a):
    return np.where(a < 1, a, 1)


def _ones(R, dtype):
    """Ones of ``dtype`` (an object array of int 1 for Fraction laws)."""
    return np.full(R, 1, dtype=object) if np.dtype(dtype).hasobject else np.ones(R, dtype=dtype)


def _residual(r, s):
    """``norm((r - s)_+)`` per run (``r`` itself where the residual has no mass)."""
    ex = np.maximum(r - s, 0)
    Z = ex.sum(-1)
    return np.where((Z > 0)[:, None], _safe_div(ex, Z[:, None]), r)


def _update_rrs(r, s, present):
    """The law after a rejected child drawn from ``s``: :func:`_residual` where ``present``."""
    return np.where(present[:, None], _residual(r, s), r)


def _update_traversal(r, w, s, present):
    ex = np.maximum(w[:, None] * r - s, 0)
    Z = ex.sum(-1)
    r_new = np.where((Z > 0)[:, None], _safe_div(ex, Z[:, None]), r)
    den = Z + 1 - w
    w_new = np.where(den > 0, _safe_div(Z, den), 1)
    return np.where(present[:, None], r_new, r), np.where(present, w_new, w)


def _descend(tree, t, uf, node_step):
    """The top-down walk of a rule that moves each run from a node to at most one child.

    Nodes are visited in pre-order (a child follows its parent); at node ``u``,
    ``node_step(u, here, cur) -> (stop, r, had)`` is handed the runs standing there
    (``here``), moves those that accept a child to it (``cur[run] = child``) and returns the runs
    that stop at ``u``, the law their token is drawn from and whether it is a correction.
    Returns ``(node, token, residual)`` (:meth:`TreeVerifier.verify`).
    """
    R = t.shape[0]
    node = np.zeros(R, dtype=np.int64)
    law = t[:, 0].copy()
    residual = np.zeros(R, dtype=bool)
    cur = np.zeros(R, dtype=np.int64)
    done = np.zeros(R, dtype=bool)
    for u in range(tree.n_nodes):  # pre-order: a child follows its parent
        here = ~done & (cur == u)
        if not here.any():
            continue
        here, r, had = node_step(u, here, cur)
        node[here] = u
        law[here] = r[here]
        residual[here] = had[here]
        done |= here
    return node, _categorical(law, uf), residual


class _WeightedTree(TreeVerifier):
    """The exact outcome law both tree rules share: a depth-first walk in which node ``u`` tests
    its children in order with ``a = min(1, w_u r(x_c) / s(x_c))``, and a child's rejection
    updates ``(r, w_u)``. A rule says what entering a child means (:meth:`_enter`), how a
    rejection updates the node (:meth:`_update`) and the probability that a node whose children
    were all rejected ends the round (:meth:`_stop`)."""

    @staticmethod
    def _enter(visit, c, a, reach):
        """Walk child ``c`` (test passed with probability ``a``, reached with ``reach``);
        returns the probability that ``c`` is rejected."""
        raise NotImplementedError

    @staticmethod
    def _update(r, w, s, present):
        """``(r, w)`` after a rejected child drawn from ``s`` (where ``present``)."""
        raise NotImplementedError

    @staticmethod
    def _stop(u, w):
        """The probability that node ``u`` ends the round once its children are rejected."""
        raise NotImplementedError

    def _outcome_law(self, tree, x, t, d):
        R = t.shape[0]
        slot_law = self.children.slot_law
        accept = np.zeros(x.shape, dtype=t.dtype)
        final = np.zeros_like(t)

        def visit(u, w_u, reach):
            r = t[:, u]
            kids = tree.children[u]
            stay = _ones(R, t.dtype)
            for j, c in enumerate(kids):
                present = x[:, c] >= 0
                s = slot_law(d[:, u], x, kids, j)
                a = _min1(w_u * _ratio(r, s, x[:, c]))
                stay = stay * np.where(present, self._enter(visit, c, a, reach * stay), 1)
                r, w_u = self._update(r, w_u, s, present)
            a_stop = self._stop(u, w_u)
            accept[:, u] = reach * stay * a_stop
            final[:, u] = r
            return stay * (1 - a_stop)

        one = _ones(R, t.dtype)
        visit(0, one, one)
        return accept, final


class RecursiveRejectionTree(_WeightedTree):
    """Top-down recursive rejection sampling on a tree (module docstring); node-local."""

    node_local = True

    def _verify(self, tree, x, t, d, ua, uf):
        R = t.shape[0]
        slot_law = self.children.slot_law

        def node_step(u, here, cur):
            r = t[:, u].copy()
            kids = tree.children[u]
            had = np.zeros(R, dtype=bool)
            for j, c in enumerate(kids):
                xc = x[:, c]
                present = here & (xc >= 0)
                s = slot_law(d[:, u], x, kids, j)
                a = np.minimum(1.0, _ratio(r, s, xc))
                acc = present & (ua[:, c] < a)
                cur[acc] = c
                here &= ~acc
                rej = present & ~acc
                had |= rej
                r = _update_rrs(r, s, rej)
            return here, r, had

        return _descend(tree, t, uf, node_step)

    @staticmethod
    def _enter(visit, c, a, reach):
        visit(c, 1, reach * a)  # an accepted child is never left
        return 1 - a

    @staticmethod
    def _update(r, w, s, present):
        return _update_rrs(r, s, present), w

    @staticmethod
    def _stop(u, w):
        return 1


class TraversalTree(_WeightedTree):
    """Leaf-to-root traversal verification (module docstring); not node-local."""

    def _verify(self, tree, x, t, d, ua, uf):
        R = t.shape[0]
        slot_law = self.children.slot_law
        node = np.zeros(R, dtype=np.int64)
        law = t[:, 0].copy()
        residual = np.zeros(R, dtype=bool)
        active = np.ones(R, dtype=bool)

        def visit(u, w_u):
            r = t[:, u].copy()
            kids = tree.children[u]
            had = np.zeros(R, dtype=bool)
            for j, c in enumerate(kids):
                present = active & (x[:, c] >= 0)
                s = slot_law(d[:, u], x, kids, j)
                w_c = np.minimum(1.0, w_u * _ratio(r, s, x[:, c]))
                visit(c, w_c)
                rej = present & active  # c's subtree was rejected
                had |= rej
                r, w_u = _update_traversal(r, w_u, s, rej)
            acc = active & ((ua[:, u] < w_u) if u else True)
            node[acc] = u
            law[acc] = r[acc]
            residual[acc] = had[acc]
            active[acc] = False

        visit(0, np.ones(R))
        return node, _categorical(law, uf), residual

    @staticmethod
    def _enter(visit, c, a, reach):
        return visit(c, a, reach)  # the child carries the weight a; its subtree may be left

    @staticmethod
    def _update(r, w, s, present):
        return _update_traversal(r, w, s, present)

    @staticmethod
    def _stop(u, w):
        return w if u else 1


TREE_RRS = register_verifier(RecursiveRejectionTree("tree_rrs", IID()))
TREE_RRS_WO = register_verifier(RecursiveRejectionTree("tree_rrs_wo", WithoutReplacement()))
TREE_TOPK = register_verifier(RecursiveRejectionTree("tree_topk", TopK()))
TREE_GREEDY = register_verifier(RecursiveRejectionTree("tree_greedy", Greedy()))
TRAVERSAL = register_verifier(TraversalTree("traversal", WithoutReplacement()))
TRAVERSAL_IID = register_verifier(TraversalTree("traversal_iid", IID()))

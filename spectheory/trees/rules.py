r"""Tree verifiers as pure rules: one drafted tree in, accepted node and next token out.

Notation: p = target, q = draft (code says ``target``/``draft``). A *realisation* of a draft
tree (:class:`~spectheory.trees.DraftTree`) for ``R`` runs is

- ``tokens [R, N]``: the token of node ``i`` (column 0, the root, is ignored; ``-1`` marks a
  node that is not drafted: beyond the horizon, or past the draft's support without
  replacement);
- ``target_laws [R, N, V]`` and ``draft_laws [R, N, V]``: the target and draft laws of the
  token *after* node ``i`` (``draft_laws[:, u]`` is the law ``u``'s children are drawn from).

The *child policy* says how the children of a node were drawn, and fixes the law of the
``j``-th child given the earlier ones (the *slot law* ``s_j``):

- ``"iid"``  (SpecInfer): ``s_j = q``;
- ``"wo"``   without replacement (Sequoia, recursive speculative decoding):
  ``s_j = q`` with the earlier siblings' tokens removed, renormalised;
- ``"topk"`` the draft's top-k, deterministic (Medusa/EAGLE engines): ``s_j`` is the
  point mass on the ``j``-th child's token.

Two verification rules, both lossless for every policy (proofs in docs/trees.md):

- ``"rrs"`` (recursive rejection sampling, top-down): at node ``u`` with residual target
  ``r = p(. | u)``, for each child ``c`` (token ``x``, slot law ``s``): accept ``c`` with
  probability ``min(1, r(x)/s(x))`` and descend; otherwise ``r <- norm(max(r - s, 0))``.
  All children rejected: emit ``y ~ r``. With ``topk`` this is "accept ``x`` with
  probability ``r(x)``, else zero it and renormalise".
- ``"traversal"`` (Weng et al. 2025, leaf-to-root): every node carries a sequence-level
  weight ``w`` (root 1; child ``w_c = min(1, w_u r_u(x_c)/s(x_c))`` when its subtree is
  entered). The first remaining leaf in depth-first order is tested: accepted with
  probability ``w``, it ends the round (emit its path, then ``y ~ r`` at that node).
  Rejected, it is deleted and its parent updates ``Z = sum (w_u r_u - s)_+``,
  ``r_u <- (w_u r_u - s)_+ / Z``, ``w_u <- Z / (Z + 1 - w_u)`` (1 if that is 0/0). On a
  single path this is block verification (Sun et al. 2024); at depth 1 it is ``rrs``.

Uniform convention: node ``c`` is accepted iff ``u_accept[:, c] < `` its acceptance
probability; the final token is the inverse CDF of its law at ``u_final``.
"""

from __future__ import annotations

import numpy as np

from ..verifiers.multidraft import _categorical

__all__ = ["POLICIES", "RULES", "slot_law", "outcome_law", "tree_rule", "check_realisation"]

POLICIES = ("iid", "wo", "topk")
RULES = ("rrs", "traversal")


def check_realisation(tree, tokens, target_laws, draft_laws):
    """Validate shapes and token range of a realisation; returns arrays (dtype kept)."""
    x = np.asarray(tokens, dtype=np.int64)
    t = np.asarray(target_laws)
    d = np.asarray(draft_laws)
    if x.ndim != 2 or x.shape[1] != tree.n_nodes:
        raise ValueError(f"tokens: expected shape (R, {tree.n_nodes}), got {x.shape}")
    R, N = x.shape
    if t.shape[:2] != (R, N) or t.ndim != 3 or d.shape != t.shape:
        raise ValueError(
            f"target_laws, draft_laws: expected shape ({R}, {N}, V), got {t.shape} and {d.shape}"
        )
    if x.size and (x[:, 1:].min(initial=0) < -1 or x.max() >= t.shape[2]):
        raise ValueError(f"tokens: entries must lie in [0, {t.shape[2]}) or be -1 (not drafted)")
    return x, t, d


def _safe_div(num, den):
    """``num / den`` where ``den > 0``, else 0 (works on float and Fraction object arrays)."""
    pos = den > 0
    return np.where(pos, num / np.where(pos, den, 1), 0)


def slot_law(draft_u, tokens, kids, j, policy):
    """Law ``s_j [R, V]`` of the ``j``-th child of a node given its earlier siblings."""
    R = draft_u.shape[0]
    rows = np.arange(R)
    if policy == "iid":
        return draft_u
    if policy == "topk":
        out = np.zeros_like(draft_u)
        x = tokens[:, kids[j]]
        out[rows, np.where(x >= 0, x, 0)] = 1
        return np.where((x >= 0)[:, None], out, draft_u)
    if policy == "wo":
        rem = draft_u.copy()
        for c in kids[:j]:
            x = tokens[:, c]
            ok = x >= 0
            rem[rows[ok], x[ok]] = 0
        return _safe_div(rem, rem.sum(-1)[:, None])
    raise ValueError(f"policy: expected one of {POLICIES}, got {policy!r}")


def _ratio(r, s, x):
    """``r(x) / s(x)`` per run (0 where ``s(x) = 0`` or the node is absent)."""
    rows = np.arange(r.shape[0])
    xs = np.where(x >= 0, x, 0)
    return np.where(x >= 0, _safe_div(r[rows, xs], s[rows, xs]), 0)


def _min1(a):
    return np.where(a < 1, a, 1)


def _update_rrs(r, s, present):
    ex = np.maximum(r - s, 0)
    Z = ex.sum(-1)
    new = np.where((Z > 0)[:, None], _safe_div(ex, Z[:, None]), r)
    return np.where(present[:, None], new, r)


def _update_traversal(r, w, s, present):
    ex = np.maximum(w[:, None] * r - s, 0)
    Z = ex.sum(-1)
    r_new = np.where((Z > 0)[:, None], _safe_div(ex, Z[:, None]), r)
    den = Z + 1 - w
    w_new = np.where(den > 0, _safe_div(Z, den), 1)
    return np.where(present[:, None], r_new, r), np.where(present, w_new, w)


def outcome_law(tree, tokens, target_laws, draft_laws, policy, rule):
    r"""Exact outcome law of a tree verifier given the drafted tokens (analytic, no uniforms).

    Works with float arrays and with ``fractions.Fraction`` object arrays.

    Returns
    -------
    accept : array, shape (R, N)
        ``accept[:, v]`` = P(the accepted path ends at node ``v``); rows sum to 1.
    final : array, shape (R, N, V)
        Law of the token emitted after the path when it ends at ``v`` (the residual if
        ``v`` had drafted children, else ``target_laws[:, v]``).
    """
    x, t, d = check_realisation(tree, tokens, target_laws, draft_laws)
    if rule not in RULES:
        raise ValueError(f"rule: expected one of {RULES}, got {rule!r}")
    R, N, V = t.shape
    accept = np.zeros((R, N), dtype=t.dtype)
    final = np.zeros_like(t)

    def visit(u, w_u, reach):
        r = t[:, u]
        kids = tree.children[u]
        stay = np.ones(R, dtype=t.dtype) if t.dtype != object else np.full(R, 1, dtype=object)
        for j, c in enumerate(kids):
            present = x[:, c] >= 0
            s = slot_law(d[:, u], x, kids, j, policy)
            a = _min1(w_u * _ratio(r, s, x[:, c]))
            if rule == "rrs":
                visit(c, 1, reach * stay * a)
                stay = stay * np.where(present, 1 - a, 1)
                r = _update_rrs(r, s, present)
            else:
                rej_c = visit(c, a, reach * stay)
                stay = stay * np.where(present, rej_c, 1)
                r, w_u = _update_traversal(r, w_u, s, present)
        a_leaf = 1 if (rule == "rrs" or u == 0) else w_u
        accept[:, u] = reach * stay * a_leaf
        final[:, u] = r
        return stay * (1 - a_leaf)

    one = np.ones(R, dtype=t.dtype) if t.dtype != object else np.full(R, 1, dtype=object)
    visit(0, one, one)
    return accept, final


def tree_rule(tree, tokens, target_laws, draft_laws, u_accept, u_final, policy="iid", rule="rrs"):
    r"""Pure tree verifier on hand-given uniforms, vectorised over runs.

    Parameters
    ----------
    tree : DraftTree
    tokens, target_laws, draft_laws : arrays ``[R, N]``, ``[R, N, V]``, ``[R, N, V]``
        A realisation (module docstring).
    u_accept : array, shape (R, N)
        ``u_accept[:, c]`` decides node ``c``'s test (column 0 unused).
    u_final : array, shape (R,)
    policy : {"iid", "wo", "topk"}
    rule : {"rrs", "traversal"}

    Returns
    -------
    node : ndarray of int, shape (R,)
        Last node of the accepted path (0 = nothing accepted).
    token : ndarray of int, shape (R,)
        Token drawn from the law at ``node`` (residual, or the target law at a leaf: the
        bonus; the caller drops it when the protocol emits no bonus).
    residual : ndarray of bool, shape (R,)
        Whether ``token`` is a correction (``node`` had drafted children, all rejected).

    Examples
    --------
    One node drafted below the root (p = (1/3, 2/3), q = (2/3, 1/3)), token 0: accepted iff
    ``u < p(0)/q(0) = 1/2``.

    >>> import numpy as np
    >>> from spectheory.trees import DraftTree
    >>> from spectheory.trees.rules import tree_rule
    >>> tree = DraftTree.from_branching([1])
    >>> t = np.tile([1/3, 2/3], (2, 2, 1)); d = np.tile([2/3, 1/3], (2, 2, 1))
    >>> node, tok, res = tree_rule(tree, [[-1, 0], [-1, 0]], t, d, [[0, 0.4], [0, 0.6]], [0.5, 0.5])
    >>> node.tolist(), res.tolist(), tok.tolist()
    ([1, 0], [False, True], [1, 1])
    """
    x, t, d = check_realisation(tree, tokens, target_laws, draft_laws)
    t = t.astype(np.float64)
    d = d.astype(np.float64)
    R, N, V = t.shape
    ua = np.asarray(u_accept, dtype=np.float64)
    uf = np.asarray(u_final, dtype=np.float64)
    if ua.shape != (R, N) or uf.shape != (R,):
        raise ValueError(
            f"u_accept, u_final: expected shapes {(R, N)} and {(R,)}, got {ua.shape}, {uf.shape}"
        )
    if policy not in POLICIES:
        raise ValueError(f"policy: expected one of {POLICIES}, got {policy!r}")
    if rule not in RULES:
        raise ValueError(f"rule: expected one of {RULES}, got {rule!r}")
    node = np.zeros(R, dtype=np.int64)
    law = t[:, 0].copy()
    residual = np.zeros(R, dtype=bool)
    if rule == "rrs":
        cur = np.zeros(R, dtype=np.int64)
        done = np.zeros(R, dtype=bool)
        for u in range(N):  # pre-order: a child follows its parent
            here = ~done & (cur == u)
            if not here.any():
                continue
            r = t[:, u].copy()
            kids = tree.children[u]
            had = np.zeros(R, dtype=bool)
            for j, c in enumerate(kids):
                xc = x[:, c]
                present = here & (xc >= 0)
                s = slot_law(d[:, u], x, kids, j, policy)
                a = np.minimum(1.0, _ratio(r, s, xc))
                acc = present & (ua[:, c] < a)
                cur[acc] = c
                here &= ~acc
                rej = present & ~acc
                had |= rej
                r = _update_rrs(r, s, rej)
            node[here] = u
            law[here] = r[here]
            residual[here] = had[here]
            done |= here
    else:
        active = np.ones(R, dtype=bool)

        def visit(u, w_u):
            r = t[:, u].copy()
            kids = tree.children[u]
            had = np.zeros(R, dtype=bool)
            for j, c in enumerate(kids):
                present = active & (x[:, c] >= 0)
                s = slot_law(d[:, u], x, kids, j, policy)
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
    token = _categorical(law, uf)
    return node, token, residual

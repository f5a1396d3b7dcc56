r"""Exact tree rounds by enumerating every drafted tree (any rule; small ``V`` and trees).

Notation: p = target, q = draft. For a round start (position ``n0``, state ``s``) every
assignment of tokens to the tree's nodes is listed with its draft probability (the product
of the child draws, :meth:`~spectheory.children.ChildPolicy.next_child_law`:
``q(x)`` i.i.d.; successive-sampling probabilities without replacement; 1 for the
deterministic top-k), and the verifier's exact outcome law given the tokens
(:meth:`spectheory.verifiers.tree_base.TreeVerifier.outcome_law`) is weighted by it. This engine is
independent of the per-node engine of :mod:`spectheory.kinds.tree.exact` (which it checks), it
is the exact engine for traversal verification, and with ``fractions.Fraction`` entries it
gives the exact law of the generated sequence (:func:`tree_sequence_law`).
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ...children import get_child_policy
from ...verifiers.base import get_verifier
from .accumulate import _Accumulator

if TYPE_CHECKING:
    from ..._protocols import ChainLike, TreeRule
    from ...children import ChildPolicy
    from .draft_tree import DraftTree

__all__ = ["enumerate_realisations", "enumerated_forward", "tree_sequence_law", "MAX_REALISATIONS"]

#: Largest number of enumerated tree realisations (rows) per round start.
MAX_REALISATIONS = 400_000


def _kernel(arr, n):
    return arr if arr.ndim == 2 else arr[min(n, arr.shape[0] - 1)]


def enumerate_realisations(
    target: np.ndarray,
    draft: np.ndarray,
    next_state: np.ndarray,
    tree: DraftTree,
    children: ChildPolicy | str,
    n0: int,
    starts: ArrayLike,
    k: int | None = None,
) -> dict:
    r"""All token assignments of ``tree`` (truncated at depth ``k``) from the start states.

    Parameters
    ----------
    target, draft : array, shape (S, V) or (T, S, V)
        Kernels (float or ``Fraction`` object arrays).
    next_state : int array, shape (S, V)
    tree : DraftTree
    children : ChildPolicy or {"iid", "wo", "topk"}
        How the children were drawn (its :meth:`~spectheory.children.ChildPolicy.next_child_law`).
    n0 : int
        Position of the round start (selects kernels of inhomogeneous chains).
    starts : int array
        Start states, one realisation group each.
    k : int, optional
        Depth limit (nodes deeper are not drafted: token -1).

    Returns
    -------
    dict with ``start [R]``, ``prob [R]``, ``tokens [R, N]``, ``states [R, N]``,
    ``target_laws [R, N, V]``, ``draft_laws [R, N, V]``.
    """
    children = get_child_policy(children)
    k = tree.max_depth if k is None else k
    N = tree.n_nodes
    starts = np.asarray(starts, dtype=np.int64)
    R = starts.size
    obj = target.dtype == object
    one = Fraction(1) if obj else 1.0
    V = target.shape[-1]
    tokens = np.full((R, N), -1, dtype=np.int64)
    states = np.zeros((R, N), dtype=np.int64)
    states[:, 0] = starts
    prob = np.array([one] * R, dtype=object) if obj else np.ones(R)
    start = starts.copy()
    for c in range(1, N):
        u = int(tree.parents[c])
        if tree.depth[c] > k:
            continue
        du = _kernel(draft, n0 + int(tree.depth[u]))[states[:, u]]  # [R, V]
        alive = tokens[:, u] >= 0 if u else np.ones(R, dtype=bool)
        sibs = [s for s in tree.children[u] if s < c]
        w = children.next_child_law(du, tokens, sibs)
        has = alive & np.asarray(w.sum(-1) > 0, dtype=bool)
        # rows without this node keep one copy (token -1); rows with it branch over V
        keep = np.flatnonzero(~has)
        r_idx, x_idx = np.nonzero(np.asarray(w[has] > 0, dtype=bool))
        r_idx = np.flatnonzero(has)[r_idx]
        sel = np.concatenate([keep, r_idx])
        if sel.size > MAX_REALISATIONS:
            raise ValueError(
                f"tree: more than {MAX_REALISATIONS} tree realisations to enumerate "
                f"(V={V}, {tree.size} nodes); use Monte Carlo"
            )
        new_tok = np.concatenate([np.full(keep.size, -1), x_idx])
        factor = np.concatenate([np.array([one] * keep.size, dtype=prob.dtype), w[r_idx, x_idx]])
        tokens, states, prob, start = tokens[sel], states[sel], prob[sel] * factor, start[sel]
        tokens[:, c] = new_tok
        present = new_tok >= 0
        states[present, c] = next_state[states[present, u], new_tok[present]]
        R = sel.size
    pos = np.asarray(tree.depth)
    t_laws = np.stack([_kernel(target, n0 + int(pos[i]))[states[:, i]] for i in range(N)], 1)
    d_laws = np.stack([_kernel(draft, n0 + int(pos[i]))[states[:, i]] for i in range(N)], 1)
    return dict(start=start, prob=prob, tokens=tokens, states=states, target_laws=t_laws, draft_laws=d_laws)


def enumerated_forward(
    chain: ChainLike,
    T: int,
    tree: DraftTree,
    verifier: TreeRule,
    bonus: bool,
    init: np.ndarray,
    stop: int,
    start: int = 0,
) -> Any:
    """Forward recursion over round starts with enumerated rounds (see module docstring).

    Same accumulator as the per-node engine (:mod:`spectheory.kinds.tree.exact`).
    """
    chain.require_deterministic("enumerated tree rounds")
    acc = _Accumulator(T, tree.max_depth, init, start)
    S = chain.n_states
    target = np.asarray(chain.target)
    draft = np.asarray(chain.draft)
    ns = chain.next_state
    cache: dict = {}
    for n0 in range(start, stop):
        m0 = acc.starts[n0]
        if not np.any(m0):
            continue
        k = min(tree.max_depth, T - n0)
        key = (0 if chain.is_homogeneous else n0, k)
        if key not in cache:
            if not chain.is_homogeneous:
                cache.clear()
            real = enumerate_realisations(target, draft, ns, tree, verifier.children, n0, np.arange(S), k)
            a, fin = verifier.outcome_law(tree, real["tokens"], real["target_laws"], real["draft_laws"])
            cache[key] = (real, a * real["prob"][:, None], fin)
        real, a, fin = cache[key]
        acc.drafted += m0.sum(-1) * tree.nodes_within(k)
        w = m0[..., real["start"]]  # [..., R]
        has_kids = np.zeros(real["tokens"].shape, dtype=bool)
        for c in range(1, tree.n_nodes):
            has_kids[:, tree.parents[c]] |= real["tokens"][:, c] >= 0
        for v in range(tree.n_nodes):
            d = int(tree.depth[v])
            if d > k:
                continue
            mv = w * a[:, v]  # [..., R]
            tot = mv.sum(-1)
            acc.length[d] += tot
            acc.accepted += d * tot
            sv = real["states"][:, v]
            if n0 + d == T:
                continue
            res = has_kids[:, v]
            acc.reject(n0 + d, (mv * res).sum(-1))
            if res.any() or bonus:
                emit = np.where((res | bonus)[:, None], fin[:, v], 0.0)  # [R, V]
                flat = mv[..., :, None] * emit  # [..., R, V]
                dest = ns[sv]  # [R, V]
                add = np.zeros(m0.shape)
                np.add.at(add.T, dest.ravel(), np.moveaxis(flat.reshape(flat.shape[:-2] + (-1,)), -1, 0))
                acc.starts[n0 + d + 1] += add
            if not bonus:
                leaf = ~res
                add = np.zeros(m0.shape)
                np.add.at(add.T, sv[leaf], np.moveaxis(mv[..., leaf], -1, 0))
                acc.starts[n0 + d] += add
    return acc


def tree_sequence_law(
    chain: ChainLike,
    horizon: int,
    tree: DraftTree,
    verifier: str | TreeRule = "tree_rrs",
    bonus: bool = True,
    exact: bool = False,
) -> dict:
    r"""Exact law of the ``horizon`` generated tokens, ``{tuple: probability}``.

    Rounds are enumerated prefix by prefix (:func:`enumerate_realisations` and the rule's
    outcome law); with ``exact=True`` the chain's float entries are converted to
    ``fractions.Fraction`` (exactly; use dyadic probabilities so rows sum to 1 exactly) and
    the law is a dict of Fractions. Compare with the target's sequence law
    (``chain.sequence_law(horizon, method="target")``).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree, tree_sequence_law
    >>> chain = st.DecodingChain.iid([0.25, 0.75], [0.5, 0.5])
    >>> law = tree_sequence_law(chain, 2, DraftTree.from_branching([2]), "traversal", exact=True)
    >>> str(law[(0, 0)]), str(law[(1, 1)])
    ('1/16', '9/16')
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("tree_sequence_law")
    v = get_verifier(verifier).for_tree()
    conv = np.vectorize(Fraction, otypes=[object]) if exact else (lambda a: np.asarray(a, dtype=np.float64))
    target, draft = conv(np.asarray(chain.target)), conv(np.asarray(chain.draft))
    init = [Fraction(x) for x in chain.initial] if exact else list(chain.initial)
    ns = chain.next_state
    rounds: dict = {}

    def round_law(n0, s):
        key = (n0 if not chain.is_homogeneous else 0, min(tree.max_depth, T - n0), s)
        if key not in rounds:
            k = key[1]
            real = enumerate_realisations(target, draft, ns, tree, v.children, n0, [s], k)
            a, fin = v.outcome_law(tree, real["tokens"], real["target_laws"], real["draft_laws"])
            out: dict = defaultdict(lambda: Fraction(0) if exact else 0.0)
            toks = real["tokens"]
            for r in range(toks.shape[0]):
                kids = {int(tree.parents[c]) for c in range(1, tree.n_nodes) if toks[r, c] >= 0}
                for node in range(tree.n_nodes):
                    pa = real["prob"][r] * a[r, node]
                    if pa == 0 or tree.depth[node] > k:
                        continue
                    path = tuple(int(toks[r, i]) for i in tree.path_to(node))
                    end = int(real["states"][r, node])
                    if len(path) == T - n0 or (node not in kids and not bonus):
                        out[(path, end)] += pa
                        continue
                    for y in range(target.shape[-1]):
                        if fin[r, node, y] != 0:
                            out[(path + (y,), int(ns[end, y]))] += pa * fin[r, node, y]
            rounds[key] = dict(out)
        return rounds[key]

    law: dict = defaultdict(lambda: Fraction(0) if exact else 0.0)
    frontier = {((), s): init[s] for s in range(chain.n_states) if init[s] != 0}
    while frontier:
        nxt: dict = defaultdict(lambda: Fraction(0) if exact else 0.0)
        for (prefix, s), p in frontier.items():
            if len(prefix) >= T:
                law[prefix[:T]] += p
                continue
            for (emit, end), q in round_law(len(prefix), s).items():
                nxt[(prefix + emit, end)] += p * q
        frontier = nxt
    return dict(law)

r"""Sequoia's tree optimiser and its positional acceptance assumption, audited exactly.

Notation: p = target, q = draft. Sequoia (Chen et al. 2024, arXiv 2402.12374) assumes that
the chance that the ``k``-th child of an accepted node is the accepted one is a constant
``a_k`` (independent of the context). Under that assumption a node is accepted with the
product of ``a_slot`` along its root path, and a tree's value (expected tokens per target
call: accepted drafts + the one emitted token) is

.. math:: F(\text{tree}) = \sum_{v \in \text{tree}} \prod_{u \in \text{path}(v)} a_{\text{slot}(u)}

(the root counts 1). The dynamic program over (nodes ``m`` and levels ``l``, both counting
the root as Sequoia does, and root children ``b``)::

    T[1][l][0] = 1
    T[m][l][1] = 1 + a_1 max_b T[m-1][l-1][b]
    T[m][l][b] = max_{1 <= y < m} T[y][l][b-1] + a_b max_b' T[m-y][l-1][b']

finds the best tree for a node budget (``l = 1`` holds the root alone). On a chain the acceptance of a slot depends on the
state, so the assumption is an approximation: :func:`positional_vector` measures ``a``
the way Sequoia does (the frequency with which child ``k`` of a ``K``-wide node is the
accepted one, here exactly, averaged over a state law), :func:`exact_tree_value` gives the
true value of any tree (per-node engine) and :func:`optimal_tree_search` the truly best tree
of ``n`` nodes by enumerating every ordered tree (Catalan(n) of them).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_rng, check_int
from .._typing import RNGLike
from ..chain.classes import require_one_closed_class
from ..kinds.tree.draft_tree import DraftTree
from ..kinds.tree.exact import tree_round_law
from ..verifiers.base import get_verifier

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from ..verifiers.tree_base import TreeVerifier

__all__ = [
    "sequoia_positional_dp",
    "positional_value",
    "positional_vector",
    "stationary_law",
    "exact_tree_value",
    "ordered_trees",
    "optimal_tree_search",
]


def positional_value(tree: DraftTree, accept_probs: ArrayLike) -> float:
    """Sequoia's predicted value ``F(tree)`` under the positional vector ``accept_probs``."""
    a = np.asarray(accept_probs, dtype=np.float64)
    if np.any(tree.slot[1:] >= a.size):
        raise ValueError(f"accept_probs: the tree has a node in slot {int(tree.slot.max()) + 1} > {a.size}")
    f = np.ones(tree.n_nodes)
    for i in range(1, tree.n_nodes):
        f[i] = f[tree.parents[i]] * a[tree.slot[i]]
    return float(f.sum())


def _full_tree_size(K: int, levels: int) -> int:
    """Nodes (root included) of the full ``K``-ary tree with ``levels`` levels."""
    return levels if K == 1 else (K**levels - 1) // (K - 1)


def _add_child(rest: np.ndarray | float, a_b: float, sub: np.ndarray | float) -> np.ndarray:
    """``rest + a_b * sub`` with ``-inf`` (no such subtree) kept ``-inf`` when ``a_b = 0``.

    A zero entry of ``a`` (measured vectors have them, Sequoia's own among them) would
    otherwise give ``0 * -inf = nan``, which ``argmax`` picks and the table propagates.
    """
    sub = np.asarray(sub, dtype=np.float64)
    return np.where(sub > -np.inf, rest + a_b * np.where(sub > -np.inf, sub, 0.0), -np.inf)


def sequoia_positional_dp(
    accept_probs: ArrayLike,
    *,
    tree_size: int | None = None,
    tree_depth: int | None = None,
) -> tuple[float, DraftTree]:
    r"""Sequoia's dynamic program: the best tree of ``tree_size`` nodes under ``a``.

    Counts as Sequoia does (Chen et al. 2024, and their ``tree_search.py``): ``tree_size``
    and ``tree_depth`` include the root, so ``tree_size = n`` gives ``n - 1`` drafted
    tokens and ``tree_depth = d`` drafts at most ``d - 1`` tokens along any path. The
    returned :class:`DraftTree` counts drafts (``tree.size == tree_size - 1``,
    ``tree.max_depth <= tree_depth - 1``), as every other tree in this package.

    Parameters
    ----------
    accept_probs : array_like, shape (K,)
        ``a_k``: P(the ``k``-th child is the accepted one); at most ``K`` children per node.
    tree_size : int >= 2
        Nodes of the tree, the root included (Sequoia's budget ``n``).
    tree_depth : int >= 2, optional
        Levels of the tree, the root's included (Sequoia's ``d``; default ``tree_size``:
        no depth limit).

    Returns
    -------
    value : float
        ``F`` of the best tree (expected tokens per call under the assumption).
    tree : DraftTree

    Notes
    -----
    A budget larger than the full ``K``-ary tree of ``tree_depth`` levels
    (:math:`\sum_{i<d} K^i` nodes) cannot be spent: the full tree is returned, which is
    the best feasible one (every node adds :math:`\prod a \ge 0` to ``F``), with fewer
    than ``tree_size`` nodes. Zero entries of ``a`` are allowed (measured vectors have
    them): such a child adds 0 to ``F``. With Sequoia's published demo
    vector and config this reproduces the tree their ``tree_search.py`` recorded
    (``tests/trees/test_sequoia_paper.py``).

    Examples
    --------
    >>> from spectheory.trees import sequoia_positional_dp
    >>> value, tree = sequoia_positional_dp([0.6, 0.2, 0.1], tree_size=5)
    >>> round(value, 4), tree.parents.tolist()
    (2.376, [-1, 0, 1, 2, 0])
    >>> sequoia_positional_dp([0.3, 0.2, 0.1, 0.1, 0.1], tree_size=15, tree_depth=2)[1].parents.tolist()
    [-1, 0, 0, 0, 0, 0]
    """
    a = np.asarray(accept_probs, dtype=np.float64)
    if a.ndim != 1 or a.size < 1 or np.any(~np.isfinite(a)) or np.any(a < 0) or a.sum() > 1 + 1e-9:
        raise ValueError("accept_probs: expected a 1-d vector of probabilities >= 0 with sum <= 1")
    if tree_size is None:
        raise ValueError("tree_size: required (nodes of the tree, the root included, as in Sequoia)")
    m_max = check_int(tree_size, "tree_size", 2)
    levels = m_max if tree_depth is None else check_int(tree_depth, "tree_depth", 2)
    levels = min(levels, m_max)
    K = a.size
    m_max = min(m_max, _full_tree_size(K, levels))  # the best feasible tree: the full one
    L = levels - 1  # below, l counts the levels under a node (0: a leaf)
    NEG = -np.inf
    T = np.full((m_max + 1, L + 1, K + 1), NEG)
    choice = np.zeros((m_max + 1, L + 1, K + 1), dtype=np.int64)
    T[1, :, 0] = 1.0
    best = np.full((m_max + 1, L + 1), NEG)  # max_b T[m][l][b]
    best_b = np.zeros((m_max + 1, L + 1), dtype=np.int64)
    best[1, :] = 1.0
    cols = np.arange(L)
    for m in range(2, m_max + 1):  # every level count l = 1..L at once (m only reads m' < m)
        ys = np.arange(1, m)
        T[m, 1:, 1] = _add_child(1.0, a[0], best[m - 1, :-1])
        for b in range(2, K + 1):
            vals = _add_child(T[ys, 1:, b - 1], a[b - 1], best[m - ys, :-1])  # (m - 1, L)
            j = np.argmax(vals, axis=0)  # the first best split, as Sequoia's strict ">"
            T[m, 1:, b] = vals[j, cols]
            choice[m, 1:, b] = ys[j]
        best_b[m, 1:] = np.argmax(T[m, 1:], axis=1)
        best[m, 1:] = T[m, 1:].max(axis=1)
    parents = [-1]

    def build(m, l, b, root):
        # root has b children: the first b-1 come from T[y][l][b-1], the last has m-y nodes
        if b == 0:
            return
        if b == 1:
            y = 1
        else:
            y = choice[m, l, b]
            build(y, l, b - 1, root)
        parents.append(root)
        child = len(parents) - 1
        build(m - y, l - 1, best_b[m - y, l - 1], child)

    build(m_max, L, best_b[m_max, L], 0)
    tree = DraftTree._from_nested(parents)
    return float(best[m_max, L]), tree


def stationary_law(chain: ChainLike, tol: float = 1e-13, max_iter: int = 100_000) -> np.ndarray:
    """Stationary law of the target's state process (homogeneous chains), by power iteration.

    Unique when the states reach one closed class (transient states allowed); otherwise a
    ``ValueError`` names the classes (pass ``states=``, a law over the states, to the
    functions that default to this law).
    """
    if not chain.is_homogeneous:
        raise ValueError("chain: the stationary law needs a homogeneous chain")
    op = chain.target_operator(0)
    require_one_closed_class(
        op, "chain: the stationary law", "pass states= (a law over the states) to choose one"
    )
    v = np.full(chain.n_states, 1.0 / chain.n_states)
    for _ in range(max_iter):
        w = np.asarray(v @ op).ravel()
        w = 0.5 * (w + v)  # lazy step: converges for periodic chains too
        if np.abs(w - v).max() < tol:
            return w / w.sum()
        v = w
    return v / v.sum()


def _state_law(chain, states):
    if states is None:
        return stationary_law(chain)
    s = np.asarray(states, dtype=np.float64)
    if s.shape != (chain.n_states,) or np.any(s < 0) or abs(s.sum() - 1) > 1e-9:
        raise ValueError(f"states: expected a law over the {chain.n_states} states")
    return s


def positional_vector(
    chain: ChainLike,
    K: int,
    verifier: str | TreeVerifier = "tree_rrs_wo",
    states: ArrayLike | None = None,
    n_samples: int | None = None,
    rng: RNGLike = None,
) -> np.ndarray:
    r"""Sequoia's positional acceptance vector measured on a chain.

    ``a_k`` = P(child ``k`` of a node with ``K`` children is the accepted one), averaged over
    the state law ``states`` (default: the target's stationary law). Exact by default; with
    ``n_samples`` it is the empirical frequency over that many sampled nodes (as Sequoia
    estimates it from data).
    """
    K = check_int(K, "K", 1)
    v = get_verifier(verifier).for_tree()
    pi = _state_law(chain, states)
    t, d = chain.kernels(0)
    if n_samples is None:
        A, _ = v.node_laws(t, d, K)
        return pi @ A.sum(-1).T
    rng = as_rng(rng)
    n = check_int(n_samples, "n_samples", 1)
    s = rng.choice(chain.n_states, size=n, p=pi)
    star = DraftTree.from_branching([K])
    kids = v.sample_children(d[s], K, rng)
    tok = np.concatenate([np.full((n, 1), -1), kids], 1)
    node, _, _ = v.verify(
        star,
        tok,
        np.broadcast_to(t[s][:, None], (n, K + 1, t.shape[1])),
        np.broadcast_to(d[s][:, None], (n, K + 1, t.shape[1])),
        rng.random((n, K + 1)),
        rng.random(n),
    )
    return np.bincount(node, minlength=K + 1)[1:] / n


def exact_tree_value(
    chain: ChainLike,
    tree: DraftTree,
    verifier: str | TreeVerifier = "tree_rrs_wo",
    states: ArrayLike | None = None,
) -> float:
    """True expected tokens per target call of one round (accepted + 1) from the state law."""
    pi = _state_law(chain, states)
    law = tree_round_law(chain, tree, verifier)
    return float(1.0 + pi @ (law @ np.arange(law.shape[1])))


def ordered_trees(n_nodes: int, max_depth: int | None = None) -> Iterator[DraftTree]:
    """Every ordered (plane) tree with ``n_nodes`` drafted nodes, as DraftTrees (Catalan(n))."""
    n = check_int(n_nodes, "n_nodes", 1)
    L = n if max_depth is None else check_int(max_depth, "max_depth", 1)

    def seqs(prefix):
        if len(prefix) == n:
            yield prefix
            return
        for d in range(1, min(prefix[-1] + 1, L) + 1):
            yield from seqs(prefix + [d])

    for depths in seqs([1]):
        parents, last = [-1], {0: 0}
        for i, d in enumerate(depths, start=1):
            parents.append(last[d - 1])
            last[d] = i
        yield DraftTree(parents)


def optimal_tree_search(
    chain: ChainLike,
    n_nodes: int,
    verifier: str | TreeVerifier = "tree_rrs_wo",
    states: ArrayLike | None = None,
    max_depth: int | None = None,
) -> tuple[float, DraftTree | None]:
    """The truly best tree of ``n_nodes`` drafts on ``chain`` by exhaustive search.

    Returns ``(value, tree)`` maximising :func:`exact_tree_value`.
    """
    pi = _state_law(chain, states)
    best, arg = -np.inf, None
    for tree in ordered_trees(n_nodes, max_depth):
        val = exact_tree_value(chain, tree, verifier, pi)
        if val > best + 1e-15:
            best, arg = val, tree
    return best, arg

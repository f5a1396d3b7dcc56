r"""How many drafts of a draft tree can a lossless verifier accept? The tree optimum, exactly.

Notation: p = target, q = draft. A round drafts a tree ``X`` (the tokens of its nodes, drawn
with a child policy, :mod:`spectheory.children`) from a start state and emits a
path of it plus one token; a lossless verifier's output, completed by target sampling,
is a sequence ``Y`` with the target's law, and the drafts it accepted form a root path of
``X`` that is a prefix of ``Y``. So every lossless verifier is a coupling of ``X`` and ``Y``
(``Y ~ P``, the target law of the first ``D`` tokens, ``D`` the tree's depth) whose accepted
count is at most :math:`c(X, Y)`, the depth of the longest prefix of ``Y`` that is a root
path of ``X``, and

.. math:: E[\text{accepted}] \le B = \max_{\pi \in \Pi(\text{law of } X,\, P)} E_\pi[c(X, Y)],

the *coupling bound*, a transport linear program over the enumerated tree realisations
(:func:`spectheory.kinds.tree.enumerate.enumerate_realisations`) and the ``V^D`` target prefixes
(:func:`tree_coupling_bound`). :func:`tree_optimum` returns the sharpest value known for
the tree's shape:

* **depth 1** (``k`` children of the root: multi-draft): ``B`` *is* the optimum, attained by
  the transport plan's verifier (:func:`spectheory.verifiers.optimal_coupling.optimal_coupling_lp`);
  for i.i.d. and without-replacement children it is computed with a sort
  (:func:`spectheory.analysis.optimal_transport.optimal_multidraft_acceptance`, the same number);
* **a single path** drafted from ``q``: block verification's exact mean (Sun et al. 2024), the
  optimum of lossless single-path rules, which can lie strictly below ``B`` (the coupling may
  use target probabilities off the drafted path, which no verifier sees);
* **any other tree**: the lossless tree optimum, the linear program of
  :mod:`spectheory.trees.tree_lp` (the coupling constrained so that the tokens after the
  emitted ones are drawn afresh from the target), attained, sharper than ``B``, reported as
  its certified dual bound; where that LP is too large, ``B`` (an upper bound, not attained
  in general).

Examples
--------
>>> import spectheory as st
>>> from spectheory.trees import DraftTree
>>> from spectheory.trees.optimum import tree_coupling_bound, tree_optimum
>>> chain = st.DecodingChain.iid([0.5, 0.5], [0.9, 0.1])
>>> round(tree_coupling_bound(chain, DraftTree.from_branching([2]), "iid"), 6)   # 1 - (0.81 - 0.5)
0.69
>>> path = DraftTree.from_branching([1, 1])
>>> opt = tree_optimum(chain, path, "iid")
>>> opt.kind, bool(opt.value <= tree_coupling_bound(chain, path) + 1e-9)
('block verification', True)
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from .._guards import check_int

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from ..children import ChildPolicy
    from ..kinds.tree.draft_tree import DraftTree

__all__ = ["TreeOptimum", "tree_coupling_bound", "tree_optimum", "MAX_COUPLING_CELLS"]

#: Largest transport problem (tree realisations times target prefixes) solved exactly.
MAX_COUPLING_CELLS = 400_000


@dataclass(frozen=True)
class TreeOptimum:
    """The most drafts a lossless verifier accepts on average on one tree (see the module docstring).

    Attributes
    ----------
    value : float
        Expected accepted drafts (not counting the emitted token).
    kind : str
        ``"multi-draft optimum"``, ``"block verification"``, ``"lossless tree optimum"`` or
        ``"coupling bound"``.
    attained : bool
        Whether a lossless verifier reaches ``value`` (True for the first three kinds).
    """

    value: float
    kind: str
    attained: bool


def _prefix_law(chain: ChainLike, D: int, start: int) -> tuple[np.ndarray, np.ndarray]:
    V = chain.vocab_size
    Y = np.array(list(itertools.product(range(V), repeat=D)), dtype=np.int64).reshape(-1, D)
    py = np.ones(Y.shape[0])
    s = np.full(Y.shape[0], start, dtype=np.int64)
    for j in range(D):
        py *= chain.target[s, Y[:, j]]
        s = chain.next_state[s, Y[:, j]]
    return Y, py


def tree_coupling_bound(
    chain: ChainLike,
    tree: DraftTree,
    children: ChildPolicy | str = "iid",
    start: int = 0,
    with_plan: bool = False,
) -> Any:
    r"""The coupling bound :math:`B` on the accepted drafts of one round from ``start``.

    Solves the transport LP (HiGHS) between the law of the drafted tree and the target law
    of the first ``D`` tokens with reward :math:`c(X, Y)` (module docstring). A
    :class:`ValueError` names ``tree`` when realisations times prefixes exceed
    :data:`MAX_COUPLING_CELLS`.

    Parameters
    ----------
    chain : DecodingChain
        A deterministic first-order chain (``chain.next_state``).
    tree : DraftTree
    children : ChildPolicy or {"iid", "wo", "topk"}
        How the children of a node are drawn.
    start : int
        Start state of the round.
    with_plan : bool
        Also return the optimal transport plan.

    Returns
    -------
    float, or (float, dict) with ``with_plan``
        ``B``; the dict holds ``tokens`` (``[R, N]``, the enumerated realisations),
        ``prefixes`` (``[M, D]``, the target prefixes of positive probability) and ``plan``
        (``[R, M]``, the transport plan).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree
    >>> from spectheory.trees.optimum import tree_coupling_bound
    >>> chain = st.DecodingChain.iid([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    >>> round(tree_coupling_bound(chain, DraftTree.from_branching([2]), "topk"), 6)  # p({2, 1})
    0.5
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    from .tree_lp import round_realisations

    start, tok, prob = round_realisations(chain, tree, children, start, "tree_coupling_bound")
    D, V, N = tree.max_depth, chain.vocab_size, tree.n_nodes
    Y, py = _prefix_law(chain, D, start)
    keep = py > 0
    Y, py = Y[keep], py[keep]
    R, M = tok.shape[0], Y.shape[0]
    if R * M > MAX_COUPLING_CELLS:
        raise ValueError(
            f"tree: {R} realisations x {M} target prefixes exceeds MAX_COUPLING_CELLS = {MAX_COUPLING_CELLS}"
        )
    reward = np.zeros((R, M))
    for u in range(1, N):
        path = tree.path_to(u)
        d = len(path)
        code = np.zeros(R, dtype=np.int64)
        present = np.ones(R, dtype=bool)
        for b in path:
            code = code * V + np.maximum(tok[:, b], 0)
            present &= tok[:, b] >= 0
        pre = Y[:, :d] @ (V ** np.arange(d - 1, -1, -1))
        reward = np.maximum(reward, d * (present[:, None] & (code[:, None] == pre[None, :])))
    # Sub-couplings (row sums <= the tree law, column sums <= P) are always feasible, and one
    # completes to a coupling (the unmatched masses, of equal totals, coupled independently)
    # without losing reward (>= 0): the same optimum, with no rounding-level infeasibility.
    a_ub = sp.vstack([sp.kron(sp.eye(R), np.ones((1, M))), sp.kron(np.ones((1, R)), sp.eye(M))]).tocsr()
    b_ub = np.concatenate([prob / prob.sum(), py / py.sum()])
    sol = linprog(-reward.ravel(), A_ub=a_ub, b_ub=b_ub, bounds=(0, None), method="highs")
    if sol.status != 0:
        raise RuntimeError(f"tree_coupling_bound: HiGHS failed: {sol.message}")
    if with_plan:  # the kit's gallery follows the plan (a lossy verifier attaining B)
        plan = np.maximum(sol.x.reshape(R, M), 0.0)
        rows, cols = np.maximum(b_ub[:R] - plan.sum(1), 0.0), np.maximum(b_ub[R:] - plan.sum(0), 0.0)
        if rows.sum() > 0:  # completed to a coupling, as the comment above says
            plan = plan + np.outer(rows, cols) / rows.sum()
        return float(np.clip(-sol.fun, 0.0, D)), {"tokens": tok, "prefixes": Y, "plan": plan}
    return float(np.clip(-sol.fun, 0.0, D))


def tree_optimum(
    chain: ChainLike, tree: DraftTree, children: ChildPolicy | str = "iid", start: int = 0
) -> TreeOptimum:
    """The sharpest known bound on a lossless verifier's accepted drafts on ``tree`` (module docstring).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree
    >>> from spectheory.trees.optimum import tree_optimum
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.9, 0.1])
    >>> opt = tree_optimum(chain, DraftTree.from_branching([2]), "wo")
    >>> opt.kind, round(opt.value, 6), opt.attained     # two distinct drafts cover both tokens
    ('multi-draft optimum', 1.0, True)
    """
    from ..children import IID, TopK, WithoutReplacement, get_child_policy

    policy = get_child_policy(children)
    start = check_int(start, "start", 0)
    if tree.max_depth == 1:
        k = tree.size
        if not isinstance(policy, (IID, WithoutReplacement)):
            value = tree_coupling_bound(chain, tree, policy, start)
        else:
            from ..analysis.optimal_transport import optimal_multidraft_acceptance

            wo = isinstance(policy, WithoutReplacement)
            t, d = chain.target[start], chain.draft[start]
            k = min(k, int(np.count_nonzero(d))) if wo else k
            value = optimal_multidraft_acceptance(t, d, k, replacement=not wo)
        return TreeOptimum(float(value), "multi-draft optimum", True)
    if tree.size == tree.max_depth and not isinstance(policy, TopK):
        from ..verifiers.block_exact import round_accepted_means

        block, _ = round_accepted_means(chain, 0, tree.size)
        return TreeOptimum(float(block[start]), "block verification", True)
    from .tree_lp import lossless_tree_optimum

    try:
        lp = lossless_tree_optimum(chain, tree, policy, start)
    except ValueError:  # too large for the LP: the coupling bound (which may refuse too)
        return TreeOptimum(tree_coupling_bound(chain, tree, policy, start), "coupling bound", False)
    return TreeOptimum(float(lp.bound), "lossless tree optimum", True)

r"""The most drafts a lossless verifier accepts on a general draft tree: an LP with a certified bound.

Notation: p = target, q = draft. A round drafts a tree ``X`` (a realisation: the tokens of
its nodes, drawn by a child policy, :mod:`spectheory.children`, with probability
:math:`q(X)`) from a start state, and emits ``e = (x_{path(u)}, y)``: the tokens on the root
path of an accepted node ``u`` (``d(e) = |e| - 1`` accepted drafts, ``0 <= d(e) <= D``, ``D``
the tree's depth), then one token ``y``. Whatever a verifier reads -- the laws at the tree's
nodes, the target's laws *off* the tree, private randomness -- its round is summarised by the
joint law :math:`\pi(x, e)` of the drafted tree and what it emits, and it is lossless exactly
when the emitted tokens, continued by target sampling, have the target's law: for every
``z`` of ``D + 1`` tokens,

.. math:: \sum_{x,\ e \text{ prefix of } z} \pi(x, e)\, p(z_{|e|+1:} \mid e) = p(z)

(the definition of a valid verifier, Sun et al. 2024, as in :mod:`spectheory.analysis.round_lp` for one path).
Dividing by :math:`p(z)`, the emitted prefix is the target process stopped at a randomised
stopping time ``tau`` in ``1..D+1`` (:math:`g(e) = \sum_x \pi(x, e)` is the mass stopping
at ``e``), which is the flow form solved here, with one running mass :math:`\rho_v \ge 0`
per prefix ``v`` of length ``1..D`` (:math:`\rho_\varnothing = 1`):

.. math::
   \max_{\pi, \rho \ge 0} \sum_{x, e} \pi(x, e)\, d(e) \quad\text{s.t.}\quad
   \sum_e \pi(x, e) = q(x), \qquad
   \sum_x \pi(x, vt) + \rho_{vt} = p(t \mid v)\, \rho_v

for every realisation ``x`` and prefix ``vt`` of length ``1..D+1`` (:math:`\rho = 0` at length
``D + 1``), with :math:`\pi(x, e) = 0` unless ``e`` minus its last token is the token path
of a node of ``x``. Its optimum :math:`O` is the **lossless tree optimum**: the most drafts
accepted on average by any lossless verifier of this tree on this instance, whatever it
reads; it is attained (the plan :math:`\pi(\cdot \mid x)` is such a verifier:
:func:`spectheory.testing.tree_plans.plan_verifier`). On depth-1
trees it is the multi-draft optimum
(:func:`~spectheory.analysis.optimal_transport.optimal_multidraft_acceptance`), on single
paths drafted from ``q`` block verification's value (certified per instance by
:mod:`spectheory.analysis.round_lp`); it lies below the coupling bound
(:func:`~spectheory.trees.optimum.tree_coupling_bound`), which ignores that the tokens after
``e`` are drawn afresh.

The program is solved with the realisation rows and the first-token rows (length 1)
relaxed to ``<=``: their slacks have the same total, and pairing them (the unused mass of a
realisation emits a lost first token, accepting nothing) completes any relaxed plan to a
lossless one with the same reward, so the optimum is the same and the zero plan is feasible
(no rounding-level infeasibility on laws with tiny entries).

**Certificate.** The dual is: minimise :math:`\sum_x q(x) y_x + \sum_t p(t)\lambda_t` over
:math:`y \ge 0` and :math:`\lambda` (:math:`\ge 0` at length 1, free deeper) with
:math:`y_x + \lambda_e \ge d(e)` for every allowed ``(x, e)`` and
:math:`\lambda_v \ge \sum_t p(t \mid v) \lambda_{vt}` for every ``v`` of length ``1..D`` (a
supermartingale along the target). :func:`lossless_tree_optimum` takes HiGHS's ``lambda``,
raises each :math:`\lambda_v` to the right-hand side bottom-up (and to 0 at length 1), sets
:math:`y_x = \max(0, \max_e (d(e) - \lambda_e))`, and evaluates the dual objective: a dual-feasible
point by construction, so its value ``bound`` is an upper bound on every lossless verifier
(weak duality), computed in ``Fraction`` arithmetic with ``exact=True`` (the laws' exact
binary values), and equal to the optimum up to HiGHS's tolerance.

Examples
--------
>>> import spectheory as st
>>> from spectheory.trees import DraftTree
>>> from spectheory.trees.tree_lp import lossless_tree_optimum
>>> chain = st.DecodingChain.from_matrices([[0.6, 0.4], [0.3, 0.7]], [[0.2, 0.8], [0.5, 0.5]])
>>> r = lossless_tree_optimum(chain, DraftTree.from_parents([-1, 0, 1, 0]), "iid", exact=True)
>>> round(r.value, 9), abs(float(r.bound) - r.value) < 1e-9, r.n_realisations
(1.344, True, 8)
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from .._guards import check_int

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from ..children import ChildPolicy
    from ..kinds.tree.draft_tree import DraftTree

__all__ = ["TreeLPOptimum", "lossless_tree_optimum", "MAX_TREE_LP_VARIABLES"]

#: Largest number of plan variables (realisations x emissions) the LP is built for.
MAX_TREE_LP_VARIABLES = 300_000
#: HiGHS tolerances (tighter than its 1e-7 defaults: the kit compares means with the value).
_TOLERANCES = {"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10}


@dataclass(frozen=True)
class TreeLPOptimum:
    """The lossless tree optimum of one round (module docstring).

    Attributes
    ----------
    value : float
        The LP's optimum (HiGHS): expected accepted drafts of the best lossless verifier.
    bound : float or Fraction
        The certified upper bound (a dual-feasible point's value; a ``Fraction`` with
        ``exact=True``): no lossless verifier accepts more on average.
    plan : dict
        ``(realisation index, emission tuple) -> probability``: an optimal verifier's plan
        :math:`\\pi(x, e)` (entries above 1e-12).
    tokens : numpy.ndarray, shape (R, N)
        The enumerated realisations' node tokens (-1: not drafted), in the plan's order.
    prob : numpy.ndarray, shape (R,)
        Their probabilities.
    n_realisations : int
    """

    value: float
    bound: Any
    plan: dict
    tokens: np.ndarray
    prob: np.ndarray
    n_realisations: int


def _prefix_codes(V: int, D: int) -> tuple[dict, list]:
    """Index of every prefix of length 1..D+1 (tuple -> row) and the list in that order."""
    import itertools

    order = [v for n in range(1, D + 2) for v in itertools.product(range(V), repeat=n)]
    return {v: i for i, v in enumerate(order)}, order


def lossless_tree_optimum(
    chain: ChainLike,
    tree: DraftTree,
    children: ChildPolicy | str = "iid",
    start: int = 0,
    exact: bool = False,
) -> TreeLPOptimum:
    r"""The lossless tree optimum of one round from ``start`` and its certified bound (module docstring).

    Parameters
    ----------
    chain : DecodingChain
        A deterministic first-order chain (``chain.next_state``); p = ``chain.target``,
        q = ``chain.draft``.
    tree : DraftTree
    children : ChildPolicy or {"iid", "wo", "topk"}
        How the children of a node are drawn.
    start : int
        Start state of the round.
    exact : bool
        Evaluate the certificate in ``Fraction`` arithmetic (slower).

    Returns
    -------
    TreeLPOptimum

    Raises
    ------
    ValueError
        Naming ``tree`` when the plan would exceed :data:`MAX_TREE_LP_VARIABLES`, ``start``
        when it is not a state.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree
    >>> from spectheory.trees.tree_lp import lossless_tree_optimum
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.9, 0.1])
    >>> round(lossless_tree_optimum(chain, DraftTree.from_branching([2])).value, 6)  # 1 - (0.81 - 0.5)
    0.69
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    start, tok, prob = round_realisations(chain, tree, children, start, "lossless_tree_optimum")
    V, D = chain.vocab_size, tree.max_depth
    keep = prob > 0
    tok, prob = tok[keep], prob[keep]
    R = tok.shape[0]
    index, order = _prefix_codes(V, D)
    paths = [tree.path_to(u) for u in range(tree.n_nodes)]
    emissions = []  # (r, emission tuple)
    for r in range(R):
        drafted = {tuple(int(tok[r, b]) for b in path) for path in paths if all(tok[r, b] >= 0 for b in path)}
        emissions += [(r, s + (y,)) for s in sorted(drafted) for y in range(V)]
        if len(emissions) > MAX_TREE_LP_VARIABLES:
            raise ValueError(
                f"tree: the plan exceeds MAX_TREE_LP_VARIABLES = {MAX_TREE_LP_VARIABLES} variables"
            )
    states = _prefix_states(chain, order, start)
    p_step = np.array([chain.target[states[v[:-1]], v[-1]] for v in order])  # p(t | v) of prefix vt
    n_pi = len(emissions)
    running = [i for i, v in enumerate(order) if len(v) <= D]  # rho columns
    rho_col = {i: n_pi + j for j, i in enumerate(running)}
    # Rows: realisations (<= q(x)), prefixes of length 1 (<= p(t)), then the deeper prefixes (=).
    # The two relaxed families are loose by the same total and completing them (the unused
    # realisation mass emitting a lost first token, accepting nothing) loses no reward: the
    # same optimum, and the zero plan is feasible (module docstring).
    first = [i for i, v in enumerate(order) if len(v) == 1]
    row_of = {i: R + k for k, i in enumerate(first)}
    row_of.update({i: k for k, i in enumerate(i for i, v in enumerate(order) if len(v) > 1)})
    n_ub, n_eq = R + len(first), len(order) - len(first)
    ub: tuple[list, list, list] = ([], [], [])
    eq: tuple[list, list, list] = ([], [], [])

    def put(i: int, col: int, val: float) -> None:
        rows, cols, vals = ub if len(order[i]) == 1 else eq
        rows.append(row_of[i])
        cols.append(col)
        vals.append(val)

    for j, (r, e) in enumerate(emissions):
        ub[0].append(r)
        ub[1].append(j)
        ub[2].append(1.0)
        put(index[e], j, 1.0)
    for i, v in enumerate(order):
        if len(v) <= D:
            put(i, rho_col[i], 1.0)
        if len(v) > 1:
            put(i, rho_col[index[v[:-1]]], -p_step[i])
    n_var = n_pi + len(running)
    a_ub = sp.csr_matrix((ub[2], (ub[0], ub[1])), shape=(n_ub, n_var))
    a_eq = sp.csr_matrix((eq[2], (eq[0], eq[1])), shape=(n_eq, n_var))
    b_ub = np.concatenate([prob, p_step[first]])
    cost = np.concatenate([[len(e) - 1.0 for _, e in emissions], np.zeros(len(running))])
    sol = linprog(
        -cost,
        A_ub=a_ub,
        b_ub=b_ub,
        A_eq=a_eq,
        b_eq=np.zeros(n_eq),
        bounds=(0, None),
        method="highs",
        options=_TOLERANCES,
    )
    if sol.status != 0:
        raise RuntimeError(f"lossless_tree_optimum: HiGHS failed: {sol.message}")
    dual_ub, dual_eq = -np.asarray(sol.ineqlin.marginals), -np.asarray(sol.eqlin.marginals)
    lam = np.array([dual_ub[row_of[i]] if len(v) == 1 else dual_eq[row_of[i]] for i, v in enumerate(order)])
    exact_prob = None
    if exact:
        exact_prob = _exact_prob(chain, tree, children, start)[keep]
    bound = _certified_bound(chain, exact_prob, prob, order, index, states, emissions, lam, D)
    x = np.maximum(sol.x, 0.0)
    plan: dict[tuple[int, tuple], float] = {}
    for (r, e), w in zip(emissions, x[:n_pi], strict=True):
        if w > 1e-12:
            plan[(r, e)] = float(w)
    _complete(plan, prob, x, emissions, first, order, index, rho_col, p_step)
    return TreeLPOptimum(float(-sol.fun), bound, plan, tok, prob, R)


def round_realisations(
    chain: ChainLike, tree: DraftTree, children: ChildPolicy | str, start: int, caller: str
) -> tuple[int, np.ndarray, np.ndarray]:
    """``(start, tokens, prob)``: the checked start state and the realisations of ``tree`` drafted
    from it (:func:`~spectheory.kinds.tree.enumerate.enumerate_realisations`; ``tokens [R, N]``,
    float ``prob [R]``), for the round programs here and in :mod:`spectheory.trees.optimum`
    (``caller`` names the program when the chain is stochastic)."""
    from ..kinds.tree.enumerate import enumerate_realisations

    chain.require_deterministic(caller)
    start = check_int(start, "start", 0)
    if start >= chain.n_states:
        raise ValueError(f"start: expected a state below {chain.n_states}, got {start}")
    real = enumerate_realisations(chain.target, chain.draft, chain.next_state, tree, children, 0, [start])
    return start, real["tokens"], np.asarray(real["prob"], dtype=np.float64)


def _prefix_states(chain: ChainLike, order: list, start: int) -> dict:
    """State after every prefix (and the empty one) of ``order``."""
    states: dict[tuple, int] = {(): start}
    for v in order:
        states[v] = int(chain.next_state[states[v[:-1]], v[-1]])
    return states


def _exact_prob(chain: Any, tree: Any, children: Any, start: int) -> np.ndarray:
    """The realisations' probabilities in ``Fraction``s (the laws' exact binary values)."""
    from ..kinds.tree.enumerate import enumerate_realisations

    target = np.vectorize(Fraction, otypes=[object])(chain.target)
    draft = np.vectorize(Fraction, otypes=[object])(chain.draft)
    return enumerate_realisations(target, draft, chain.next_state, tree, children, 0, [start])["prob"]


def _complete(
    plan: dict,
    prob: np.ndarray,
    x: np.ndarray,
    emissions: list,
    first: list,
    order: list,
    index: dict,
    rho_col: dict,
    p_step: np.ndarray,
) -> None:
    """Complete the relaxed plan: each realisation's unused mass emits a lost first token."""
    used = np.zeros(prob.size)
    stopped = np.zeros(len(order))
    for j, (r, e) in enumerate(emissions):
        used[r] += x[j]
        stopped[index[e]] += x[j]
    lost = np.array([max(p_step[i] - stopped[i] - x[rho_col[i]], 0.0) for i in first])
    left = np.maximum(prob - used, 0.0)
    law = lost / lost.sum() if lost.sum() > 0 else p_step[first] / p_step[first].sum()
    for r in np.flatnonzero(left > 1e-15):
        for k, i in enumerate(first):
            if law[k] > 0:
                plan[(int(r), order[i])] = plan.get((int(r), order[i]), 0.0) + float(left[r] * law[k])


def _certified_bound(
    chain: Any,
    exact_prob: Any,
    prob: np.ndarray,
    order: list,
    index: dict,
    states: dict,
    emissions: list,
    lam: np.ndarray,
    D: int,
) -> Any:
    """The dual objective at a point made feasible from ``lam`` (module docstring: Certificate)."""
    if exact_prob is not None:
        target: Any = np.vectorize(Fraction, otypes=[object])(chain.target)
        weights = list(exact_prob)
        lv: list[Any] = [Fraction(float(v)).limit_denominator(10**9) for v in lam]
        zero: Any = Fraction(0)
    else:
        target, weights = chain.target, [float(w) for w in prob]
        lv, zero = [float(v) for v in lam], 0.0
    V = chain.vocab_size
    for i in range(len(order) - 1, -1, -1):  # children come after parents in ``order``
        v = order[i]
        if len(v) <= D:
            s = states[v]
            lv[i] = max(lv[i], sum((target[s, t] * lv[index[v + (t,)]] for t in range(V)), zero))
        if len(v) == 1:  # the relaxed first-token rows have duals >= 0
            lv[i] = max(lv[i], zero)
    y: list[Any] = [zero] * len(weights)  # the relaxed realisation rows: y >= 0
    for r, e in emissions:
        y[r] = max(y[r], (len(e) - 1) - lv[index[e]])
    s0 = states[()]
    return sum((w * yr for w, yr in zip(weights, y, strict=True)), zero) + sum(
        (target[s0, t] * lv[index[(t,)]] for t in range(V)), zero
    )

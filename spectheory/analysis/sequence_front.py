r"""The exact sequence-level quality / speed front of lossy verification: a linear program.

Notation: p = target, q = draft; :math:`P_T` and :math:`Q_T` are the laws of ``T`` tokens
sampled from the target and from the draft. Bonus off (every position is a check of one
draft token, Yin et al. 2024's counting).

A rejection-based rule, lossy or not, emits after each prefix :math:`x_{<n}` some law
:math:`O_n(\cdot \mid x_{<n})`; together they form the law :math:`O` of the emitted
sequence. Producing :math:`O_n` from a draft proposal :math:`x \sim q_n(\cdot\mid x_{<n})`
rejects with probability at least :math:`\mathrm{TV}(O_n, q_n)` (the accepted mass
:math:`q_n b` is at most :math:`\min(q_n, O_n)`), and acceptance
:math:`b = \min(O_n, q_n)/q_n` with rejection law :math:`\mathrm{norm}(O_n - \min(O_n, q_n))`
attains it. So the least expected number of rejections among rules whose emitted law is
within :math:`\varepsilon` of the target's is

.. math:: R^*(\varepsilon) = \min_O \sum_{n=1}^{T} E_{O}\big[\mathrm{TV}(O_n(\cdot\mid X_{<n}),
          q_n(\cdot\mid X_{<n}))\big] \quad\text{s.t.}\quad \mathrm{TV}(O, P_T) \le \varepsilon,

and :math:`O(x_{<n})\,\mathrm{TV}(O_n, q_n) = \sum_x (O(x_{<n}, x) - O(x_{<n})\, q_n(x \mid x_{<n}))_+`
is a positive part of a *linear* function of the prefix masses, so :math:`R^*` is a linear
program over the masses of all prefixes (derivation and proofs: docs/sequence_front.md).
At :math:`\varepsilon = 0` it is Theorem 1's :math:`\sum_n E[\mathrm{TV}(p_n, q_n)]`; it is 0
from :math:`\varepsilon = \mathrm{TV}(Q_T, P_T)` on; it is convex and non-increasing.

The LP's variables are the masses :math:`m` of every prefix (depth ``1..T``), one
:math:`u \ge m(x_{<n}, x) - m(x_{<n}) q_n(x\mid x_{<n})` per prefix and one
:math:`w \ge m(x_{1:T}) - P_T(x_{1:T})` per sequence; the constraints are flow conservation
(each prefix's mass is the sum of its children's), the two families of inequalities and the
budget :math:`\sum w \le \varepsilon`; the objective is :math:`\sum u`. Every row has at most
three entries (scipy.sparse); HiGHS solves it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int, check_nonneg
from ..verifiers.rejection import RejectionRule
from .sequence_front_lp import FrontSolver
from .sequence_front_tree import MAX_FRONT_SEQUENCES, PrefixForest, prefix_forest, unrolled_chain

if TYPE_CHECKING:
    from .._protocols import ChainLike, UnrolledChainLike

__all__ = ["SequenceFront", "optimal_sequence_front", "optimal_rule_chain", "optimal_sequence_rule"]

#: HiGHS feasibility / optimality tolerances used by :func:`optimal_sequence_front`.
LP_TOL = 1e-10


@dataclass
class SequenceFront:
    r"""The exact front :math:`R^*(\varepsilon)` at the requested budgets.

    Attributes
    ----------
    eps : ndarray                 the budgets, shape of the ``eps`` argument
    rejections : ndarray          :math:`R^*(\varepsilon)`, same shape (the LP's optimum)
    sequence_tv : ndarray         :math:`\mathrm{TV}(O, P_T)` of the optimal law (``<= eps``)
    slope : ndarray               :math:`dR^*/d\varepsilon` (the budget's dual value, ``<= 0``)
    joint_law : ndarray           optimal joint law of (start, sequence), ``eps.shape + (K,) + (V,)*T``
    theorem1 : float              :math:`R^*(0)` predicted by Theorem 1 (the start-weighted sum of E[TV])
    max_tv : float                :math:`\mathrm{TV}(Q_T, P_T)`, where the front reaches 0
    forest : PrefixForest         the unrolled chain (starts, node laws, target and draft masses)
    """

    eps: np.ndarray
    rejections: np.ndarray
    sequence_tv: np.ndarray
    slope: np.ndarray
    joint_law: np.ndarray
    theorem1: float
    max_tv: float
    forest: PrefixForest

    @property
    def output_law(self) -> np.ndarray:
        """Optimal law of the emitted sequence, ``eps.shape + (V,)*T`` (summed over start states)."""
        return self.joint_law.sum(axis=self.eps.ndim)

    @property
    def conditional_law(self) -> np.ndarray:
        """Optimal law given the start state, ``eps.shape + (K,) + (V,)*T``."""
        w = self.forest.weights.reshape((-1,) + (1,) * self.forest.horizon)
        return self.joint_law / w

    def law_at(self, index: int | tuple = ()) -> np.ndarray:
        """Flat joint leaf law ``[K V^T]`` of the front point ``eps[index]``."""
        return self.joint_law[index].ravel()


def optimal_sequence_front(
    chain: ChainLike,
    horizon: int,
    eps: ArrayLike,
    *,
    start_state: int | None = None,
    max_sequences: int = MAX_FRONT_SEQUENCES,
    tol: float = LP_TOL,
    hot_start: bool = True,
    closed_form_end: bool = True,
    progress: bool | None = None,
) -> SequenceFront:
    r"""Least expected rejections (bonus off) at sequence-level quality ``eps``: the exact front.

    Solves the linear program of the module docstring with HiGHS once per budget, on one
    sparse constraint matrix; budgets are visited in increasing order and, with scipy's
    bundled HiGHS bindings, each solve is hot-started from the previous optimal basis
    (:class:`~spectheory.analysis.sequence_front_lp.FrontSolver`).

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
        ``T``; the LP has :math:`\approx 3.7\, K V^T` variables for ``K`` start states.
    eps : float or array_like
        Budgets :math:`\varepsilon \ge 0` on the sequence TV (any shape).
    start_state : int, optional
        A fixed prompt state. Default: the chain's initial law, the prompt known to both
        models; the sequence TV is then the start-weighted TV of the conditional laws
        (:mod:`.sequence_front_tree`).
    max_sequences : int
        Size limit on :math:`K V^T` (ValueError beyond it).
    tol : float
        HiGHS primal and dual feasibility tolerance.
    hot_start : bool
        Use the hot-started solver when available (False: a fresh ``linprog`` per budget).
    closed_form_end : bool
        For budgets :math:`\varepsilon \ge \mathrm{TV}(Q_T, P_T)` return the proven optimum
        :math:`O = Q_T`, :math:`R^* = 0` without solving (False: solve the LP there too).
    progress : bool or None
        tqdm bar over budgets (None: when more than 4 budgets and more than 4,000 sequences).

    Returns
    -------
    SequenceFront

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.analysis.sequence_front import optimal_sequence_front
    >>> chain = st.DecodingChain.random(3, rng=2)
    >>> front = optimal_sequence_front(chain, 3, [0.0, 0.1], start_state=0)
    >>> front.rejections.shape, front.output_law.shape
    ((2,), (2, 3, 3, 3))
    >>> bool(abs(front.rejections[0] - front.theorem1) < 1e-9)
    True
    >>> end = optimal_sequence_front(chain, 3, front.max_tv, start_state=0, closed_form_end=False)
    >>> float(end.rejections) < 1e-9
    True
    """
    e = check_nonneg(eps, "eps")
    forest = prefix_forest(chain, horizon, start_state, max_sequences)
    V, T = forest.vocab_size, forest.horizon
    solver = FrontSolver(forest, tol, hot_start)
    flat = e.ravel()
    rej = np.empty(flat.size)
    slope = np.empty(flat.size)
    laws = np.empty((flat.size, solver.n_leaf))
    order = np.argsort(flat, kind="stable")
    it: Iterable[Any] = order
    if progress or (progress is None and flat.size > 4 and solver.n_leaf > 4000):
        from .._progress import progress_range

        it = (order[i] for i in progress_range(order.size, "front LP", show=True))
    max_tv = float(forest.sequence_tv_of(forest.draft_mass[T]))
    for j in it:
        if closed_form_end and flat[j] >= max_tv:
            rej[j], leaf, slope[j] = 0.0, forest.draft_mass[T], 0.0
        else:
            rej[j], leaf, slope[j] = solver.solve(flat[j])
        laws[j] = np.maximum(leaf, 0.0)
    rej = np.maximum(rej, 0.0)
    tv = forest.sequence_tv_of(laws)
    theorem1 = float(
        sum(
            forest.target_mass[n] @ (0.5 * np.abs(forest.target[n] - forest.draft[n]).sum(-1))
            for n in range(T)
        )
    )
    shape = e.shape
    return SequenceFront(
        e,
        rej.reshape(shape),
        tv.reshape(shape),
        np.minimum(slope, 0.0).reshape(shape),
        laws.reshape(shape + (forest.starts.size,) + (V,) * T),
        theorem1,
        max_tv,
        forest,
    )


def _conditional_tables(forest: PrefixForest, leaves: np.ndarray) -> Any:
    """Per node of depth ``0..T-1``: the emitted law :math:`O_n(\\cdot \\mid x_{<n})` (rows of
    ``(K V^n, V)``), the target's where the node has no mass."""
    m = forest.node_masses(leaves)
    out = []
    for n in range(forest.horizon):
        child = m[n + 1].reshape(-1, forest.vocab_size)
        tot = child.sum(-1, keepdims=True)
        ok = tot > 1e-300
        out.append(np.where(ok, child / np.where(ok, tot, 1.0), forest.target[n]))
    return out


def _front_point(front: SequenceFront, index: Any) -> Any:
    if not isinstance(front, SequenceFront):
        raise ValueError(f"front: expected a SequenceFront, got {type(front).__name__}")
    if front.eps.ndim == 0:
        return front.law_at(())
    idx = (check_int(index, "index", 0),) if front.eps.ndim == 1 else tuple(index)
    return front.law_at(idx)


def optimal_rule_chain(front: SequenceFront, index: int | tuple = 0) -> tuple[UnrolledChainLike, np.ndarray]:
    r"""The front point ``eps[index]`` as a chain whose *target* is the optimal emitted law.

    The optimal rule at a prefix accepts the draft token ``x`` with probability
    :math:`\min(O_n(x), q_n(x))/q_n(x) = \min(1, O_n(x)/q_n(x))` and on rejection emits from
    :math:`\mathrm{norm}(O_n - \min(O_n, q_n)) = \mathrm{norm}((O_n - q_n)_+)`: standard
    speculative sampling with :math:`O` in the target's place. So this chain (the unrolled
    prefix forest, draft unchanged, target replaced by the conditionals of :math:`O`) run
    through the ordinary simulator with ``bonus=False`` *is* the optimal verifier; its
    Theorem 1 sum is the front's value. Returns ``(chain, law)`` with ``law`` the joint
    leaf law ``[K V^T]``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.analysis.sequence_front import optimal_sequence_front, optimal_rule_chain
    >>> front = optimal_sequence_front(st.DecodingChain.random(2, rng=0), 3, 0.1, start_state=0)
    >>> chain_o, law = optimal_rule_chain(front)
    >>> bool(abs(chain_o.tv_profile(3).sum() - front.rejections) < 1e-9)
    True
    """
    leaves = _front_point(front, index)
    forest = front.forest
    base = unrolled_chain(forest)
    target = np.array(base.target)
    off = base.level_offsets
    for n, cond in enumerate(_conditional_tables(forest, leaves)):
        target[off[n] : off[n + 1]] = cond
    chain = type(base)(
        target, base.draft, base.initial, base.next_state, atol=1e-6, max_horizon=forest.horizon
    )
    chain.level_offsets = off
    return chain, leaves


def optimal_sequence_rule(
    front: SequenceFront, index: int | tuple = 0
) -> tuple[UnrolledChainLike, RejectionRule]:
    r"""The optimal lossy verifier of the front point ``eps[index]`` as a per-state rule.

    Returns ``(chain, rule)``: ``chain`` is the unrolled prefix forest of the original chain
    (:func:`~spectheory.analysis.sequence_front_tree.unrolled_chain`, target and draft
    unchanged, state = start and whole prefix) and ``rule`` a
    :class:`~spectheory.verifiers.rejection.RejectionRule` whose tables, read on that chain's
    ``[S, V]`` kernels, are the acceptance :math:`\min(O_n, q_n)/q_n` and the rejection law
    :math:`\mathrm{norm}(O_n - \min(O_n, q_n))` of every prefix. Its exact expected rejections
    (``rule_expected_rejections(chain, T, rule)``) are the front's value and its emitted law
    is the front's ``O``.
    """
    leaves = _front_point(front, index)
    forest = front.forest
    chain = unrolled_chain(forest)
    S, V = chain.n_states, chain.vocab_size
    b = np.ones((S, V))
    P = np.array(chain.target)
    off = chain.level_offsets
    for n, cond in enumerate(_conditional_tables(forest, leaves)):
        d = forest.draft[n]
        a = np.minimum(cond, d)
        with np.errstate(divide="ignore", invalid="ignore"):
            b[off[n] : off[n + 1]] = np.where(d > 0, a / np.where(d > 0, d, 1.0), 1.0)
        gap = cond - a
        mass = gap.sum(-1, keepdims=True)
        ok = mass > 1e-15
        P[off[n] : off[n + 1]] = np.where(ok, gap / np.where(ok, mass, 1.0), cond)
    b = np.clip(b, 0.0, 1.0)

    def accept(target, draft):
        return b

    def rejection(target, draft, acc):
        return P

    return chain, RejectionRule(accept, rejection, "optimal sequence rule")

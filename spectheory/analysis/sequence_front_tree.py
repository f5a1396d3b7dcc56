r"""The prefix tree of a chain over a horizon, and rules' exact sequence laws on it.

Shared machinery of :mod:`spectheory.analysis.sequence_front` (the linear program of the
exact sequence-level quality / speed front). Notation: p = target, q = draft.

A chain with start law :math:`\pi` (the prompt, known to both models) and horizon ``T``
unrolls into a forest: one tree per start state ``s`` with :math:`\pi(s) > 0`, whose nodes
at depth ``n`` are the :math:`V^n` prefixes :math:`x_{1:n}`. Node arrays are laid out level
by level; at depth ``n`` node ``i`` is ``k * V**n + sum_j x_j V**(n - j)`` (start index
``k``, then the prefix in lexicographic order), so the parent of node ``i`` at depth
``n + 1`` is ``i // V`` at depth ``n`` and its last token ``i % V``.

The *sequence TV* used throughout is that of the joint law of (prompt, sequence):

.. math:: \mathrm{TV}_{seq}(G) = \sum_s \pi(s)\, \mathrm{TV}\big(G(\cdot \mid s), P_T(\cdot \mid s)\big),

which is the plain TV of the emitted sequences for a fixed start state.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int

if TYPE_CHECKING:
    from .._protocols import ChainLike, UnrolledChainLike
    from ..verifiers.rejection import RejectionRule

__all__ = [
    "PrefixForest",
    "prefix_forest",
    "unrolled_chain",
    "RulePoint",
    "rule_point",
    "MAX_FRONT_SEQUENCES",
]

#: Default largest number of leaves (start states times :math:`V^T`) the front handles.
MAX_FRONT_SEQUENCES = 100_000


@dataclass
class PrefixForest:
    r"""Level arrays of a chain's prefix forest (see the module docstring for the layout).

    Attributes
    ----------
    starts : ndarray of int, shape (K,)       start states with positive weight
    weights : ndarray, shape (K,)             their weights :math:`\pi(s)` (sum 1)
    states : list of T int arrays             chain state of every node at depth ``n`` (``K V^n``)
    target, draft : list of T arrays          next-token laws at depth-``n`` nodes, ``(K V^n, V)``
    target_mass, draft_mass : list of T+1 arrays
        Joint mass :math:`\pi(s) P(x_{1:n} \mid s)` of every depth-``n`` node under target
        (resp. draft) sampling; depth 0 is ``weights``.
    """

    vocab_size: int
    horizon: int
    starts: np.ndarray
    weights: np.ndarray
    states: list
    target: list
    draft: list
    target_mass: list
    draft_mass: list
    chain_type: Any = None  # the DecodingChain class the forest was built from

    @property
    def n_leaves(self) -> int:
        return int(self.starts.size * self.vocab_size**self.horizon)

    def level_sizes(self) -> list[int]:
        """Number of nodes at depth ``0..T``."""
        K, V = self.starts.size, self.vocab_size
        return [K * V**n for n in range(self.horizon + 1)]

    def node_masses(self, leaves: ArrayLike) -> list:
        """Masses of every node, depth ``0..T``, from leaf masses ``[..., K V^T]`` (sums over subtrees)."""
        leaves = np.asarray(leaves, dtype=np.float64)
        out = [leaves]
        for _ in range(self.horizon):
            m = out[0]
            out.insert(0, m.reshape(m.shape[:-1] + (-1, self.vocab_size)).sum(-1))
        return out

    def rejections_of(self, leaves: ArrayLike) -> np.ndarray | float:
        r"""Least expected rejections that emit the joint leaf law ``leaves`` (the LP's objective).

        :math:`\sum_n \sum_{x_{<n}} \sum_x (m(x_{<n}, x) - m(x_{<n}) q(x \mid x_{<n}))_+`.
        """
        m = self.node_masses(leaves)
        V = self.vocab_size
        total = 0.0
        for n in range(self.horizon):
            parent, child = m[n], m[n + 1]
            expect = parent[..., :, None] * self.draft[n]
            gap = child.reshape(child.shape[:-1] + (-1, V)) - expect
            total = total + np.maximum(gap, 0.0).sum((-2, -1))
        return total

    def sequence_tv_of(self, leaves: ArrayLike) -> np.ndarray:
        """Joint sequence TV of the leaf law ``leaves`` against the target's."""
        return 0.5 * np.abs(np.asarray(leaves) - self.target_mass[-1]).sum(-1)


def _start_law(chain, start_state):
    S = chain.n_states
    if start_state is None:
        w = np.asarray(chain.initial, dtype=np.float64)
    else:
        s = check_int(start_state, "start_state", 0)
        if s >= S:
            raise ValueError(f"start_state: must lie in [0, {S}), got {s}")
        w = np.zeros(S)
        w[s] = 1.0
    starts = np.flatnonzero(w > 0)
    return starts, w[starts] / w[starts].sum()


def prefix_forest(
    chain: ChainLike,
    horizon: int,
    start_state: int | None = None,
    max_sequences: int = MAX_FRONT_SEQUENCES,
) -> PrefixForest:
    r"""Unroll ``chain`` over ``horizon`` tokens from its start law (or a fixed ``start_state``).

    Raises
    ------
    ValueError
        If the number of leaves, (start states) :math:`\times V^T`, exceeds ``max_sequences``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.analysis.sequence_front_tree import prefix_forest
    >>> f = prefix_forest(st.DecodingChain.random(2, rng=0), 3, start_state=1)
    >>> f.level_sizes(), round(float(f.target_mass[-1].sum()), 12)
    ([1, 2, 4, 8], 1.0)
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("prefix_forest (sequence fronts)")
    V = chain.vocab_size
    starts, weights = _start_law(chain, start_state)
    limit = check_int(max_sequences, "max_sequences", 1)
    n_leaves = starts.size * V**T
    if n_leaves > limit:
        raise ValueError(
            f"horizon: {starts.size} start state(s) x V**T = {V}**{T} gives {n_leaves} "
            f"sequences, above max_sequences = {limit} (the LP has a few variables "
            f"per sequence; fix start_state, shorten the horizon or raise max_sequences)"
        )
    states = [starts.copy()]
    tgt, drf = [], []
    tmass, dmass = [weights.copy()], [weights.copy()]
    for n in range(T):
        t, d = chain.kernels(n)
        st_n = states[n]
        tgt.append(np.asarray(t)[st_n])
        drf.append(np.asarray(d)[st_n])
        tmass.append((tmass[n][:, None] * tgt[n]).ravel())
        dmass.append((dmass[n][:, None] * drf[n]).ravel())
        if n + 1 < T:
            states.append(chain.next_state[st_n].ravel())
    return PrefixForest(V, T, starts, weights, states, tgt, drf, tmass, dmass, type(chain))


def unrolled_chain(forest: PrefixForest) -> UnrolledChainLike:
    r"""The forest as a :class:`~spectheory.DecodingChain` whose state is (start, whole prefix).

    States are the forest's nodes of depth ``0..T`` in level order (depth-``T`` nodes are
    absorbing, as in :meth:`DecodingChain.prefix_tree`); the initial law puts the start
    weights on the roots. Any rule written per state of this chain may depend on the whole
    prefix; its law over ``T`` tokens is that of the original chain's prompt and sequence.
    """
    V, T = forest.vocab_size, forest.horizon
    sizes = forest.level_sizes()
    offsets = np.concatenate([[0], np.cumsum(sizes)])
    S = int(offsets[-1])
    target = np.full((S, V), 1.0 / V)
    draft = np.full((S, V), 1.0 / V)
    ns = np.empty((S, V), dtype=np.int64)
    for n in range(T + 1):
        sl = slice(offsets[n], offsets[n + 1])
        if n < T:
            target[sl] = forest.target[n]
            draft[sl] = forest.draft[n]
            ns[sl] = offsets[n + 1] + np.arange(sizes[n + 1]).reshape(-1, V)
        else:
            ns[sl] = np.arange(offsets[n], offsets[n + 1])[:, None]
    init = np.zeros(S)
    init[: sizes[0]] = forest.weights
    chain = forest.chain_type(target, draft, init, ns, max_horizon=T)
    chain.level_offsets = offsets
    return chain


@dataclass
class RulePoint:
    """Exact position of a rule in the (sequence TV, expected rejections) plane (bonus off).

    ``law`` is the joint law of (start, sequence) over the forest's leaves, ``[K V^T]``.
    """

    name: str
    rejections: float
    sequence_tv: float
    law: np.ndarray


def rule_point(
    forest: PrefixForest, rule: RejectionRule, chain: UnrolledChainLike | None = None
) -> RulePoint:
    r"""Exact expected rejections and sequence TV of a per-state rule, by enumeration.

    With the bonus off every position is a check of one draft token; at a node with
    acceptance ``b`` and rejection law ``P`` (``rule.tables(target, draft)``, a
    :class:`~spectheory.verifiers.rejection.RejectionRule`) the step emits
    :math:`o = q b + \rho P` and rejects with probability :math:`\rho = 1 - \sum q b`. The
    emitted law is the product of the ``o`` along the prefix; the expected rejections sum
    :math:`\rho` over nodes weighted by their emitted mass.

    ``rule.tables`` is called on the node laws of each depth (rows ``(K V^n, V)``), so a
    rule that is a function of the next-token laws only (the biased heuristics) acts as it
    does on the chain. A rule written for the states of :func:`unrolled_chain` (the optimal
    rule) is evaluated on that chain instead: pass it as ``chain``.
    """
    T = forest.horizon
    mass = forest.weights.copy()
    rej = 0.0
    if chain is not None:
        b_all, P_all, rho_all = rule.tables(chain.target, chain.draft)
        offsets = chain.level_offsets
    for n in range(T):
        t, d = forest.target[n], forest.draft[n]
        if chain is None:
            b, P, rho = rule.tables(t, d)
        else:
            sl = slice(offsets[n], offsets[n + 1])
            b, P, rho = b_all[sl], P_all[sl], rho_all[sl]
        out = d * b + rho[:, None] * P
        rej += float(mass @ rho)
        mass = (mass[:, None] * out).ravel()
    tv = float(forest.sequence_tv_of(mass))
    return RulePoint(getattr(rule, "name", "rule"), rej, tv, mass)

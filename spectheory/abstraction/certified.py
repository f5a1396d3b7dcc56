r"""Certified Markov abstractions: exact coarsenings and bootstrap intervals.

Notation: p = target, q = draft. The proofs are in ``docs/markov_abstraction.md``:

- **Lower bound.** Coarsen a chain with deterministic transitions (the true model, e.g. a
  :meth:`~spectheory.DecodingChain.prefix_tree`) along a labelling ``g`` of its states that
  is *closed under transitions* (``g(next(s, x))`` depends on ``g(s)`` and ``x`` only), with
  one kernel per position, each the average of the fine kernels under the target's law of
  the fine state at that position. The coarse chain's state marginals are the exact laws
  of ``g(s_n)``, and by convexity of TV its Theorem-1 sum (bonus off,
  ``chain.tv_profile(T).sum()``) is at most the fine chain's (the true expected rejections).
- **Monotonicity.** If ``g`` refines ``h`` (``h = f(g)``), the ``h``-coarsening's sum is at
  most the ``g``-coarsening's: an order-(k+1) context refines order k.

:func:`coarsen` computes the exact coarsening; :func:`prefix_tree_labels` labels a prefix
tree's prefixes by a :class:`~.context_tree.ContextTree`; :func:`bootstrap_interval` gives
percentile intervals of any fitted statistic over resampled target paths.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_rng, check_int
from .._typing import RNGLike
from ..chain.decoding_chain import DecodingChain

if TYPE_CHECKING:
    from .context_tree import ContextTree

__all__ = ["coarsen", "prefix_tree_labels", "bootstrap_weights", "bootstrap_interval"]


def coarsen(
    chain: DecodingChain,
    horizon: int,
    labels: ArrayLike,
    n_states: int | None = None,
    stochastic: bool = False,
) -> DecodingChain:
    r"""Exact per-position coarsening of ``chain`` along ``labels`` (fine state -> coarse state).

    Kernels at 0-based position ``n`` and coarse state ``c``:

    .. math:: \bar p_n(\cdot|c) = \sum_{s: g(s) = c} \frac{\mu_n(s)}{\mu_n(g^{-1}(c))} p_n(\cdot|s)

    (same for q), with ``mu_n`` the chain's state marginal under target sampling; coarse
    states with no mass at ``n`` take the unweighted average of their fine kernels.

    Parameters
    ----------
    chain : DecodingChain with deterministic ``next_state``
    horizon : int
    labels : int array [S_fine]
    n_states : int, optional (default ``labels.max() + 1``)
    stochastic : bool
        Give the coarse chain the stochastic transition law (any labels, closed or not)

        .. math:: K(c'|c, x) = \frac{\sum_{n, s: g(s) = c} \mu_n(s) p_n(x|s) [g(\mathrm{next}(s, x)) = c']}
                                    {\sum_{n, s: g(s) = c} \mu_n(s) p_n(x|s)}

        (pooled over the positions ``n < T - 1``; it is the exact per-position law when every
        coarse state is visited at one position only, e.g. labels that include the prefix
        length, and then the lower bound and monotonicity hold: ``docs/markov_abstraction.md``,
        Section 7). Pairs ``(c, x)`` with no mass stay in ``c``.

    Returns
    -------
    DecodingChain with kernels ``[T, S_coarse, V]``.

    Raises
    ------
    ValueError
        If ``labels`` is not closed under transitions on the reachable states.

    Examples
    --------
    >>> import spectheory as st
    >>> tf = lambda pre: np.array([0.9, 0.1]) if pre[-1:] == (0,) else np.array([0.2, 0.8])
    >>> df = lambda pre: np.array([0.5, 0.5])
    >>> fine = st.DecodingChain.prefix_tree(tf, df, 2, 3)
    >>> one = coarsen(fine, 3, np.zeros(fine.n_states, dtype=int))        # order 0
    >>> bool(one.tv_profile(3).sum() <= fine.tv_profile(3).sum())
    True
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("coarsen")
    g = np.asarray(labels, dtype=np.int64)
    S, V = chain.n_states, chain.vocab_size
    if g.shape != (S,):
        raise ValueError(f"labels: expected shape ({S},), got {g.shape}")
    C = int(g.max()) + 1 if n_states is None else check_int(n_states, "n_states", 1)
    if g.min() < 0 or g.max() >= C:
        raise ValueError(f"labels: entries must lie in [0, {C})")
    marg = chain.state_marginals(T)  # [T, S]
    ind = np.zeros((C, S))
    ind[g, np.arange(S)] = 1.0
    plain = ind / np.maximum(ind.sum(1, keepdims=True), 1.0)
    kern = {"target": np.zeros((T, C, V)), "draft": np.zeros((T, C, V))}
    reach = np.zeros(S, dtype=bool)
    for n in range(T):
        w = ind * marg[n][None, :]
        tot = w.sum(1, keepdims=True)
        w = np.where(tot > 0, w / np.where(tot > 0, tot, 1.0), plain)
        t, d = chain.kernels(n)
        kern["target"][n] = w @ t
        kern["draft"][n] = w @ d
        reach |= marg[n] > 0
    initial = ind @ chain.initial
    if stochastic:
        flow = np.zeros((C, V, C))
        dest = g[chain.next_state]  # [S, V]
        for n in range(T - 1):
            np.add.at(flow, (g[:, None], np.arange(V)[None, :], dest), marg[n][:, None] * chain.kernels(n)[0])
        tot = flow.sum(-1, keepdims=True)
        stay = np.broadcast_to(np.eye(C)[:, None, :], flow.shape)
        law = np.where(tot > 0, flow / np.where(tot > 0, tot, 1.0), stay)
        return DecodingChain(kern["target"], kern["draft"], initial, law, max_horizon=T)
    ns = np.zeros((C, V), dtype=np.int64)
    src = np.flatnonzero(reach)
    dest = g[chain.next_state[src]]  # [R, V]
    ns[g[src]] = dest
    if not np.array_equal(ns[g[src]], dest):
        raise ValueError("labels: not closed under transitions (g(next(s, x)) depends on more than g(s), x)")
    unreached = np.setdiff1d(np.arange(C), g[src])
    ns[unreached] = unreached[:, None]  # never visited: self-loops
    return DecodingChain(kern["target"], kern["draft"], initial, ns, max_horizon=T)


def prefix_tree_labels(chain: DecodingChain, tree: ContextTree) -> np.ndarray:
    """Label each prefix of a prefix-tree chain (``chain.prefixes``) by its longest suffix in
    ``tree`` (a :class:`~.context_tree.ContextTree` over the same vocabulary)."""
    V = tree.vocab_size
    m = tree.max_order
    keys, lens = [], []
    for pre in chain.prefixes:
        ctx = pre[-m:] if m else ()
        k = 0
        for x in ctx:
            k = k * V + int(x)
        keys.append(k)
        lens.append(len(ctx))
    return tree.lookup(np.array(keys, dtype=np.int64), np.array(lens))


def bootstrap_weights(groups: ArrayLike, n_boot: int, rng: RNGLike = None) -> np.ndarray:
    """Path weights ``[n_boot, N]`` of a bootstrap stratified by ``groups`` (the prompt of each
    path): within each group, a multinomial resample of its paths.

    Examples
    --------
    >>> w = bootstrap_weights([0, 0, 1, 1], 3, rng=0)
    >>> w.shape, w[:, :2].sum(1).tolist()
    ((3, 4), [2.0, 2.0, 2.0])
    """
    g = np.asarray(groups)
    B = check_int(n_boot, "n_boot", 1)
    rng = as_rng(rng)
    w = np.zeros((B, len(g)))
    for lab in np.unique(g):
        idx = np.flatnonzero(g == lab)
        w[:, idx] = rng.multinomial(len(idx), np.full(len(idx), 1.0 / len(idx)), size=B)
    return w


def bootstrap_interval(
    statistic: Callable[[np.ndarray], float],
    groups: ArrayLike,
    n_boot: int = 200,
    level: float = 0.95,
    rng: RNGLike = None,
) -> tuple[float, float, np.ndarray]:
    """Percentile interval of ``statistic(weights)`` over a stratified bootstrap of the paths.

    ``statistic`` maps path weights ``[N]`` to a float (refit with those weights). Returns
    ``(low, high, replicates)``. The interval covers the sampling variation of the fit; it
    does not remove the fit's finite-sample bias (see ``docs/markov_abstraction.md``).
    """
    w = bootstrap_weights(groups, n_boot, rng)
    reps = np.array([statistic(wi) for wi in w])
    a = (1.0 - level) / 2
    return float(np.quantile(reps, a)), float(np.quantile(reps, 1 - a)), reps

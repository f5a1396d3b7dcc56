r"""Markov abstractions fitted along target paths: one fit for any partition of prefixes.

Notation: p = target, q = draft. A *state abstraction* maps every prefix (a target path up
to the position before token ``n``) to one of ``S`` states; :func:`fit_abstraction` turns
per-position state labels ``states [N, T]`` of ``N`` target paths into a
:class:`~spectheory.DecodingChain` whose kernels are averages of the models' exact
next-token laws over the positions in each state:

.. math:: \bar p(\cdot|s) = \frac{1}{|I_s|}\sum_{(i, n) \in I_s} p(\cdot | x^{(i)}_{<n}), \qquad
          \bar q(\cdot|s) = \frac{1}{|I_s|}\sum_{(i, n) \in I_s} q(\cdot | x^{(i)}_{<n}),

both over the *same* target positions ``I_s`` (soft counts), pooled over positions
(homogeneous chain, ``per_position=False``) or one kernel per position (``[T, S, V]``,
``per_position=True``: the certified fit of ``docs/markov_abstraction.md``, where the
chain's Theorem-1 sum is a lower bound on the true expected rejections). States with no
sample at a position take their pooled kernel; states with no sample at all take the
kernels given as ``fallback`` (a context tree's back-off nodes) or the global average.

:func:`chain_summary` collects the chain's predictions the decoder measures.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._guards import check_int
from ..chain.decoding_chain import DecodingChain

__all__ = ["state_sums", "fit_abstraction", "plugin_bound", "chain_summary"]


def _indicator(states, n_states, weights=None):
    """Sparse ``[S, N*T]`` one-hot of the state of every position (optionally weighted per path)."""
    N, T = states.shape
    w = np.ones(N * T) if weights is None else np.repeat(np.asarray(weights, np.float64), T)
    return sp.csr_matrix((w, (states.ravel(), np.arange(N * T))), shape=(n_states, N * T))


def state_sums(
    states: ArrayLike,
    laws: np.ndarray,
    n_states: int,
    per_position: bool = False,
    weights: ArrayLike | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Summed laws and counts per state (``[S, V]``, ``[S]``) or per position and state
    (``[T, S, V]``, ``[T, S]``); ``weights`` [N] weights the paths (a bootstrap resample).

    Examples
    --------
    >>> laws = np.array([[[1.0, 0.0], [0.0, 1.0]]])           # one path, T = 2, V = 2
    >>> sums, counts = state_sums(np.array([[0, 0]]), laws, 1)
    >>> sums.tolist(), counts.tolist()
    ([[1.0, 1.0]], [2.0])
    """
    states = np.asarray(states, dtype=np.int64)
    laws = np.asarray(laws)
    N, T = states.shape
    V = laws.shape[-1]
    if laws.shape[:2] != (N, T):
        raise ValueError(f"laws: expected shape ({N}, {T}, V), got {laws.shape}")
    if not per_position:
        ind = _indicator(states, n_states, weights)
        flat = np.asarray(laws.reshape(N * T, V), dtype=np.float64)  # no copy if already float64
        return np.asarray(ind @ flat), np.asarray(ind.sum(1)).ravel()
    sums = np.zeros((T, n_states, V))
    counts = np.zeros((T, n_states))
    w = np.ones(N) if weights is None else np.asarray(weights, np.float64)
    for n in range(T):
        ind = sp.csr_matrix((w, (states[:, n], np.arange(N))), shape=(n_states, N))
        sums[n] = ind @ np.asarray(laws[:, n], dtype=np.float64)
        counts[n] = np.asarray(ind.sum(1)).ravel()
    return sums, counts


def _normalise(sums, counts, fallback):
    with np.errstate(invalid="ignore", divide="ignore"):
        k = sums / np.where(counts > 0, counts, 1.0)[..., None]
    k = np.where((counts > 0)[..., None], k, fallback)
    return k / k.sum(-1, keepdims=True)


def fit_abstraction(
    states: ArrayLike,
    next_state: ArrayLike | sp.spmatrix,
    initial_states: ArrayLike,
    target_laws: np.ndarray,
    draft_laws: np.ndarray,
    per_position: bool = False,
    fallback: tuple[np.ndarray, np.ndarray] | None = None,
    weights: ArrayLike | None = None,
) -> DecodingChain:
    r"""The :class:`~spectheory.DecodingChain` of a state abstraction, kernels along target paths.

    Parameters
    ----------
    states : int array [N, T]
        State of the prefix before each generated token of ``N`` target paths.
    next_state : int array [S, V], or a transition law (float [S, V, S] or sparse (S * V, S))
        Transition of the abstraction: deterministic (exact for context trees) or
        stochastic (hidden-state clusters, :func:`.hidden_states.cluster_transition_law`).
    initial_states : int array [N] or [P]
        States of the prompts (the initial law is their empirical law).
    target_laws, draft_laws : arrays [N, T, V]
        p and q (p = target, q = draft) at every position of the target paths.
    per_position : bool
        One kernel per position (``[T, S, V]``, certified) or pooled (``[S, V]``).
    fallback : tuple of two arrays [S, V], optional
        Kernels of states never visited (default: the average over all positions).
    weights : array [N], optional
        Path weights (bootstrap resamples); the initial law is weighted too when
        ``initial_states`` has length ``N``.

    Returns
    -------
    DecodingChain

    Examples
    --------
    >>> tl = np.array([[[0.5, 0.5], [1.0, 0.0]]]); dl = np.array([[[0.5, 0.5], [0.0, 1.0]]])
    >>> ns = np.array([[1, 1], [1, 1]])
    >>> chain = fit_abstraction(np.array([[0, 1]]), ns, [0], tl, dl, per_position=True)
    >>> float(chain.tv_profile(2).sum())
    1.0
    """
    states = np.asarray(states, dtype=np.int64)
    V = np.shape(target_laws)[-1]
    if sp.issparse(next_state):
        ns, S = next_state, np.shape(next_state)[1]
    elif np.ndim(next_state) == 3:
        ns = np.asarray(next_state, dtype=np.float64)
        S = ns.shape[0]
    else:
        ns = np.asarray(next_state, dtype=np.int64)
        S = ns.shape[0]
    T = states.shape[1]
    if states.size and (states.min() < 0 or states.max() >= S):
        raise ValueError(f"states: entries must lie in [0, {S})")
    tp, cnt = state_sums(states, target_laws, S, False, weights)
    dp, _ = state_sums(states, draft_laws, S, False, weights)
    if fallback is None:
        fallback = (
            np.broadcast_to(tp.sum(0) / max(cnt.sum(), 1e-300), (S, V)),
            np.broadcast_to(dp.sum(0) / max(cnt.sum(), 1e-300), (S, V)),
        )
    target = _normalise(tp, cnt, fallback[0])
    draft = _normalise(dp, cnt, fallback[1])
    if per_position:
        tn, cn = state_sums(states, target_laws, S, True, weights)
        dn, _ = state_sums(states, draft_laws, S, True, weights)
        target = _normalise(tn, cn, target[None])
        draft = _normalise(dn, cn, draft[None])
    init_states = np.asarray(initial_states, dtype=np.int64)
    w0 = weights if (weights is not None and len(init_states) == len(states)) else None
    initial = np.bincount(init_states, weights=w0, minlength=S).astype(np.float64)
    chain = DecodingChain(target, draft, initial / initial.sum(), ns, max_horizon=T)
    return chain


def plugin_bound(
    states: ArrayLike,
    target_laws: np.ndarray,
    draft_laws: np.ndarray,
    n_states: int,
    per_position: bool = True,
    weights: ArrayLike | None = None,
) -> float | np.ndarray:
    r"""The Jensen bound with empirical state frequencies, without building a chain.

    .. math:: \hat B = \frac{1}{2N}\sum_{n, s} \Big\| \sum_{(i, n) \in I_{n,s}} (p - q)(\cdot|x^{(i)}_{<n}) \Big\|_1

    (``per_position=False`` pools positions). In-sample it never exceeds the
    Rao-Blackwellised estimate ``mean_i sum_n TV_{i,n}`` (triangle inequality): the finite-
    sample form of the lower bound. Returns a float; with ``weights`` of shape ``[B, N]``
    (``B`` bootstrap resamples of the paths) an array ``[B]`` of the weighted bounds, the
    law differences and cells computed once for all of them.

    Examples
    --------
    >>> tl = np.array([[[1.0, 0.0]], [[0.0, 1.0]]]); dl = tl[::-1]
    >>> plugin_bound(np.zeros((2, 1), int), tl, dl, 1), plugin_bound(np.array([[0], [1]]), tl, dl, 2)
    (0.0, 1.0)
    >>> plugin_bound(np.array([[0], [1]]), tl, dl, 2, weights=[[1.0, 1.0], [2.0, 0.0]]).tolist()
    [1.0, 1.0]
    """
    states = np.asarray(states, dtype=np.int64)
    N, T = states.shape
    diff = np.asarray(target_laws, np.float64) - np.asarray(draft_laws, np.float64)
    # only the visited (position, state) cells matter: label them 0..U-1 (U <= N T)
    cell = states + (np.arange(T)[None, :] * int(n_states) if per_position else 0)
    _, inv = np.unique(cell.ravel(), return_inverse=True)
    cells, n_cells = inv.reshape(N, T), int(inv.max()) + 1

    def bound(w):
        sums, _ = state_sums(cells, diff, n_cells, False, w)
        total = N if w is None else float(np.sum(w))
        return float(0.5 * np.abs(sums).sum() / total)

    if weights is not None and np.ndim(weights) == 2:
        if np.shape(weights)[1] != N:
            raise ValueError(f"weights: expected shape [B, {N}], got {np.shape(weights)}")
        return np.array([bound(w) for w in np.asarray(weights, np.float64)])
    return bound(weights)


def chain_summary(chain: DecodingChain, horizon: int, gamma: int) -> dict[str, float]:
    """Predictions of a fitted chain: ``rejections`` (Theorem-1 sum, bonus off), ``target_calls``
    (bonus on, at ``gamma``) and ``tokens_per_call`` (``horizon / target_calls``)."""
    T = check_int(horizon, "horizon", 1)
    rej = float(chain.tv_profile(T).sum())
    calls = float(chain.expected_target_calls(T, gamma, bonus=True))
    return {"rejections": rej, "target_calls": calls, "tokens_per_call": T / calls}

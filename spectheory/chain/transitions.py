r"""Transitions of a :class:`~spectheory.DecodingChain`: a deterministic map or a law.

Deterministic: ``next_state[s, x]`` (int ``[S, V]``) is the state after token ``x`` in
state ``s``. Stochastic: ``next_state[s, x, s']`` (float ``[S, V, S]``, or a sparse matrix
of shape ``(S * V, S)`` whose row ``s * V + x`` is that law) is
:math:`K(s' \mid s, x)`, the law of the next state. Either way the chain's *transition
operator* of a non-negative mass ``m[s, x]`` (a kernel, the accepted part ``min(p, q)``,
...; p = target, q = draft) is

.. math:: M[s, s'] = \sum_x m(s, x)\, K(s' \mid s, x),

with :math:`K(s'|s,x) = [s' = \mathrm{next\_state}(s, x)]` in the deterministic case. The
exact engines only ever use this operator, so they hold for both kinds (the derivation is in
``docs/markov_abstraction.md``, Section 7).

Here: validation (:func:`check_next_state`), the sparse law (:func:`law_matrix`), the
operator (:func:`stochastic_operator`) and inverse-CDF sampling of the next state with
injected uniforms (:class:`NextStateSampler`).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._guards import as_rng
from .._typing import RNGLike

__all__ = [
    "check_next_state",
    "law_matrix",
    "stochastic_operator",
    "NextStateSampler",
    "random_transition_law",
]


def check_next_state(
    next_state: ArrayLike | sp.spmatrix, S: int, V: int, atol: float
) -> tuple[np.ndarray | sp.csr_matrix, sp.csr_matrix | None]:
    """Validate ``next_state``; return ``(stored, law)``.

    ``stored`` is a read-only int64 ``[S, V]`` array (deterministic, ``law is None``) or the
    validated law (a read-only float64 ``[S, V, S]`` array, or a CSR ``(S * V, S)`` matrix);
    ``law`` is then the CSR ``(S * V, S)`` matrix of :func:`law_matrix`.

    Raises
    ------
    ValueError
        Wrong shape, a float ``[S, V]`` map, entries outside ``[0, S)`` (deterministic), or
        negative / non-finite entries and rows not summing to 1 within ``atol`` (law).
    """
    if sp.issparse(next_state):
        if np.shape(next_state) != (S * V, S):
            raise ValueError(
                f"next_state: a sparse transition law must have shape (S * V, S) = "
                f"({S * V}, {S}), got {np.shape(next_state)}"
            )
        law = sp.csr_matrix(next_state, dtype=np.float64, copy=True)
        _check_law_rows(law.data, np.asarray(law.sum(1)).ravel(), atol, V)
        law.eliminate_zeros()
        law.sort_indices()
        return law, law
    ns = np.asarray(next_state)
    if ns.ndim == 3:
        if ns.shape != (S, V, S):
            raise ValueError(
                f"next_state: a transition law must have shape (S, V, S) = ({S}, {V}, {S}), got {ns.shape}"
            )
        if not (np.issubdtype(ns.dtype, np.floating) or np.issubdtype(ns.dtype, np.integer)):
            raise ValueError("next_state: a transition law must be a float array")
        a = np.array(ns, dtype=np.float64)
        _check_law_rows(a.ravel(), a.sum(-1).ravel(), atol, V)
        a.setflags(write=False)
        return a, law_matrix(a)
    if ns.shape != (S, V):
        raise ValueError(
            f"next_state: expected an int map of shape ({S}, {V}) or a law of shape "
            f"({S}, {V}, {S}), got {ns.shape}"
        )
    if not np.issubdtype(ns.dtype, np.integer):
        raise ValueError(
            "next_state: an (S, V) map must be an integer array (a stochastic "
            "transition is a float law of shape (S, V, S))"
        )
    if ns.size and (ns.min() < 0 or ns.max() >= S):
        raise ValueError(f"next_state: entries must lie in [0, {S})")
    out = np.array(ns, dtype=np.int64)
    out.setflags(write=False)
    return out, None


def _check_law_rows(entries, row_sums, atol, V):
    if not np.all(np.isfinite(entries)):
        raise ValueError("next_state: the transition law contains NaN or infinite entries")
    if entries.size and entries.min() < 0:
        raise ValueError("next_state: the transition law has negative entries")
    bad = np.abs(row_sums - 1.0) > atol
    if np.any(bad):
        r = int(np.argmax(bad))
        raise ValueError(
            f"next_state: the law of the next state after (state {r // V}, token {r % V}) "
            f"sums to {row_sums[r]:.10g}, not 1 (tolerance {atol})"
        )


def law_matrix(next_state: ArrayLike | sp.spmatrix, n_states: int | None = None) -> sp.csr_matrix:
    """CSR matrix ``(S * V, S)``: row ``s * V + x`` is the law of the state after ``(s, x)``.

    ``next_state`` is an int map ``[S, V]`` (one-hot rows), a law ``[S, V, S]`` or already
    a sparse ``(S * V, S)`` matrix.

    Examples
    --------
    >>> law_matrix(np.array([[1, 0], [1, 1]])).toarray().tolist()
    [[0.0, 1.0], [1.0, 0.0], [0.0, 1.0], [0.0, 1.0]]
    """
    if sp.issparse(next_state):
        return sp.csr_matrix(next_state, dtype=np.float64)
    ns = np.asarray(next_state)
    if ns.ndim == 3:
        S, V, _ = ns.shape
        m = sp.csr_matrix(ns.reshape(S * V, S).astype(np.float64))
        m.eliminate_zeros()
        return m
    S = ns.shape[0] if n_states is None else int(n_states)
    rows = ns.size
    return sp.csr_matrix((np.ones(rows), (np.arange(rows), ns.ravel().astype(np.int64))), shape=(rows, S))


def stochastic_operator(mass: ArrayLike, law: sp.csr_matrix) -> sp.csr_matrix:
    r"""``M[s, s'] = sum_x mass[s, x] K(s'|s, x)`` for a law ``K`` as a CSR ``(S * V, S)`` matrix.

    Examples
    --------
    >>> K = law_matrix(np.array([[[0.5, 0.5], [0.0, 1.0]], [[1.0, 0.0], [1.0, 0.0]]]))   # S = V = 2
    >>> stochastic_operator(np.array([[0.5, 0.5], [0.25, 0.75]]), K).toarray().tolist()
    [[0.25, 0.75], [1.0, 0.0]]
    """
    mass = np.asarray(mass, dtype=np.float64)
    S, V = mass.shape
    w = sp.csr_matrix((mass.ravel(), np.arange(S * V), np.arange(0, S * V + 1, V)), shape=(S, S * V))
    return sp.csr_matrix(w @ law)


def random_transition_law(
    n_states: int,
    vocab_size: int,
    concentration: float = 1.0,
    support: int | None = None,
    rng: RNGLike = None,
) -> np.ndarray:
    """Random stochastic transition law ``[S, V, S]``: Dirichlet(``concentration``) rows,
    optionally on ``support`` random states per row (the others get probability 0).

    Examples
    --------
    >>> law = random_transition_law(3, 2, support=2, rng=0)
    >>> law.shape, bool(np.allclose(law.sum(-1), 1.0)), int((law > 0).sum(-1).max())
    ((3, 2, 3), True, 2)
    """
    S, V = int(n_states), int(vocab_size)
    if S < 1 or V < 1:
        raise ValueError(f"n_states, vocab_size: must be >= 1, got {n_states}, {vocab_size}")
    if not concentration > 0:
        raise ValueError(f"concentration: must be > 0, got {concentration!r}")
    rng = as_rng(rng)
    g = np.maximum(rng.gamma(float(concentration), size=(S, V, S)), np.finfo(float).tiny)
    if support is not None:
        k = int(support)
        if not 1 <= k <= S:
            raise ValueError(f"support: must lie in [1, {S}], got {support!r}")
        keep = np.argsort(rng.random((S, V, S)), -1)[..., :k]
        mask = np.zeros((S, V, S), dtype=bool)
        np.put_along_axis(mask, keep, True, -1)
        g = np.where(mask, g, 0.0)
    return g / g.sum(-1, keepdims=True)


class NextStateSampler:
    r"""Inverse-CDF sampling of the next state from a law ``K(.|s, x)`` (uniforms injected).

    ``sample(s, x, u)`` returns, elementwise, the smallest state ``s'`` (among those with
    ``K(s'|s, x) > 0``, in increasing order) whose cumulative probability exceeds ``u``.

    Examples
    --------
    >>> smp = NextStateSampler(law_matrix(np.array([[[0.25, 0.75]], [[1.0, 0.0]]])))
    >>> smp.sample(np.array([0, 0, 1]), np.array([0, 0, 0]), np.array([0.2, 0.3, 0.9])).tolist()
    [0, 1, 0]
    """

    def __init__(self, law: ArrayLike | sp.spmatrix) -> None:
        law = sp.csr_matrix(law, dtype=np.float64)
        law.eliminate_zeros()
        law.sort_indices()
        self.indptr, self.indices = law.indptr, law.indices.astype(np.int64)
        self.n_rows, self.n_states = law.shape
        self.V = self.n_rows // self.n_states
        row = np.repeat(np.arange(self.n_rows), np.diff(self.indptr))
        cum = np.cumsum(law.data)
        start = np.concatenate([[0.0], cum])[self.indptr[:-1]]  # mass before each row
        within = cum - start[row]
        last = self.indptr[1:][np.diff(self.indptr) > 0] - 1  # last entry of each non-empty row
        total = np.ones(self.n_rows)
        total[row[last]] = within[last]
        # key = row + cumulative share within the row: increasing, row r's entries in (r, r + 1]
        self.key = row + within / total[row]
        self.key[last] = row[last] + 1.0

    def sample(self, s: ArrayLike, x: ArrayLike, u: ArrayLike) -> np.ndarray:
        """Next states for states ``s``, tokens ``x`` and uniforms ``u`` in ``[0, 1)`` (same shapes)."""
        r = np.asarray(s, dtype=np.int64) * self.V + np.asarray(x, dtype=np.int64)
        idx = np.searchsorted(self.key, r + np.asarray(u, dtype=np.float64), side="right")
        idx = np.clip(idx, self.indptr[r], self.indptr[r + 1] - 1)
        return self.indices[idx]

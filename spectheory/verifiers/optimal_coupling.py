r"""The verifier attaining the optimal multi-draft acceptance: an optimal coupling from the
transport LP, and its sampler.

``k`` candidates ``X = (x_1..x_k)`` with joint law ``D`` are drafted at one position; any
verifier emitting ``Y ~ p`` (p = target) is a coupling of ``X ~ D`` and ``Y ~ p``, and the best
one maximises ``P(Y in X)``. :func:`optimal_coupling_lp` solves that transport problem over the
enumerated candidate tuples; :func:`optimal_rule` / :func:`optimal_verify` sample from the plan.
The value of the optimum and the prefix-set theorem that computes it with a sort are analysis:
:mod:`spectheory.analysis.optimal_transport`.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_rng, check_int
from .._typing import RNGLike
from .multidraft import _categorical, check_multidraft_args, sample_candidates

__all__ = [
    "draft_tuple_law",
    "optimal_coupling_lp",
    "OptimalCoupling",
    "optimal_rule",
    "optimal_verify",
]

#: Largest number of draft sets / tuples enumerated exactly.
MAX_ENUM = 2_000_000


def draft_tuple_law(draft: ArrayLike, k: int, replacement: bool = True) -> tuple[np.ndarray, np.ndarray]:
    r"""All ordered candidate tuples with positive probability and their law.

    Returns ``tuples [N, k]`` (``-1`` pads slots beyond an exhausted draft support without
    replacement) and ``probs [N]``. With replacement ``N = nnz(q)^k``.
    """
    d = np.asarray(draft, dtype=np.float64)
    supp = np.flatnonzero(d > 0)
    if replacement:
        if supp.size**k > MAX_ENUM:
            raise ValueError(f"k: {supp.size}^{k} draft tuples is too many to enumerate")
        tup = np.array(list(itertools.product(supp, repeat=k)), dtype=np.int64).reshape(-1, k)
        return tup, np.prod(d[tup], axis=1)
    kk = min(k, supp.size)
    perms = list(itertools.permutations(supp, kk))
    if len(perms) > MAX_ENUM:
        raise ValueError(f"k: {len(perms)} draft tuples is too many to enumerate")
    tup = np.array(perms, dtype=np.int64).reshape(-1, kk)
    dp = d[tup]
    used = np.zeros((tup.shape[0], d.size), dtype=bool)
    left = np.empty_like(dp)
    for j in range(kk):  # mass left before draw j, summed directly
        left[:, j] = np.where(used, 0.0, d[None]).sum(1)
        used[np.arange(tup.shape[0]), tup[:, j]] = True
    probs = np.prod(dp / np.clip(left, 1e-300, None), axis=1)
    if kk < k:
        tup = np.concatenate([tup, np.full((tup.shape[0], k - kk), -1, dtype=np.int64)], 1)
    return tup, probs


@dataclass(frozen=True)
class OptimalCoupling:
    """An optimal coupling of the candidate tuple and the emitted token (from the LP).

    Attributes
    ----------
    tuples : int array [N, k]   candidate tuples (``-1`` = empty slot)
    tuple_law : array [N]       their draft probabilities
    plan : array [N, V]         ``pi(tuple, y)``; rows sum to ``tuple_law``, columns to ``target``
    acceptance : float          ``sum_{y in tuple} pi(tuple, y)`` (the LP optimum)
    vocab_size, k : int
    replacement : bool
    """

    tuples: np.ndarray
    tuple_law: np.ndarray
    plan: np.ndarray
    acceptance: float
    vocab_size: int
    k: int
    replacement: bool

    @property
    def output_law(self) -> np.ndarray:
        """Exact law of the emitted token (column sums of the plan)."""
        return self.plan.sum(0)

    def conditional(self) -> np.ndarray:
        """``P(Y = y | tuple)``, shape ``[N, V]``."""
        return self.plan / np.clip(self.plan.sum(1, keepdims=True), 1e-300, None)

    def tuple_index(self, candidates: ArrayLike) -> np.ndarray:
        """Row of ``tuples`` for each candidate tuple ``[R, k]`` (``-1`` if impossible)."""
        base = self.vocab_size + 1
        w = base ** np.arange(self.k - 1, -1, -1, dtype=np.int64)
        codes = (self.tuples + 1) @ w
        lut = dict(zip(codes.tolist(), range(codes.size)))
        c = (np.asarray(candidates, dtype=np.int64) + 1) @ w
        return np.array([lut.get(int(v), -1) for v in c], dtype=np.int64)


def _checked_tuples(
    tuple_law: tuple[np.ndarray, np.ndarray], k: int, V: int
) -> tuple[np.ndarray, np.ndarray]:
    tup = np.asarray(tuple_law[0], dtype=np.int64)
    law = np.asarray(tuple_law[1], dtype=np.float64)
    if tup.ndim != 2 or tup.shape[1] != k or law.shape != (tup.shape[0],):
        raise ValueError(f"tuple_law: expected (tuples [N, {k}], probs [N]), got {tup.shape}, {law.shape}")
    if tup.size and (tup.min() < -1 or tup.max() >= V):
        raise ValueError(f"tuple_law: tokens must lie in [0, {V}) (-1 for an empty slot)")
    if np.any(law < 0) or abs(law.sum() - 1.0) > 1e-9:
        raise ValueError("tuple_law: probabilities must be non-negative and sum to 1")
    return tup, law


def optimal_coupling_lp(
    target: ArrayLike,
    draft: ArrayLike,
    k: int,
    replacement: bool = True,
    tuple_law: tuple[np.ndarray, np.ndarray] | None = None,
) -> OptimalCoupling:
    r"""Solve the transport LP with HiGHS (``scipy.optimize.linprog``); small ``V`` only.

    Coupling ``pi[n, y] >= 0`` of (candidate tuple ``n``, output ``y``) with marginals ``D``
    and ``p`` maximising ``sum_n sum_{y in tuple n} pi[n, y]``. Solved in max-flow form:
    flow on the edges ``y in tuple n`` with row sums ``<= D(n)`` and column sums ``<= p(y)``;
    the unmatched masses (equal totals) are then coupled independently, which keeps the
    objective and gives exact marginals. Independent of the prefix formula (checks it).
    ``tuple_law=(tuples [N, k], probs [N])`` replaces the drafting law (default
    :func:`draft_tuple_law` of ``draft``; e.g.
    :func:`spectheory.analysis.drafting_laws.greedy_tuple_law`).

    Examples
    --------
    >>> from spectheory.verifiers.optimal_coupling import optimal_coupling_lp
    >>> round(optimal_coupling_lp([0.5, 0.5], [0.9, 0.1], 2).acceptance, 6)
    0.69
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    t, d, k = check_multidraft_args(target, draft, k, replacement)
    V = t.size
    tup, law = draft_tuple_law(d, k, replacement) if tuple_law is None else _checked_tuples(tuple_law, k, V)
    N = tup.shape[0]
    if N * V > 500_000:
        raise ValueError(f"k: LP with {N} tuples x {V} tokens is too large (keep V and k small)")
    member = np.zeros((N, V), dtype=bool)
    rows = np.repeat(np.arange(N), k)
    valid = tup.ravel() >= 0
    member[rows[valid], tup.ravel()[valid]] = True
    # Max-flow form: variables only on the edges (n, y in tuple n), rows <= D(n), columns <=
    # p(y). Always feasible (0), so HiGHS never reports rounding-level infeasibility; the
    # unmatched mass is then coupled independently, giving exact marginals D and p.
    en, ey = np.nonzero(member)
    E = en.size
    a_ub = sp.vstack(
        [
            sp.csr_matrix((np.ones(E), (en, np.arange(E))), shape=(N, E)),
            sp.csr_matrix((np.ones(E), (ey, np.arange(E))), shape=(V, E)),
        ]
    ).tocsr()
    b_ub = np.concatenate([law, t])
    sol = linprog(
        -np.ones(E),
        A_ub=a_ub,
        b_ub=b_ub,
        bounds=(0, None),
        method="highs",
        options={"primal_feasibility_tolerance": 1e-10, "dual_feasibility_tolerance": 1e-10},
    )
    if sol.status != 0:
        raise RuntimeError(f"optimal_coupling_lp: HiGHS failed: {sol.message}")
    flow = np.zeros((N, V))
    flow[en, ey] = np.clip(sol.x, 0.0, None)
    # repair the solver's feasibility slack (<= 1e-10 per constraint): scale down rows, columns
    rs = flow.sum(1)
    flow *= np.where(rs > law, law / np.where(rs > 0, rs, 1.0), 1.0)[:, None]
    cs = flow.sum(0)
    flow *= np.where(cs > t, t / np.where(cs > 0, cs, 1.0), 1.0)[None, :]
    left_rows = np.clip(law - flow.sum(1), 0.0, None)
    left_cols = np.clip(t - flow.sum(0), 0.0, None)
    tot = left_rows.sum()
    plan = flow + (np.outer(left_rows, left_cols) / tot if tot > 1e-15 else 0.0)
    return OptimalCoupling(tup, law, plan, float(plan[member].sum()), V, k, replacement)


def optimal_rule(
    coupling: OptimalCoupling, candidates: ArrayLike, u: ArrayLike
) -> tuple[np.ndarray, np.ndarray]:
    """Pure optimal verifier: emit ``y ~ pi(tuple, .) / D(tuple)`` by inverse CDF with ``u``.

    Returns ``(accepted [R] bool, token [R] int)``; accepted iff the token is a candidate.
    """
    x = np.asarray(candidates, dtype=np.int64)
    idx = coupling.tuple_index(x)
    if np.any(idx < 0):
        raise ValueError("candidates: contains a tuple of probability zero under the draft")
    token = _categorical(coupling.conditional()[idx], np.asarray(u, dtype=np.float64))
    return (x == token[:, None]).any(1), token


def optimal_verify(
    target: ArrayLike,
    draft: ArrayLike,
    k: int,
    n: int,
    rng: RNGLike = None,
    replacement: bool = True,
    coupling: OptimalCoupling | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Sample ``n`` rounds of the LP-optimal verifier; returns ``(accepted [n], token [n])``.

    Examples
    --------
    >>> from spectheory.verifiers.optimal_coupling import optimal_verify
    >>> acc, tok = optimal_verify([0.5, 0.5], [0.9, 0.1], 2, 4000, rng=0)
    >>> bool(0.64 < acc.mean() < 0.74)
    True
    """
    t, d, k = check_multidraft_args(target, draft, k, replacement)
    n = check_int(n, "n", 1)
    cp = optimal_coupling_lp(t, d, k, replacement) if coupling is None else coupling
    rng = as_rng(rng)
    cand = sample_candidates(d, k, n, rng, replacement)
    return optimal_rule(cp, cand, rng.random(n))

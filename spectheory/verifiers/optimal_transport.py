r"""Optimal multi-draft acceptance as optimal transport, and a verifier attaining it.

``k`` candidates ``X = (x_1..x_k)`` with joint law ``D`` are drafted at one position; a
verifier outputs ``Y`` with law exactly the target ``p`` and accepts when ``Y`` is one of
the candidates. Notation: p = target, q = draft (code says ``target``/``draft``). Any
verifier is a coupling of ``X ~ D`` and ``Y ~ p``; the best acceptance is the transport
problem (SpecTr, Sun et al. 2023; Khisti et al. 2025; Hu et al. 2025)

.. math::
    \alpha^* = \max_{\pi \in \Pi(D, p)} P_\pi(Y \in \{x_1..x_k\})
             = 1 - \max_{S \subseteq [V]} \big[ D(\text{all } k \text{ drafts in } S) - p(S) \big].

The second form is max-flow/min-cut (Gale's supply-demand theorem): tuple ``x`` ships
mass ``D(x)`` to tokens of its set, token ``y`` receives at most ``p(y)``; a cut is a set
``A`` of tuples, costing ``D(A^c) + p(N(A))``; for ``S = N(A)`` the cheapest ``A`` is all
tuples inside ``S``, so the min cut is ``min_S [1 - D(all in S) + p(S)]`` (``S = {}``: 1).

**Prefix sets (derived).** Sort tokens by ``p/q`` ascending (``q = 0`` last); the maximising
``S`` can be taken as a prefix of that order, so ``alpha*`` costs a sort.

*Proof, i.i.d. drafts* (``D(all in S) = F(q(S))``, ``F(m) = m^k`` convex): for a set ``S``
with ``q(S) = m``, the fractional knapsack says ``p(S) >= G(m)``, the cost of filling draft
mass ``m`` greedily in ``p/q`` order; ``G`` is piecewise linear with breakpoints at the
prefix masses. So ``g(S) <= F(m) - G(m)``, which is convex on each segment between
breakpoints and hence maximal at a breakpoint, i.e. at a prefix set.

*Drafts without replacement* (successive sampling) reduce to a marginal-gain lemma: for
disjoint ``R``, ``y``, ``z`` with ``q(y), q(z) > 0``,
``[f(R+y+z) - f(R+y)] / q(z) >= [f(R+y) - f(R)] / q(y)`` where ``f(S) = D(all in S)``.
Given it, if an optimal ``S`` misses ``z`` but holds ``y`` later in the order, then
``g(S+z) - g(S) >= (q(z)/q(y)) (g(S) - g(S-y)) >= 0``, so adding the earliest missing
tokens keeps optimality and ends at a prefix. For i.i.d. drafts the lemma is convexity of
``m^k``; for successive sampling it is **not proved here**: the tests check the lemma and
the prefix claim against all ``2^V`` sets and against the LP (``method="subsets"`` is the
exhaustive fallback). Without replacement ``D(all in S) <= q(S)^k`` for every ``S`` (each
successive draw lands in ``S`` with probability ``(q(S) - q(A))/(1 - q(A)) <= q(S)``), so
its optimum is never below the i.i.d. one.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from .._guards import check_int
from ..laws.sampling import safe_ratio
from .multidraft import _categorical, check_multidraft_args, sample_candidates

__all__ = [
    "ratio_order",
    "drafted_set_law",
    "prob_all_in_prefixes",
    "optimal_multidraft_acceptance",
    "draft_tuple_law",
    "optimal_coupling_lp",
    "OptimalCoupling",
    "optimal_rule",
    "optimal_verify",
]

#: Largest number of draft sets / tuples enumerated exactly.
MAX_ENUM = 2_000_000


def ratio_order(target, draft) -> np.ndarray:
    """Tokens sorted by ``target/draft`` ascending (``draft = 0`` last, ties by index)."""
    t = np.asarray(target, dtype=np.float64)
    d = np.asarray(draft, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = safe_ratio(t, d)
    return np.argsort(ratio, kind="stable")


def drafted_set_law(draft, k):
    r"""Law of the *set* of ``k`` candidates drawn by successive sampling (no replacement).

    Dynamic programme over bitmasks: ``P(A + x) += P(A) q(x) / q(not A)``. When the draft
    support is exhausted (``q(not A) = 0``) fewer than ``k`` candidates exist and ``A`` stays.
    ``q(not A)`` is summed directly over the tokens left (not as ``1 - q(A)``, which loses
    all precision when the mass left is tiny).

    Returns
    -------
    masks : ndarray of int64, shape (M,)   bit ``x`` set iff token ``x`` is drafted
    probs : ndarray, shape (M,)
    """
    d = np.asarray(draft, dtype=np.float64)
    V = d.size
    if V > 62:
        raise ValueError(f"draft: exact drafted-set law limited to V <= 62, got V={V}")
    masks = np.zeros(1, dtype=np.int64)
    probs = np.ones(1)
    left = np.full(1, d.sum())
    bits = np.int64(1) << np.arange(V, dtype=np.int64)
    for _ in range(k):
        rem = left
        done = rem <= 0  # any positive mass left is drafted (as by the sampler)
        live_m, live_p, live_r = masks[~done], probs[~done], rem[~done]
        inset = (live_m[:, None] & bits[None]) != 0  # [M, V]
        w = np.where(inset, 0.0, d[None]) / live_r[:, None]
        mi, xi = np.nonzero(w > 0)
        if mi.size + done.sum() > MAX_ENUM:
            raise ValueError(f"k: more than {MAX_ENUM} drafted sets (V={V}, k={k}); too large to enumerate")
        new_m = np.concatenate([masks[done], live_m[mi] | bits[xi]])
        new_p = np.concatenate([probs[done], live_p[mi] * w[mi, xi]])
        masks, inv = np.unique(new_m, return_inverse=True)
        probs = np.bincount(inv, weights=new_p, minlength=masks.size)
        left = ((masks[:, None] & bits[None]) == 0) @ d
    return masks, probs


def prob_all_in_prefixes(draft, k, order, replacement=True) -> np.ndarray:
    """``D(all k drafts in S_j)`` for the prefixes ``S_j = order[:j]``, ``j = 0..V``; shape ``[V+1]``."""
    d = np.asarray(draft, dtype=np.float64)
    order = np.asarray(order)
    if replacement:
        m = np.concatenate([[0.0], np.cumsum(d[order])])
        return np.clip(m, 0.0, 1.0) ** k
    masks, probs = drafted_set_law(d, k)
    rank = np.empty(d.size, dtype=np.int64)
    rank[order] = np.arange(d.size)
    inset = (masks[:, None] >> np.arange(d.size)[None]) & 1
    maxrank = np.where(inset == 1, rank[None], -1).max(1)  # [M], -1 for the empty set
    hist = np.bincount(maxrank + 1, weights=probs, minlength=d.size + 1)
    return np.cumsum(hist)


def _prob_all_in_subsets(d, k, replacement):
    """``D(all in S)`` for every ``S`` (bitmask index), shape ``[2^V]`` (sum over subsets)."""
    V = d.size
    if V > 20:
        raise ValueError(f"target: method='subsets' limited to V <= 20, got V={V}")
    idx = np.arange(2**V)
    inset = ((idx[:, None] >> np.arange(V)[None]) & 1).astype(bool)
    if replacement:
        return np.clip(inset @ d, 0.0, 1.0) ** k
    masks, probs = drafted_set_law(d, k)
    f = np.zeros(2**V)
    np.add.at(f, masks, probs)
    for x in range(V):  # zeta transform: f[S] = sum_{A subset S} P[A]
        has = inset[:, x]
        f[has] += f[idx[has] ^ (1 << x)]
    return f


def optimal_multidraft_acceptance(target, draft, k, replacement=True, method="prefix") -> float:
    r"""Optimal acceptance :math:`1 - \max_S [D(\text{all in } S) - p(S)]` over ``k`` drafts.

    Parameters
    ----------
    target, draft : array_like, shape (V,)
    k : int >= 1 (``<= V`` without replacement)
    replacement : bool
        i.i.d. drafts (``D(all in S) = q(S)^k``) or successive sampling without replacement.
    method : {"prefix", "subsets"}
        ``"prefix"``: maximise over the ``V + 1`` ratio-prefix sets (see the module
        docstring); ``"subsets"``: all ``2^V`` sets (``V <= 20``), the exhaustive check.

    Examples
    --------
    >>> from spectheory.verifiers.optimal_transport import optimal_multidraft_acceptance
    >>> round(optimal_multidraft_acceptance([0.5, 0.5], [0.9, 0.1], 1), 6)   # sum min
    0.6
    >>> round(optimal_multidraft_acceptance([0.5, 0.5], [0.9, 0.1], 2), 6)   # 1 - (0.81 - 0.5)
    0.69
    """
    t, d, k = check_multidraft_args(target, draft, k, replacement)
    if method == "prefix":
        order = ratio_order(t, d)
        all_in = prob_all_in_prefixes(d, k, order, replacement)
        pt = np.concatenate([[0.0], np.cumsum(t[order])])
        gap = np.max(all_in - pt)
    elif method == "subsets":
        V = t.size
        f = _prob_all_in_subsets(d, k, replacement)
        idx = np.arange(2**V)
        pt = ((idx[:, None] >> np.arange(V)[None]) & 1) @ t
        gap = np.max(f - pt)
    else:
        raise ValueError(f"method: expected 'prefix' or 'subsets', got {method!r}")
    return float(np.clip(1.0 - max(gap, 0.0), 0.0, 1.0))


def draft_tuple_law(draft, k, replacement=True):
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

    def tuple_index(self, candidates) -> np.ndarray:
        """Row of :attr:`tuples` for each candidate tuple ``[R, k]`` (``-1`` if impossible)."""
        base = self.vocab_size + 1
        w = base ** np.arange(self.k - 1, -1, -1, dtype=np.int64)
        codes = (self.tuples + 1) @ w
        lut = dict(zip(codes.tolist(), range(codes.size)))
        c = (np.asarray(candidates, dtype=np.int64) + 1) @ w
        return np.array([lut.get(int(v), -1) for v in c], dtype=np.int64)


def optimal_coupling_lp(target, draft, k, replacement=True) -> OptimalCoupling:
    r"""Solve the transport LP with HiGHS (``scipy.optimize.linprog``); small ``V`` only.

    Coupling ``pi[n, y] >= 0`` of (candidate tuple ``n``, output ``y``) with marginals ``D``
    and ``p`` maximising ``sum_n sum_{y in tuple n} pi[n, y]``. Solved in max-flow form:
    flow on the edges ``y in tuple n`` with row sums ``<= D(n)`` and column sums ``<= p(y)``;
    the unmatched masses (equal totals) are then coupled independently, which keeps the
    objective and gives exact marginals. Independent of the prefix formula (checks it).

    Examples
    --------
    >>> from spectheory.verifiers.optimal_transport import optimal_coupling_lp
    >>> round(optimal_coupling_lp([0.5, 0.5], [0.9, 0.1], 2).acceptance, 6)
    0.69
    """
    import scipy.sparse as sp
    from scipy.optimize import linprog

    t, d, k = check_multidraft_args(target, draft, k, replacement)
    V = t.size
    tup, law = draft_tuple_law(d, k, replacement)
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


def optimal_rule(coupling: OptimalCoupling, candidates, u):
    """Pure optimal verifier: emit ``y ~ pi(tuple, .) / D(tuple)`` by inverse CDF with ``u``.

    Returns ``(accepted [R] bool, token [R] int)``; accepted iff the token is a candidate.
    """
    x = np.asarray(candidates, dtype=np.int64)
    idx = coupling.tuple_index(x)
    if np.any(idx < 0):
        raise ValueError("candidates: contains a tuple of probability zero under the draft")
    token = _categorical(coupling.conditional()[idx], np.asarray(u, dtype=np.float64))
    return (x == token[:, None]).any(1), token


def optimal_verify(target, draft, k, n, rng=None, replacement=True, coupling=None):
    """Sample ``n`` rounds of the LP-optimal verifier; returns ``(accepted [n], token [n])``.

    Examples
    --------
    >>> from spectheory.verifiers.optimal_transport import optimal_verify
    >>> acc, tok = optimal_verify([0.5, 0.5], [0.9, 0.1], 2, 4000, rng=0)
    >>> bool(0.64 < acc.mean() < 0.74)
    True
    """
    t, d, k = check_multidraft_args(target, draft, k, replacement)
    n = check_int(n, "n", 1)
    cp = optimal_coupling_lp(t, d, k, replacement) if coupling is None else coupling
    rng = np.random.default_rng(rng)
    cand = sample_candidates(d, k, n, rng, replacement)
    return optimal_rule(cp, cand, rng.random(n))

r"""Optimal multi-draft acceptance as optimal transport: its value and the prefix-set theorem.

The verifier attaining it (the transport LP and its sampler) is a rule:
:mod:`spectheory.verifiers.optimal_coupling`.

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

import numpy as np
from numpy.typing import ArrayLike

from ..laws.sampling import safe_ratio
from ..verifiers.multidraft import check_multidraft_args
from ..verifiers.optimal_coupling import MAX_ENUM

__all__ = [
    "ratio_order",
    "drafted_set_law",
    "prob_all_in_prefixes",
    "optimal_multidraft_acceptance",
]


def ratio_order(target: ArrayLike, draft: ArrayLike) -> np.ndarray:
    """Tokens sorted by ``target/draft`` ascending (``draft = 0`` last, ties by index)."""
    t = np.asarray(target, dtype=np.float64)
    d = np.asarray(draft, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = safe_ratio(t, d)
    return np.argsort(ratio, kind="stable")


def drafted_set_law(draft: ArrayLike, k: int) -> tuple[np.ndarray, np.ndarray]:
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
    probs: np.ndarray = np.ones(1)
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


def prob_all_in_prefixes(draft: ArrayLike, k: int, order: ArrayLike, replacement: bool = True) -> np.ndarray:
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


def optimal_multidraft_acceptance(
    target: ArrayLike, draft: ArrayLike, k: int, replacement: bool = True, method: str = "prefix"
) -> float:
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
    >>> from spectheory.analysis.optimal_transport import optimal_multidraft_acceptance
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

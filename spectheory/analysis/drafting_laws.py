r"""Multi-draft drafting laws beyond i.i.d. and without-replacement: greedy drafting, exactly.

Notation: p = target, q = draft, ``k`` candidates at one position, ``T`` = the ``n_top`` most
probable tokens of q (stable order: larger q first, the smaller index on ties). **Greedy
drafting** (Hu et al., ICLR 2025, "top tokens plus random ones") drafts the tokens of ``T``
deterministically and ``m = k - n_top`` more at random: i.i.d. from q (``replacement=True``)
or by successive sampling from q restricted to the tokens not yet drafted
(``replacement=False``). The paper's own text was not available to this project; both
readings are provided and the default ``n_top = k - 1`` is the "top ``k - 1`` plus one random"
form the brief describes.

The optimal acceptance of any drafting law ``D`` over candidate tuples is the transport value
(:mod:`spectheory.analysis.optimal_transport`)

.. math::
    \alpha^*(D) = 1 - \max_{S \subseteq [V]} \big[ D(\text{all drafts in } S) - p(S) \big]_+ ,

computed here by enumerating the sets (:func:`tuple_law_optimal_acceptance`) and checked in
the tests against the LP (:func:`spectheory.verifiers.optimal_coupling.optimal_coupling_lp`
with ``tuple_law=``).

**Proposition (one random draft).** With ``m = 1``, ``D(all in S) = 0`` unless ``T ⊆ S``, and
then ``D(all in S) = q(S)`` (i.i.d.) or ``q(S \ T) / q(T^c)`` (without replacement), which is
additive in the tokens of ``S \ T``; the maximum over ``S ⊇ T`` takes exactly the tokens with
positive excess, so

.. math::
    \alpha^*_{\text{iid}} = 1 - \Big[q(T) - p(T) + \sum_{x \notin T} (q(x) - p(x))_+\Big]_+,
    \qquad
    \alpha^*_{\text{wo}} = 1 - \Big[\sum_{x \notin T} (\tilde q(x) - p(x))_+ - p(T)\Big]_+,

with :math:`\tilde q = q / q(T^c)` on :math:`T^c` (:func:`greedy_optimal_acceptance`).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law_pair, check_int

__all__ = [
    "top_tokens",
    "greedy_tuple_law",
    "tuple_law_optimal_acceptance",
    "greedy_optimal_acceptance",
    "acceptance_by_drafting_law",
    "DRAFTING_LAWS",
]

#: The drafting laws of :func:`acceptance_by_drafting_law` and the rule run on each.
DRAFTING_LAWS = {
    "iid": "recursive rejection (SpecInfer); GLS (Rowan et al. 2025) draws i.i.d. too",
    "without_replacement": "recursive rejection without replacement (Sequoia)",
    "greedy_iid": "top k - 1 tokens plus one i.i.d. draw (Hu et al. 2025)",
    "greedy_wo": "top k - 1 tokens plus one draw without replacement",
    "spechub": "k = 2 only: the hub argmax q and one token from q without it (Sun et al. 2024)",
}

#: Largest vocabulary for the exhaustive set enumeration.
MAX_SUBSET_V = 16


def top_tokens(draft: ArrayLike, n: int) -> np.ndarray:
    """The ``n`` most probable tokens of ``draft`` (larger first, the smaller index on ties).

    Examples
    --------
    >>> from spectheory.analysis.drafting_laws import top_tokens
    >>> top_tokens([0.2, 0.4, 0.4], 2).tolist()
    [1, 2]
    """
    d = np.asarray(draft, dtype=np.float64)
    return np.argsort(-d, kind="stable")[: check_int(n, "n", 0)]


def greedy_tuple_law(
    draft: ArrayLike, k: int, n_top: int | None = None, replacement: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    r"""Law of the candidate tuple under greedy drafting: ``(tuples [N, k], probs [N])``.

    The first ``n_top`` slots hold :func:`top_tokens` (default ``n_top = k - 1``); the other
    ``k - n_top`` are drawn i.i.d. from q or, ``replacement=False``, by successive sampling
    from q without the tokens already drafted (``-1`` pads slots once q's support is used up).

    Examples
    --------
    >>> from spectheory.analysis.drafting_laws import greedy_tuple_law
    >>> tup, pr = greedy_tuple_law([0.5, 0.3, 0.2], 2)
    >>> tup.tolist(), pr.round(3).tolist()
    ([[0, 0], [0, 1], [0, 2]], [0.5, 0.3, 0.2])
    >>> greedy_tuple_law([0.5, 0.3, 0.2], 2, replacement=False)[1].round(3).tolist()
    [0.6, 0.4]
    """
    d = np.asarray(draft, dtype=np.float64)
    if d.ndim != 1 or d.size < 1 or np.any(d < 0) or abs(d.sum() - 1.0) > 1e-9:
        raise ValueError("draft: expected a 1-d probability vector")
    k = check_int(k, "k", 1)
    n_top = k - 1 if n_top is None else check_int(n_top, "n_top", 0)
    if n_top > k or n_top > d.size:
        raise ValueError(f"n_top: must lie in [0, min(k, V)] = [0, {min(k, d.size)}], got {n_top}")
    top = tuple(int(x) for x in top_tokens(d, n_top))
    out: dict[tuple[int, ...], float] = {}

    def walk(slots: tuple[int, ...], prob: float) -> None:
        if len(slots) == k:
            out[slots] = out.get(slots, 0.0) + prob
            return
        if replacement:
            law = d
        else:
            law = d.copy()
            law[[s for s in slots if s >= 0]] = 0.0
            if law.sum() <= 0:  # support exhausted: empty slot
                walk(slots + (-1,), prob)
                return
            law = law / law.sum()
        for x in np.flatnonzero(law > 0):
            walk(slots + (int(x),), prob * float(law[x]))

    walk(top, 1.0)
    tuples = np.array(list(out), dtype=np.int64).reshape(-1, k)
    return tuples, np.array(list(out.values()))


def tuple_law_optimal_acceptance(target: ArrayLike, tuples: ArrayLike, probs: ArrayLike) -> float:
    r"""Optimal acceptance :math:`1 - \max_S [D(\text{all in } S) - p(S)]_+` of a drafting law given as tuples.

    Exhaustive over the ``2^V`` sets (``V <= 16``); independent of the LP.

    Examples
    --------
    >>> from spectheory.analysis.drafting_laws import tuple_law_optimal_acceptance
    >>> tuple_law_optimal_acceptance([0.5, 0.5], [[0], [1]], [0.9, 0.1])   # one draft: sum min
    0.6
    """
    t = np.asarray(target, dtype=np.float64)
    tup = np.asarray(tuples, dtype=np.int64)
    pr = np.asarray(probs, dtype=np.float64)
    V = t.size
    if V > MAX_SUBSET_V:
        raise ValueError(f"target: exhaustive set enumeration limited to V <= {MAX_SUBSET_V}, got {V}")
    if tup.ndim != 2 or pr.shape != (tup.shape[0],):
        raise ValueError(f"tuples, probs: expected shapes (N, k) and (N,), got {tup.shape}, {pr.shape}")
    masks = np.zeros(tup.shape[0], dtype=np.int64)
    for j in range(tup.shape[1]):
        col = tup[:, j]
        masks |= np.where(col >= 0, np.int64(1) << np.maximum(col, 0), 0)
    f = np.zeros(2**V)
    np.add.at(f, masks, pr)
    idx = np.arange(2**V)
    inset = ((idx[:, None] >> np.arange(V)[None]) & 1).astype(bool)
    for x in range(V):  # zeta transform: f[S] = D(drafted set within S)
        has = inset[:, x]
        f[has] += f[idx[has] ^ (1 << x)]
    gap = np.max(f - inset @ t)
    return float(np.clip(1.0 - max(gap, 0.0), 0.0, 1.0))


def greedy_optimal_acceptance(
    target: ArrayLike, draft: ArrayLike, k: int, n_top: int | None = None, replacement: bool = True
) -> float:
    r"""Optimal acceptance of greedy drafting.

    ``n_top = k - 1`` (one random draft): the closed form of the module docstring;
    otherwise the exhaustive value of :func:`tuple_law_optimal_acceptance` on
    :func:`greedy_tuple_law` (small ``V``).

    Examples
    --------
    >>> from spectheory.analysis.drafting_laws import greedy_optimal_acceptance
    >>> round(greedy_optimal_acceptance([1 / 3, 2 / 3], [2 / 3, 1 / 3], 2), 12)   # top token 0, then q
    0.666666666667
    """
    t, d = as_law_pair(target, draft)
    if t.ndim != 1:
        raise ValueError(f"target and draft: expected 1-d laws, got shape {t.shape}")
    k = check_int(k, "k", 1)
    n_top = k - 1 if n_top is None else n_top
    if n_top != k - 1:
        return tuple_law_optimal_acceptance(t, *greedy_tuple_law(d, k, n_top, replacement))
    top = top_tokens(d, n_top)
    rest = np.ones(t.size, dtype=bool)
    rest[top] = False
    if replacement:
        excess = d[top].sum() - t[top].sum() + np.maximum(d[rest] - t[rest], 0.0).sum()
    else:
        mass = d[rest].sum()
        if mass <= 0:  # q lives on T: the drafted set is T (plus an empty slot)
            return float(min(1.0, t[top].sum()))
        excess = np.maximum(d[rest] / mass - t[rest], 0.0).sum() - t[top].sum()
    return float(np.clip(1.0 - max(excess, 0.0), 0.0, 1.0))


def acceptance_by_drafting_law(target: ArrayLike, draft: ArrayLike, k: int) -> dict[str, dict[str, float]]:
    r"""Per drafting law of ``k`` candidates: the optimal acceptance and the shipped rules' acceptance.

    ``{law: {"optimal": alpha*, rule: acceptance, ...}}`` for the laws of :data:`DRAFTING_LAWS`:
    ``alpha*`` is the transport optimum over couplings of the candidate tuple with the target
    (prefix sets for i.i.d. and without replacement,
    :func:`~spectheory.analysis.optimal_transport.optimal_multidraft_acceptance`; the greedy laws
    by :func:`greedy_optimal_acceptance`; all LP-checked in the tests); the rules are recursive
    rejection (``"rrs"``; :func:`~spectheory.verifiers.multidraft.rrs_acceptance`) and, on
    i.i.d. drafts, GLS (``"gls"``; :func:`~spectheory.verifiers.gls.gls_acceptance`). GLS draws
    its drafts i.i.d., so its optimum is the i.i.d. one. At ``k = 2`` the table also holds
    SpecHub's sparse drafting law (``"spechub"``; :mod:`spectheory.verifiers.spechub`), its
    optimum by :func:`tuple_law_optimal_acceptance` and SpecHub's own acceptance, which equals
    it (proved there). ``k <= V`` (without replacement).

    Examples
    --------
    >>> from spectheory.analysis.drafting_laws import acceptance_by_drafting_law
    >>> tab = acceptance_by_drafting_law([1 / 3, 2 / 3], [2 / 3, 1 / 3], 2)
    >>> {law: round(v["optimal"], 6) for law, v in tab.items()}
    {'iid': 0.888889, 'without_replacement': 1.0, 'greedy_iid': 0.666667, 'greedy_wo': 1.0, 'spechub': 1.0}
    >>> round(tab["iid"]["rrs"], 6), round(tab["iid"]["gls"], 6)
    (0.777778, 0.814815)
    """
    from ..verifiers.gls import gls_acceptance
    from ..verifiers.multidraft import rrs_acceptance
    from .optimal_transport import optimal_multidraft_acceptance

    t, d = as_law_pair(target, draft)
    k = check_int(k, "k", 1)
    out = {
        "iid": {
            "optimal": optimal_multidraft_acceptance(t, d, k),
            "rrs": rrs_acceptance(t, d, k),
            "gls": float(gls_acceptance(t, d, k)),
        },
        "without_replacement": {
            "optimal": optimal_multidraft_acceptance(t, d, k, replacement=False),
            "rrs": rrs_acceptance(t, d, k, replacement=False),
        },
        "greedy_iid": {"optimal": greedy_optimal_acceptance(t, d, k)},
        "greedy_wo": {"optimal": greedy_optimal_acceptance(t, d, k, replacement=False)},
    }
    if k == 2:
        from ..verifiers.spechub import spechub_acceptance, spechub_tuple_law

        out["spechub"] = {
            "optimal": tuple_law_optimal_acceptance(t, *spechub_tuple_law(d)),
            "spechub": float(spechub_acceptance(t, d)),
        }
    return out

r"""SpecHub (Sun, Zhou, Chen & Sun, EMNLP 2024, arXiv 2411.05289): two drafts around a hub, exactly.

Notation: p = target, q = draft, ``a = argmax q`` the **hub** (the smaller index on ties),
``k = 2`` candidates at one position. Implemented from the authors' code, the repository
MasterGodzilla/Speculative_decoding_OT @ 7d592b7: the drafting law is
``EAGLE/eagle/model/cnets.py`` (``sample``, ``mode == 'spechub'``), the verifier the
``mode == 'spechub'`` branch of ``evaluate_posterior`` in ``EAGLE/eagle/model/utils.py`` (its
docstring states the transport plan; the paper's own listing was not available here).

**Drafting law** (sparse: every pair holds the hub). ``x_1 ~ q``; if ``x_1 = a`` then ``x_2 ~
q`` restricted to the tokens ``!= a`` and renormalised, else ``x_2 = a``:

.. math::
    Q(i, a) = q_i, \qquad Q(a, i) = \frac{q_a q_i}{1 - q_a} \qquad (i \ne a).

The drafted *set* is ``{a, i}`` with probability ``q_i / (1 - q_a)``: as a set this is greedy
drafting with the top token plus one draw without replacement
(:func:`~spectheory.analysis.drafting_laws.greedy_tuple_law` with ``k = 2``,
``replacement=False``), so its optimal acceptance is that law's closed form. If ``q_a = 1``
the only pair is ``(a, -1)`` (an empty second slot).

**Verifier** (a transport plan ``pi(pair, y)`` built in four stages; ``S`` are stage masses)::

    1  pairs (i, a): accept i     m1_i = min(p_i, q_i);            p'_i  = p_i - m1_i
    2  pairs (a, i): accept i     m2_i = min(p'_i, Q(a, i));       p''_i = p'_i - m2_i
    3  pairs (a, i): accept a     S3 = sum_i (Q(a, i) - m2_i);     m3 = min(p_a, S3)
    4  pairs (i, a): accept a     S4 = sum_i (q_i - m1_i);         m4 = min(p_a - m3, S4)
    otherwise emit y ~ norm(r), r_i = p''_i (i != a), r_a = p_a - m3 - m4

Stages 3 and 4 spread the hub's mass over their pairs in proportion to the pairs' left-over
mass (acceptance ratios ``m3 / S3`` and ``m4 / S4``). Each stage removes the same mass from the
pairs and from p, so the plan has marginals ``Q`` and ``p``: **lossless** (the output law is
p). A left-over pair ``(i, a)`` has ``q_i > p_i`` (so ``r_i = 0``) and ``r_a > 0`` only when
stage 4 used up every pair ``(i, a)``; likewise for ``(a, i)``; so the residual never emits a
drafted token and the acceptance ``P(Y in {x_1, x_2})`` is ``m1 + m2 + m3 + m4`` summed.

**Theorem (SpecHub is optimal for its drafting law).** With ``q~_i = q_i / (1 - q_a) = q_i +
Q(a, i)`` and ``E = sum_{i != a} (q~_i - p_i)_+``,

.. math::
    P(Y \in \{x_1, x_2\}) = 1 - (E - p_a)_+ ,

the optimal acceptance of the drafting law (greedy drafting's closed form without
replacement, :func:`~spectheory.analysis.drafting_laws.greedy_optimal_acceptance`). *Proof.*
``m1_i + m2_i = min(p_i, q_i) + min((p_i - q_i)_+, Q(a, i)) = min(p_i, q~_i)``, and ``m3 + m4 =
min(p_a, S3 + S4)`` (``m4 = 0`` when ``p_a <= S3``) with ``S3 + S4 = sum_i (q~_i - m1_i - m2_i)
= E``. As ``sum_{i != a} q~_i = 1``, ``sum_i min(p_i, q~_i) = 1 - E``, so the acceptance is ``1 -
E + min(p_a, E)``. (``q_a = 1``: the acceptance is ``p_a``, again the optimum.) So SpecHub
loses nothing to the LP on its own drafts; what it gives up (or gains) against i.i.d. drafting
is the drafting law itself: its acceptance can fall below recursive rejection on i.i.d. drafts
(tested).

The sampler (the authors' drafting and their staged verifier on hand-given uniforms) is
:mod:`spectheory.verifiers.spechub_sampling`; SpecHub as a tree round (its drafting law as a
child policy, the plan at every node of a draft tree, ``SPECHUB``) is
:mod:`spectheory.verifiers.spechub_tree`, and its literal round laws on the binary tree
:mod:`spectheory.verifiers.spechub_rounds`.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.verifiers.spechub import spechub_acceptance, spechub_output_law
>>> p, q = [F(1, 2), F(1, 3), F(1, 6)], [F(1, 6), F(1, 2), F(1, 3)]
>>> str(spechub_acceptance(p, q)), [str(v) for v in spechub_output_law(p, q)]
('5/6', ['1/2', '1/3', '1/6'])
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law_pair

__all__ = [
    "hub_token",
    "spechub_tuple_law",
    "spechub_plan",
    "spechub_acceptance",
    "spechub_output_law",
]


def _laws(target: ArrayLike, draft: ArrayLike) -> tuple[list, list, bool]:
    p, q = list(np.asarray(target, dtype=object)), list(np.asarray(draft, dtype=object))
    if len(p) != len(q) or len(p) < 1 or np.asarray(target, dtype=object).ndim != 1:
        raise ValueError(f"target and draft: expected two 1-d laws of one length, got {len(p)} and {len(q)}")
    exact = all(not isinstance(v, (float, np.floating)) for v in p + q)
    if not exact:
        t, d = as_law_pair(np.asarray(p, dtype=np.float64), np.asarray(q, dtype=np.float64))
        p, q = [float(v) for v in t], [float(v) for v in d]
    elif any(v < 0 for v in p + q) or sum(p) != 1 or sum(q) != 1:
        raise ValueError("target and draft: expected probability vectors (non-negative, summing to 1)")
    return p, q, exact


def hub_token(draft: ArrayLike) -> int:
    """The hub ``a = argmax q`` (the smaller index on ties; floats or Fractions).

    Examples
    --------
    >>> from spectheory.verifiers.spechub import hub_token
    >>> hub_token([0.25, 0.5, 0.25])
    1
    """
    q = list(np.asarray(draft, dtype=object))
    if not q:
        raise ValueError("draft: expected a non-empty law")
    return min(range(len(q)), key=lambda i: (-q[i], i))


def _stages(p: list, q: list) -> dict[str, Any]:
    """The four stages of the module docstring: pairs, their law, and every stage mass."""
    V, a = len(p), hub_token(q)
    zero = 0 * p[0]
    others = [i for i in range(V) if i != a and q[i] > 0]
    rest = sum((q[i] for i in others), zero)
    pairs: list[tuple[int, int]] = []
    law: list[Any] = []
    for i in others:
        pairs += [(i, a), (a, i)]
        law += [q[i], q[a] * q[i] / rest]
    if not others:  # q is a point mass on the hub: one pair with an empty second slot
        pairs, law = [(a, -1)], [zero + 1]
    m1 = {i: min(p[i], q[i]) for i in others}
    p1 = {i: p[i] - m1[i] for i in others}
    q_ai = {i: q[a] * q[i] / rest for i in others}
    m2 = {i: min(p1[i], q_ai[i]) for i in others}
    left_ai = {i: q_ai[i] - m2[i] for i in others}
    s3 = sum(left_ai.values(), zero) if others else zero + 1
    m3 = min(p[a], s3)
    left_ia = {i: q[i] - m1[i] for i in others}
    s4 = sum(left_ia.values(), zero)
    m4 = min(p[a] - m3, s4)
    r = [p[y] - m1.get(y, zero) - m2.get(y, zero) for y in range(V)]
    r[a] = p[a] - m3 - m4
    return dict(a=a, pairs=pairs, law=law, m1=m1, m2=m2, q_ai=q_ai, s3=s3, m3=m3, s4=s4, m4=m4, r=r)


def spechub_tuple_law(draft: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    r"""SpecHub's drafting law: ``(tuples [N, 2], probs [N])``, ``Q(i, a) = q_i``, ``Q(a, i) = q_a q_i / (1 - q_a)``.

    The shape of :func:`spectheory.verifiers.optimal_coupling.draft_tuple_law` (float64 probs),
    so ``optimal_coupling_lp(..., tuple_law=spechub_tuple_law(q))`` gives the law's LP optimum.

    Examples
    --------
    >>> from spectheory.verifiers.spechub import spechub_tuple_law
    >>> tup, pr = spechub_tuple_law([0.5, 0.3, 0.2])
    >>> tup.tolist(), pr.round(3).tolist()
    ([[1, 0], [0, 1], [2, 0], [0, 2]], [0.3, 0.3, 0.2, 0.2])
    """
    _, q, _ = _laws(draft, draft)
    st = _stages(q, q)
    return np.array(st["pairs"], dtype=np.int64).reshape(-1, 2), np.array([float(v) for v in st["law"]])


def spechub_plan(target: ArrayLike, draft: ArrayLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""SpecHub's transport plan ``pi[n, y]`` over its pairs (module docstring), exactly.

    Parameters
    ----------
    target, draft : array_like, shape (V,)
        Laws (floats, or ``fractions.Fraction`` for exact values).

    Returns
    -------
    tuples : ndarray of int64, shape (N, 2)
        The drafted pairs (``-1``: an empty slot, only when ``q`` is a point mass).
    tuple_law : ndarray, shape (N,)
        ``Q(pair)``; equals ``plan.sum(1)``.
    plan : ndarray, shape (N, V)
        ``pi(pair, y)``; object arrays of Fractions for exact laws, float64 otherwise.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.spechub import spechub_plan
    >>> tup, law, plan = spechub_plan([F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)])
    >>> tup.tolist(), [str(v) for v in law], [[str(v) for v in row] for row in plan]
    ([[1, 0], [0, 1]], ['1/3', '2/3'], [['0', '1/3'], ['1/3', '1/3']])
    """
    p, q, exact = _laws(target, draft)
    st = _stages(p, q)
    a, V = st["a"], len(p)
    zero = 0 * p[0]
    N = len(st["pairs"])
    plan = np.empty((N, V), dtype=object)
    plan[:] = zero
    left = list(st["law"])

    def give(n: int, y: int, mass: Any) -> None:  # pair n's mass that goes to token y
        plan[n, y] += mass
        left[n] -= mass

    for n, (x1, x2) in enumerate(st["pairs"]):
        # (i, a): stage 1, then the hub at stage 4; (a, i) or (a, -1): stage 2, then stage 3
        own, m, hub = (x1, "m1", "4") if x2 == a else (x2, "m2", "3")
        if own >= 0:
            give(n, own, st[m][own])
        if st["s" + hub] != 0:
            give(n, a, left[n] * st["m" + hub] / st["s" + hub])
    z = sum(st["r"], zero)
    if z != 0:
        for n in range(N):
            for y in range(V):
                plan[n, y] += left[n] * st["r"][y] / z
    tup = np.array(st["pairs"], dtype=np.int64).reshape(-1, 2)
    law = np.array(st["law"], dtype=object)
    return (tup, law, plan) if exact else (tup, law.astype(np.float64), plan.astype(np.float64))


def spechub_acceptance(target: ArrayLike, draft: ArrayLike) -> Any:
    r"""``P(Y in {x_1, x_2})`` under SpecHub: ``sum_n sum_{y in pair n} pi(n, y)`` (:func:`spechub_plan`).

    A Fraction for exact laws, a float otherwise; at most the LP optimum of
    :func:`spechub_tuple_law` (tested).

    Examples
    --------
    >>> from spectheory.verifiers.spechub import spechub_acceptance
    >>> round(spechub_acceptance([0.5, 0.3, 0.2], [0.2, 0.5, 0.3]), 6)   # 1 - (E - p_a)_+, E = 0.4
    0.9
    """
    tup, _, plan = spechub_plan(target, draft)
    rows = np.arange(tup.shape[0])
    out = (
        plan[rows, tup[:, 0]].sum() + np.where(tup[:, 1] >= 0, plan[rows, np.maximum(tup[:, 1], 0)], 0).sum()
    )
    return out if plan.dtype == object else float(out)


def spechub_output_law(target: ArrayLike, draft: ArrayLike) -> np.ndarray:
    """Exact law of the emitted token (the plan's column sums; equals ``target``: lossless).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.spechub import spechub_output_law
    >>> t = np.array([0.2, 0.5, 0.3])
    >>> np.testing.assert_allclose(spechub_output_law(t, [0.6, 0.1, 0.3]), t)
    """
    return spechub_plan(target, draft)[2].sum(0)

r"""Greedy multi-path block verification (GBV; Thomas & Pal 2026, arXiv 2602.16961): the rule's steps.

Pure functions on per-path data, exact in the number type of the laws (Fractions: exact); the
tree verifier that runs them on ``DraftTree.paths(K, L)`` and the algorithm's description and
losslessness proof are in :mod:`spectheory.trees.gbv_tree`. :func:`gbv_round_law` enumerates one
round literally (the shape of :func:`spectheory.verifiers.round_laws.proposal_round_law`);
:class:`GBVPaths` is GBV on ``K`` paths as a rule with that round law (:data:`GBV_K2`, the
claimed-vs-exact table's ``"gbv_k2"``).

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.verifiers.gbv import GBV_K2, gbv_round_law
>>> from spectheory.verifiers.round_laws import mean_accepted
>>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
>>> [mean_accepted(gbv_round_law(p, q, 2, K, 2)) for K in (1, 2)]   # K = 1: block verification
[Fraction(11, 9), Fraction(131, 81)]
>>> GBV_K2.name, GBV_K2.round_law(p, q, 2, 2) == gbv_round_law(p, q, 2, 2, 2)
('gbv_k2', True)
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from .._guards import check_int
from .round_law_rule import KDraftsRule

__all__ = ["gbv_select", "gbv_skew", "gbv_block_law", "gbv_core", "gbv_round_law", "GBVPaths", "GBV_K2"]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


def _keys(p: Sequence[Any], q: Sequence[Any]) -> list[tuple[Any, int]]:
    """Rank keys ``(p(x)/q(x), x)`` of the tokens with ``q(x) > 0``."""
    return [(p[x] / q[x], x) for x in range(len(q)) if q[x] > 0]


def gbv_select(paths: Sequence[Sequence[int]], laws: Callable[[int, int], tuple[Any, Any]]) -> int:
    """Index of the selected path (step 1): the lexicographic maximum of the drafted paths.

    ``paths[m]`` is path ``m``'s tokens (all of one length); ``laws(m, t)`` returns
    ``(p, q)`` at path ``m``'s prefix of length ``t``. Identical paths: the smallest index.
    """
    cand = list(range(len(paths)))
    for t in range(len(paths[0])):
        p, q = laws(cand[0], t)
        best = max((p[paths[m][t]] / q[paths[m][t]], paths[m][t]) for m in cand)[1]
        cand = [m for m in cand if paths[m][t] == best]
    return cand[0]


def gbv_skew(p: Sequence[Any], q: Sequence[Any], A: Any, J: Any, K: int) -> list[Any]:
    r"""The skewed draft law ``q~(. | x_{1:t})`` of step 2 (exact in the number type of the laws)."""
    below: dict[int, Any] = {}
    acc = 0 * J
    for _, x in sorted(_keys(p, q)):
        below[x] = acc
        acc = acc + q[x]
    den = (A + J) ** K - A**K
    out = [0 * J] * len(q)
    for x, b in below.items():
        out[x] = ((A + J * (b + q[x])) ** K - (A + J * b) ** K) / den
    return out


def _below(p: Sequence[Any], q: Sequence[Any], x: int) -> Any:
    kx = (p[x] / q[x], x)
    return sum((q[y] for y in range(len(q)) if q[y] > 0 and (p[y] / q[y], y) < kx), 0 * q[x])


def gbv_block_law(
    path: Sequence[int], P: Sequence[Sequence[Any]], Qs: Sequence[Sequence[Any]]
) -> tuple[list[Any], list[Any], list[list[Any]]]:
    r"""Block verification of ``path`` (``k`` tokens) against targets ``P[0..k]`` and drafts ``Qs[0..k-1]``.

    Returns ``(h [k], tau_law [k + 1], finals [k + 1])``: the stopping probabilities, the law of
    ``tau`` and the law emitted after ``tau`` tokens (residual, or ``P[k]`` at ``tau = k``).
    """
    k = len(path)
    w = [1 + 0 * P[0][0]]
    for t in range(1, k + 1):
        x = path[t - 1]
        r = w[-1] * P[t - 1][x] / Qs[t - 1][x]
        w.append(r if r < 1 else 1 + 0 * r)
    h, finals = [], []
    for t in range(k):
        ex = [max(w[t] * a - b, 0 * a) for a, b in zip(P[t], Qs[t])]
        Z = sum(ex, 0 * w[t])
        finals.append([e / Z for e in ex] if Z > 0 else list(P[t]))
        if t >= 1:
            den = Z + 1 - w[t]
            h.append(Z / den if den > 0 else 1 + 0 * Z)
    h.append(w[k])
    finals.append(list(P[k]))
    tau = []
    for j in range(k + 1):
        pr = h[j - 1] if j else 1 + 0 * w[0]
        for i in range(j + 1, k + 1):
            pr = pr * (1 - h[i - 1])
        tau.append(pr)
    return h, tau, finals


def gbv_core(
    paths: Sequence[Sequence[int]], laws: Callable[[int, int], tuple[Any, Any]], K: int
) -> tuple[int, list[Any], list[Any], list[list[Any]]]:
    """Select, skew, block-verify: ``(chosen, h, tau_law, finals)``."""
    m = gbv_select(paths, laws)
    path = list(paths[m])
    k = len(path)
    P, Qs = [], []
    A, J = None, None
    for t in range(k + 1):
        p, q = laws(m, t)
        P.append(list(p))
        if t == k:
            break
        if A is None:
            A, J = 0 * q[path[0]], 1 + 0 * q[path[0]]
        Qs.append(gbv_skew(p, q, A, J, K))
        x = path[t]
        A, J = A + J * _below(p, q, x), J * q[x]
    h, tau, finals = gbv_block_law(path, P, Qs)
    return m, h, tau, finals


def gbv_round_law(
    target_fn: LawFn, draft_fn: LawFn, vocab_size: int, K: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of the tokens one GBV round emits, ``{emitted: probability}``, by enumeration.

    Every ``K``-tuple of drafted paths (each ``x_{1:gamma} ~ q`` autoregressively after
    ``prefix``), every stopping point and every emitted token; the same shape as
    :func:`spectheory.verifiers.round_laws.proposal_round_law`, so
    :func:`~spectheory.verifiers.round_laws.generation_law` and
    :func:`~spectheory.verifiers.round_laws.mean_accepted` take it. ``target_fn(ctx)`` /
    ``draft_fn(ctx)`` give the next-token laws after a context tuple (Fractions: exact).
    """
    V = check_int(vocab_size, "vocab_size", 1)
    K = check_int(K, "K", 1)
    g = check_int(gamma, "gamma", 1)
    seqs: list[tuple[tuple[int, ...], Any]] = []

    def walk(s: tuple[int, ...], pr: Any) -> None:
        if len(s) == g:
            seqs.append((s, pr))
            return
        q = draft_fn(prefix + s)
        for y in range(V):
            if q[y] > 0:
                walk(s + (y,), pr * q[y])

    walk((), 1)
    out: dict[tuple[int, ...], Any] = {}
    for combo in itertools.product(seqs, repeat=K):
        paths = [c[0] for c in combo]
        pr = 1
        for c in combo:
            pr = pr * c[1]

        def laws(m: int, t: int, paths: list = paths) -> tuple[Any, Any]:
            ctx = prefix + paths[m][:t]
            return target_fn(ctx), draft_fn(ctx)

        chosen, _, tau, finals = gbv_core(paths, laws, K)
        for j in range(g + 1):
            if tau[j] == 0:
                continue
            for y in range(V):
                if finals[j][y] != 0:
                    e = tuple(paths[chosen][:j]) + (y,)
                    out[e] = out.get(e, 0) + pr * tau[j] * finals[j][y]
    return out


class GBVPaths(KDraftsRule):
    r"""GBV on ``K`` i.i.d. draft paths of ``gamma`` tokens as a rule with a round law
    (:func:`gbv_round_law`); named ``"gbv_k{K}"``, lossless (:mod:`spectheory.trees.gbv_tree`).

    Not a single-path Verifier: its engines' round is ``TreeRound(DraftTree.paths(K, gamma), GBV)``
    (the module docstring has an example).
    """

    stem = "gbv_k"
    law = staticmethod(gbv_round_law)


#: GBV on two paths (the claimed-vs-exact table's ``"gbv_k2"``).
GBV_K2 = GBVPaths(2)

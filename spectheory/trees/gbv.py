r"""Greedy multi-path block verification (GBV; Thomas & Pal 2026, arXiv 2602.16961) on ``K`` paths.

Notation: p = target, q = draft. A round drafts ``K`` paths i.i.d. from the draft (the tree
:meth:`DraftTree.paths(K, L) <spectheory.trees.DraftTree.paths>`). The algorithm is the
authors' reference implementation (``verifier.py`` of the repository whose README reads
"reference implementation of greedy multi-path block verification": ``TreeVerifier.gbv_verify``
and ``TreeVerifier.compute_skew``); the paper's own listing was not available here, and its
reviews describe the same decomposition (randomised path selection inducing a "skewed draft",
then single-path block verification). Steps:

1. **Rank and select.** At a context ``c`` order the tokens by ``(p(x | c) / q(x | c), x)``
   ascending (``argsort`` of the ratio, stable: the smaller index ranks lower on ties); order the
   paths lexicographically by these keys. The selected path ``X*`` is the largest drafted one:
   from the root, step to the drafted child of largest key (paths that agree so far share
   their context, so the keys compare).
2. **Skewed draft.** ``X*`` is the maximum of ``K`` i.i.d. paths, so its law is autoregressive
   with next-token law (``compute_skew``)

   .. math::
      \tilde q(y \mid x_{1:t}) = \frac{(A + J\,(b(y) + q(y)))^K - (A + J\,b(y))^K}{(A + J)^K - A^K},

   where ``J = q(x_{1:t})`` is the prefix's draft probability, ``A`` the draft probability of
   the length-``t`` prefixes that rank below ``x_{1:t}``, and ``b(y)`` the draft mass of the
   tokens ranking below ``y`` at ``x_{1:t}``; along the path ``A <- A + J b(x_{t+1})``,
   ``J <- J q(x_{t+1})`` (root: ``A = 0``, ``J = 1``).
3. **Block verification** (Sun et al. 2024, Algorithm 2) of ``X*`` with ``q`` replaced by
   ``q~``: weights ``w_0 = 1``, ``w_t = min(1, w_{t-1} p(X*_t)/q~(X*_t))``; stopping
   probabilities ``h_t = Z_t / (Z_t + 1 - w_t)`` with ``Z_t = sum_y (w_t p_{t+1} - q~_{t+1})_+``
   (``t < k``) and ``h_k = w_k``; ``tau = max{t : eta_t = 1}`` (0 if none); emit ``X*_{1:tau}``
   then the bonus ``p_{k+1}`` (``tau = k``) or one token of ``norm((w_tau p - q~)_+)``.

**Proposition (lossless).** ``X*`` has exactly the autoregressive law ``q~`` (step 2 is the law
of the maximum of ``K`` i.i.d. draws under a total order: ``P(max <= x) = P(X <= x)^K``, and
its conditionals given the prefix are the displayed ratio), ``q~`` at a context depends only on
the laws at the path's own prefixes, and block verification is lossless for every drafting law
it is given exactly (Sun et al., Theorem 1). So every round emits tokens with the target's law.
With ``K = 1``, ``q~ = q`` and GBV is block verification. The exact check (Fractions, on Sun et
al.'s example and random chains) is in ``tests/trees/test_gbv.py``; docs/sequence_rules.md.

The verifier is defined on ``K``-path trees only (like
:data:`~spectheory.trees.batch_verifier.BATCH_TREE`), so it is not in the tree registry that the
loops over every tree verifier read; use ``TreeRound(DraftTree.paths(K, L), GBV)``
(``chain.protocol``, ``st.simulate``, ``spectheory.testing.check_round``, the decoder's
``tree_generate``). Its exact values come from the enumeration engine
(:mod:`spectheory.trees.enumerate`); :func:`gbv_round_law` enumerates one round literally.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.trees.gbv import gbv_round_law
>>> from spectheory.verifiers.round_laws import mean_accepted
>>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
>>> [mean_accepted(gbv_round_law(p, q, 2, K, 2)) for K in (1, 2)]   # K = 1: block verification
[Fraction(11, 9), Fraction(131, 81)]
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .._guards import check_int
from ..verifiers.children import IID
from ..verifiers.multidraft import _categorical
from ..verifiers.tree_base import TreeVerifier
from .batch_verifier import _path_nodes
from .draft_tree import DraftTree

__all__ = ["GreedyBlockTree", "GBV", "gbv_select", "gbv_skew", "gbv_block_law", "gbv_round_law"]

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


def _gbv_core(
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


class GreedyBlockTree(TreeVerifier):
    """GBV on ``DraftTree.paths(K, L)`` (module docstring): not node-local, not registered.

    ``verify`` / ``outcome_law`` work on every realisation of a ``K``-path tree (the paths
    truncated at the horizon: ``k <= L`` tokens each); float and ``fractions.Fraction`` laws.
    Uniforms: the test of ``tau >= t`` reads ``u_accept`` at the selected path's node of depth
    ``t`` (accepted iff ``u < h_t``); the emitted token is the inverse CDF at ``u_final``.
    """

    node_local = False

    def __init__(self, name: str = "gbv") -> None:
        super().__init__(name, IID())

    def _rows(
        self, tree: DraftTree, x: np.ndarray, t: np.ndarray, d: np.ndarray
    ) -> Iterator[tuple[Any, ...]]:
        nodes = _path_nodes(tree)
        K = nodes.shape[0]
        for r in range(x.shape[0]):
            k = int((x[r, nodes[0]] >= 0).sum())
            paths = [[int(v) for v in x[r, nodes[m, :k]]] for m in range(K)]

            def laws(m: int, s: int, r: int = r) -> tuple[Any, Any]:
                u = 0 if s == 0 else int(nodes[m, s - 1])
                return list(t[r, u]), list(d[r, u])

            chosen, h, tau, finals = _gbv_core(paths, laws, K)
            at = [0] + [int(v) for v in nodes[chosen, :k]]
            yield r, k, at, h, tau, finals

    def _verify(self, tree, x, t, d, ua, uf):
        R, N, V = t.shape
        node = np.zeros(R, dtype=np.int64)
        law = np.zeros((R, V))
        residual = np.zeros(R, dtype=bool)
        for r, k, at, h, _, finals in self._rows(tree, x, t, d):
            tau = 0
            for s in range(1, k + 1):
                if ua[r, at[s]] < h[s - 1]:
                    tau = s
            node[r] = at[tau]
            law[r] = finals[tau]
            residual[r] = tau < k
        return node, _categorical(law, uf), residual

    def _outcome_law(self, tree, x, t, d):
        accept = np.zeros(x.shape, dtype=t.dtype)
        if t.dtype == object:
            accept[:] = 0
        final = t.copy()
        for r, k, at, _, tau, finals in self._rows(tree, x, t, d):
            for j in range(k + 1):
                accept[r, at[j]] = tau[j]
                final[r, at[j]] = finals[j]
        return accept, final


#: The GBV verifier: ``TreeRound(DraftTree.paths(K, L), GBV)``.
GBV = GreedyBlockTree()


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

        chosen, _, tau, finals = _gbv_core(paths, laws, K)
        for j in range(g + 1):
            if tau[j] == 0:
                continue
            for y in range(V):
                if finals[j][y] != 0:
                    e = tuple(paths[chosen][:j]) + (y,)
                    out[e] = out.get(e, 0) + pr * tau[j] * finals[j][y]
    return out

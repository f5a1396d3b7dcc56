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
:data:`~spectheory.kinds.batch.verifier.BATCH_TREE`), so it is not in the tree registry that the
loops over every tree verifier read; use ``TreeRound(DraftTree.paths(K, L), GBV)``
(``chain.protocol``, ``st.simulate``, ``spectheory.testing.check_round``, the decoder's
``tree_generate``). Its exact values come from the enumeration engine
(:mod:`spectheory.kinds.tree.enumerate`); the rule's steps are the pure functions of
:mod:`spectheory.verifiers.gbv`, whose :func:`~spectheory.verifiers.gbv.gbv_round_law` enumerates
one round literally.

Examples
--------
On one path GBV is block verification; two paths take fewer target calls (the one-round law on
Sun et al.'s example is the example of :mod:`spectheory.verifiers.gbv`):

>>> import numpy as np, spectheory as st
>>> from spectheory.trees import DraftTree, TreeRound
>>> from spectheory.trees.gbv_tree import GBV
>>> chain = st.DecodingChain.random(3, rng=0)
>>> one = chain.protocol(8, TreeRound(DraftTree.paths(1, 3), GBV))
>>> two = chain.protocol(8, TreeRound(DraftTree.paths(2, 3), GBV))
>>> blk = chain.protocol(8, 3, verifier="block")
>>> bool(np.isclose(one.target_calls, blk.target_calls)), bool(two.target_calls < one.target_calls)
(True, True)
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ..children import IID
from ..kinds.batch.verifier import _path_nodes
from ..kinds.tree.draft_tree import DraftTree
from ..verifiers.gbv import gbv_core, gbv_round_law
from ..verifiers.multidraft import _categorical
from ..verifiers.tree_base import TreeVerifier

__all__ = ["GreedyBlockTree", "GBV", "gbv_round_law"]


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

            chosen, h, tau, finals = gbv_core(paths, laws, K)
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

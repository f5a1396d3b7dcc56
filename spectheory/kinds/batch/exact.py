r"""Batch speculative decoding with ``M`` draft sequences, both readings, exactly.

Notation: p = target, q = draft. A round drafts ``M`` sequences i.i.d. from the draft,
``k = min(gamma, T - n)`` tokens each (``gamma=None``: to the end of the horizon): a tree
of ``M`` paths (:meth:`DraftTree.paths`). Two verification readings:

- **first-token** (:mod:`spectheory.analysis.batch_chain`, "derived, consistent with Yin et
  al.'s Theorem 3"): recursive rejection (with replacement) over the ``M`` first tokens,
  then plain token checks along the one accepted sequence. It is ``tree_rrs`` on the
  ``M``-path tree (tested).
- **tree** (this module): recursive rejection at *every* position over all the drafts that
  still agree with the accepted prefix. If ``c`` drafts agree at a position, their next
  tokens are ``c`` i.i.d. draws from ``q(. | prefix)`` whatever happened before (the
  verifier only looked at earlier positions), so recursive rejection over them emits
  exactly ``p(. | prefix)``: the reading is lossless. The accepted token ``x`` sits at some
  slot ``i`` and no earlier slot holds ``x`` (a rejected ``x`` has zero residual mass
  afterwards), so the number of drafts agreeing after the position is
  ``1 + Binomial(c - i, q(x))``.

The exact engine runs the round on the extended state ``(s, c)``: with ``A_i(s, x) =
reach_i min(r_i, q)`` (SpecInfer's slot laws), the accepted mass moves as

.. math:: m'(s', c') = \sum_{s, x: s' = \mathrm{next}(s, x)} \sum_c m(s, c) \sum_{i \le c}
          A_i(s, x)\, \mathrm{Bin}(c' - 1;\, c - i,\, q(s, x)),

and a correction is emitted with mass ``reach_{c+1} r_{c+1}``. As ``M -> infinity`` every
accepted token has infinitely many agreeing drafts, the emitted token at every checked
position is ``p`` and it is a rejection exactly when it lies outside the draft's support:
with ``gamma=None`` and ``bonus=False`` the limit is
:math:`\sum_n E_{p}[\,p_n(\{x : q_n(x) = 0\})\,]` (zero when the draft covers every token).
The limit is discontinuous in the draft: a token with draft mass ``1e-4`` counts as
proposable, but needs ``M >> 1e4`` drafts before the finite-``M`` values approach it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..._guards import check_int
from ...children import IID
from ...exact.result import ProtocolResult

if TYPE_CHECKING:
    from ..._protocols import ChainLike

__all__ = [
    "BatchTreeResult",
    "batch_tree_expected",
    "batch_tree_limit_mass",
    "batch_readings",
]


@dataclass(frozen=True, repr=False)
class BatchTreeResult(ProtocolResult):
    """Exact expectations of batch decoding, tree reading.

    A :class:`~spectheory.exact.ProtocolResult` (the shared result vocabulary): ``gamma`` is
    the drafts' length (``horizon`` for ``gamma=None``), ``round_drafts[n]`` is ``M * k`` for a
    round at ``n`` (``inf`` for ``M = inf``, so ``draft_tokens`` is ``inf``),
    ``rejection_by_position[n]`` the expected rejections whose correction sits at position
    ``n``, ``accepted_counts[j]`` the expected rounds that accepted ``j`` tokens.

    Attributes
    ----------
    M : int or float
        The number of draft sequences (``numpy.inf`` for the limit).
    """

    M: float = 1


def _check_M(M):
    if isinstance(M, float) and np.isinf(M) and M > 0:
        return np.inf
    return check_int(M, "M", 1)


def _tables(target, draft, M):
    """``G [S, V, M+1, M+1]`` (accepted moves) and ``Rc [M+1, S, V]`` (corrections with c drafts)."""
    S, V = target.shape
    if np.isinf(M):
        cover = draft > 0
        G = np.where(cover, target, 0.0)[:, :, None, None]
        return G, np.where(cover, 0.0, target)[None]
    A, _ = IID().node_laws(target, draft, M)  # [M, S, V], slot i = 1..M
    Rc = np.zeros((M + 1, S, V))
    r, reach = target.copy(), np.ones(S)
    for c in range(1, M + 1):
        a = np.minimum(r, draft)
        reach = reach * np.clip(1.0 - a.sum(-1), 0.0, 1.0)
        ex = np.maximum(r - draft, 0.0)
        mass = ex.sum(-1, keepdims=True)
        r = np.where(mass > 1e-15, ex / np.where(mass > 1e-15, mass, 1.0), r)
        Rc[c] = reach[:, None] * r
    G = np.zeros((S, V, M + 1, M + 1))
    cp = np.arange(1, M + 1)
    from scipy.stats import binom  # scipy.stats is slow to import: only here

    # P[s, x, n, c'] = Bin(c' - 1; n, q(s, x)) for the n = c - i drafts after the accepted slot
    P = binom.pmf(cp[None, None, None, :] - 1, np.arange(M)[None, None, :, None], draft[:, :, None, None])
    for c in range(1, M + 1):
        G[:, :, c, 1:] = np.einsum("iSV,SVic->SVc", A[:c], P[:, :, c - np.arange(1, c + 1)])
    return G, Rc


def _gls_tables(target, draft, M):
    """The same tables for Gumbel-max list sampling (:func:`spectheory.verifiers.gls.gls_list_law`)."""
    from ...verifiers.gls import gls_list_law

    S, V = target.shape
    G = np.zeros((S, V, M + 1, M + 1))
    Rc = np.zeros((M + 1, S, V))
    for s in range(S):
        for c in range(1, M + 1):
            law = gls_list_law(target[s], draft[s], c)  # [V, c + 1]
            G[s, :, c, 1 : c + 1] = law[:, 1:]
            Rc[c, s] = law[:, 0]
    return G, Rc


#: Per-position couplings of the agreeing drafts: recursive rejection (the tree reading) and GLS.
_COUPLINGS = {"rrs": _tables, "gls": _gls_tables}


def batch_tree_expected(
    chain: ChainLike,
    horizon: int,
    M: float,
    gamma: int | None = None,
    bonus: bool = True,
    coupling: str = "rrs",
) -> BatchTreeResult:
    r"""Exact expectations of batch decoding with ``M`` drafts, tree reading.

    ``M = numpy.inf`` gives the limit. Defaults (``gamma=None``, ``bonus=True``) match
    :func:`spectheory.analysis.batch_chain.batch_expected_rejections`. ``coupling="gls"``
    replaces recursive rejection at each position by Gumbel-max list sampling over the
    agreeing drafts (Rowan et al. 2025, Algorithm 2; :mod:`spectheory.verifiers.gls`): the
    same state ``(s, c)``, with ``G[s, x, c, n] = P(Y = x, n drafts equal x)``.

    Examples
    --------
    >>> import numpy as np, spectheory as st
    >>> from spectheory.kinds.batch.exact import batch_tree_expected
    >>> from spectheory.analysis import batch_expected_rejections
    >>> chain = st.DecodingChain.random(3, rng=0)
    >>> tree, first = batch_tree_expected(chain, 6, 4), batch_expected_rejections(chain, 6, 4)
    >>> bool(tree.rejections <= first.total), round(batch_tree_expected(chain, 6, np.inf).rejections, 12)
    (True, 0.0)
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("batch_tree_expected")
    M = _check_M(M)
    if coupling not in _COUPLINGS:
        raise ValueError(f"coupling: expected one of {sorted(_COUPLINGS)}, got {coupling!r}")
    if np.isinf(M) and _COUPLINGS[coupling] is not _tables:
        raise ValueError(f"M: the {coupling!r} coupling needs a finite number of drafts")
    build = _COUPLINGS[coupling]
    G_ = T if gamma is None else check_int(gamma, "gamma", 1)
    S = chain.n_states
    C = 1 if np.isinf(M) else int(M) + 1
    c0 = 0 if np.isinf(M) else int(M)
    ns = chain.next_state
    starts = np.zeros((T + 1, S))
    starts[0] = chain.initial
    prof = np.zeros(T)
    counts = np.zeros(G_ + 1)  # expected rounds that accepted j tokens
    cache: dict = {}

    def tables(n):
        key = 0 if chain.is_homogeneous else n  # one table per kernel, kept for all rounds
        if key not in cache:
            target, draft = chain.kernels(n)
            cache[key] = build(target, draft, M)
        return cache[key]

    def push(vec_sv, n_dest):
        """Add ``vec [S, V]`` (mass on (state, emitted token)) to ``starts[n_dest]``."""
        np.add.at(starts[n_dest], ns.ravel(), vec_sv.ravel())

    for n0 in range(T):
        m0 = starts[n0]
        if not np.any(m0):
            continue
        k = min(G_, T - n0)
        m = np.zeros((S, C))
        m[:, c0] = m0
        for d in range(k):
            n = n0 + d
            G, Rc = tables(n)
            rej = np.einsum("sc,csv->sv", m, Rc[:C] if C > 1 else Rc)
            prof[n] += rej.sum()
            counts[d] += rej.sum()
            push(rej, n + 1)
            moved = np.einsum("sc,svcd->svd", m, G)  # [S, V, C]
            m = np.zeros((S, C))
            np.add.at(m, ns.ravel(), moved.reshape(S * chain.vocab_size, C))
        end = m.sum(1)
        counts[k] += end.sum()
        if n0 + k < T:
            if bonus:
                push(end[:, None] * chain.kernels(n0 + k)[0], n0 + k + 1)
            else:
                starts[n0 + k] += end
    k_round = np.minimum(G_, T - np.arange(T))
    return BatchTreeResult(
        horizon=T,
        gamma=G_,
        bonus=bool(bonus),
        round_starts=starts[:T].copy(),
        rejection_by_position=prof,
        accepted_counts=counts,
        # every position emits one token: accepted, a correction or a bonus token
        bonus_tokens=float(T - np.arange(G_ + 1) @ counts - prof.sum()) if bonus else 0.0,
        round_drafts=np.full(T, np.inf) if np.isinf(M) else M * k_round,
        level_widths=np.concatenate([[1.0], np.full(G_, float(M))]),
        M=M,
    )


def batch_tree_limit_mass(chain: ChainLike, horizon: int) -> float:
    r""":math:`\sum_{n<T} E_{p}[p_n(\{x: q_n(x) = 0\})]`: the target mass the draft cannot
    propose, summed over target-distributed prefixes (the tree reading's ``M -> inf``
    limit with ``gamma=None``, ``bonus=False``)."""
    T = chain.check_horizon(horizon)
    marg = chain.state_marginals(T)
    out = 0.0
    for n in range(T):
        t, d = chain.kernels(n)
        out += float(marg[n] @ np.where(d > 0, 0.0, t).sum(-1))
    return out


def batch_readings(
    chain: ChainLike, horizon: int, Ms: Sequence[int], gamma: int | None = None, bonus: bool = True
) -> dict:
    """Both readings' exact expected rejections for each ``M`` in ``Ms`` (``inf`` allowed).

    Returns ``{"M": [...], "first_token": [...], "tree": [...]}``.
    """
    from ...analysis.batch_chain import batch_expected_rejections

    first = [batch_expected_rejections(chain, horizon, M, gamma=gamma, bonus=bonus).total for M in Ms]
    tree = [batch_tree_expected(chain, horizon, M, gamma=gamma, bonus=bonus).rejections for M in Ms]
    return {"M": list(Ms), "first_token": first, "tree": tree}

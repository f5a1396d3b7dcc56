r"""Which parallel draft head to train: cross-entropy (the marginal) or acceptance (an LP).

A parallel head's law at depth k may depend only on the round's start ``s``
(:class:`~spectheory.kinds.block.BlockDrafter`). Trained by cross-entropy on the target's
samples it learns the target's k-step marginal :math:`m_k(\cdot \mid s) = \sum_\sigma
w_k(\sigma) p(\cdot \mid \sigma)`, where :math:`w_k` is the law of the state before depth k.
But what is accepted at depth k, given that depths :math:`< k` were accepted, is

.. math:: \alpha_k(Q) = \sum_\sigma \tilde w_k(\sigma) \sum_x \min\big(p(x \mid \sigma), Q(x)\big),

with :math:`\tilde w_k` the law of the state at depth k *given acceptance so far*. This is
concave and piecewise linear in Q, and maximising it over the simplex is a linear program:
:math:`\max \sum_{\sigma, x} \tilde w_k(\sigma) t_{\sigma x}` subject to
:math:`t_{\sigma x} \le p(x \mid \sigma)`, :math:`t_{\sigma x} \le Q_x`, :math:`\sum_x Q_x = 1`.
Its optimum is mode-seeking (it puts mass where the conditionals agree), unlike the marginal.
:func:`acceptance_lp_drafter` solves it depth by depth (greedy: each depth's LP takes the
earlier depths as fixed, so each depth's conditional acceptance is the best possible *given
the earlier depths*, not a joint optimum of tokens per call).

Examples
--------
>>> import spectheory as st
>>> from spectheory.kinds.block import BlockDrafter
>>> chain = st.DecodingChain.random(3, concentration=0.4, rng=2)
>>> lp, ce = acceptance_lp_drafter(chain, 3), BlockDrafter.marginals(chain, 3)
>>> a_lp = block_long_run(chain, lp, 3).conditional_acceptance
>>> a_ce = block_long_run(chain, ce, 3).conditional_acceptance
>>> bool(a_lp[1] >= a_ce[1] - 1e-9)  # same depth-1 law: the LP's depth 2 is at least as good
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import linprog

from .._guards import check_int
from ..chain.classes import require_one_closed_class, stationary_distribution
from ..kinds.block import BlockDrafter, block_drafter_transition

__all__ = ["BlockLongRun", "block_long_run", "acceptance_lp", "acceptance_lp_drafter"]


@dataclass(frozen=True)
class BlockLongRun:
    """Long-run behaviour of fixed-length block rounds: tokens per call, the stationary law of
    round starts, and the conditional acceptance at each depth (``[k]``, pooled over starts)."""

    tokens_per_call: float
    round_starts: np.ndarray
    conditional_acceptance: np.ndarray


def block_long_run(chain: Any, drafter: BlockDrafter, k: int) -> BlockLongRun:
    """Exact long-run tokens per call of block rounds of ``k`` drafts (bonus on), the round-start
    law, and P(depth i accepted | depths < i accepted) under it."""
    k = check_int(k, "k", 1)
    Q = block_drafter_transition(chain, drafter)(0, k, True)
    kernel = Q.sum(1)
    require_one_closed_class(kernel, "block_long_run")
    pi = stationary_distribution(kernel)
    counts = np.einsum("s,sjt->j", pi, Q)  # law of the accepted count
    tokens = float(counts @ (np.arange(k + 1) + 1.0))
    survive = counts[::-1].cumsum()[::-1]  # P(count >= j), j = 0..k
    cond = survive[1:] / np.where(survive[:-1] > 0, survive[:-1], 1.0)
    return BlockLongRun(tokens, pi, cond)


def acceptance_lp(weights: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, float]:
    r"""The law Q maximising :math:`\sum_\sigma w_\sigma \sum_x \min(p_\sigma(x), Q(x))` and the
    maximum (``weights [S]`` non-negative, ``rows [S, V]`` laws). HiGHS; exact up to its tolerance."""
    w = np.asarray(weights, dtype=np.float64)
    P = np.asarray(rows, dtype=np.float64)
    S, V = P.shape
    keep = w > 0
    w, P = w[keep], P[keep]
    S = w.size
    if S == 0:
        return np.full(V, 1.0 / V), 0.0
    # variables: Q (V), then t (S*V); maximise sum w_s t_sx  ->  minimise the negative
    c = np.concatenate([np.zeros(V), -np.repeat(w, V)])
    n = V + S * V
    rows_ub = []
    rhs = []
    for s in range(S):
        for x in range(V):
            a = np.zeros(n)
            a[V + s * V + x] = 1.0
            a[x] = -1.0
            rows_ub.append(a)  # t_sx - Q_x <= 0
            rhs.append(0.0)
    bounds = [(0, None)] * V + [(0, P[s, x]) for s in range(S) for x in range(V)]
    a_eq = np.concatenate([np.ones(V), np.zeros(S * V)])[None]
    res = linprog(c, A_ub=np.array(rows_ub), b_ub=rhs, A_eq=a_eq, b_eq=[1.0], bounds=bounds, method="highs")
    if res.status != 0:  # pragma: no cover - a feasible bounded LP
        raise RuntimeError(f"acceptance_lp: HiGHS failed: {res.message}")
    q = np.clip(res.x[:V], 0.0, None)
    return q / q.sum(), float(-res.fun / w.sum())


def acceptance_lp_drafter(chain: Any, depth: int) -> BlockDrafter:
    """A parallel head whose depth-k law solves :func:`acceptance_lp` for the law of the state
    at depth k given acceptance of the earlier depths (greedy over depths; homogeneous chain
    with deterministic transitions)."""
    depth = check_int(depth, "depth", 1)
    if not chain.is_homogeneous or getattr(chain, "is_stochastic", False):
        raise ValueError("chain: needs a homogeneous chain with deterministic transitions")
    p = np.asarray(chain.target, dtype=np.float64)
    nxt = np.asarray(chain.next_state)
    S, V = p.shape
    laws = np.zeros((S, depth, V))
    for s in range(S):
        w = np.zeros(S)
        w[s] = 1.0  # mass of (state, all accepted so far)
        for k in range(depth):
            q, _ = acceptance_lp(w, p)
            laws[s, k] = q
            acc = w[:, None] * np.minimum(p, q[None])
            w = np.zeros(S)
            np.add.at(w, nxt.ravel(), acc.ravel())
    return BlockDrafter(laws[:, 0], laws[:, 1:], "acceptance_lp")

r"""Exact long-run rate of a draft-length policy that is Markov in a finite state.

A policy whose decision after drafting token ``i`` depends on ``(i, s_{i-1}, x_i)`` and on a
memory ``m`` taking ``M`` values (:class:`~spectheory.stopping.FixedGamma`,
:class:`~spectheory.stopping.ConfidenceThreshold`, :class:`~spectheory.stopping.EntropyRule`,
:class:`~spectheory.stopping.HFSchedule`, ...) makes
the round starts ``(m, s)`` of a homogeneous chain a Markov chain. One forward sweep over the
depths per start gives, with ``q`` the draft, ``A = min(p, q)``, ``R = max(p - q, 0)`` and
``sigma`` the stop decisions on the edges ``(s, x)`` (forced at ``max_depth``):

* drafting mass ``D_{i+1} = D_i Q(q (1 - sigma))``, alive mass ``L_{i+1} = L_i Q(A (1 - sigma))``
  (``D_0 = L_0 = I``; ``Q(mass)`` the chain's transition operator of an edge mass);
* draft steps ``sum_i D_i 1``; call time ``sum_i t(i+1) D_i (q sigma) 1``;
* a rejection of token ``i + 1``: kernel ``L_i Q(R)`` to memory ``m_rej``, ``i + 1`` tokens;
* a stop after an accepted token ``i + 1``: kernel ``L_i Q(A sigma) Q(p)`` to memory ``m_acc``,
  ``i + 2`` tokens (the bonus).

The long-run rate is ``g(tokens) / g(time)`` on that chain (renewal-reward,
``docs/stopping.md`` Theorem 3). Cost ``O(M D S^3)`` (dense operators): small chains. Policies
whose memory is not finite (online learners with unbounded statistics) or that read the path's acceptance probability
(``uses_path``) have no finite round-start chain: score them by Monte Carlo.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..cost.base import as_cost
from ..kinds.policy._kernels import Kernels, single_thread
from ..kinds.policy.context import edge_context
from ..kinds.policy.policies import Policy, StartStatePolicy, require_memory
from .optimal import _dense, _gain, long_run_rate

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from ..cost.base import Cost

__all__ = ["LongRunValue", "LongRunRate", "long_run_policy"]


@dataclass(repr=False)
class LongRunRate:
    """What every long-run result answers from its ``rate``: tokens per unit time (the
    speedup over one target call per token). Its subclasses add their fields after ``rate``."""

    rate: float

    def speedup(self) -> float:
        """Long-run tokens per unit time (``rate``), as on every result type."""
        return self.rate

    def time_per_token(self) -> float:
        """``1 / rate``: long-run time per token."""
        return 1.0 / self.rate


@dataclass(repr=False)
class LongRunValue(LongRunRate):
    """Long-run value of a draft-length rule on a homogeneous chain.

    Attributes
    ----------
    rate : float
        As :class:`LongRunRate`.
    tokens_per_round, time_per_round : float
        Expectations per round under the stationary law of round starts.
    policy : str
    """

    tokens_per_round: float
    time_per_round: float
    policy: str = ""

    def __repr__(self) -> str:
        return (
            f"LongRunValue(rate={self.rate:.6g}, tokens_per_round={self.tokens_per_round:.6g}, "
            f"time_per_round={self.time_per_round:.6g}, policy={self.policy!r})"
        )


def long_run_policy(chain: ChainLike, policy: Policy, cost: Cost | float | None = None) -> LongRunValue:
    r"""Exact long-run tokens per unit time of ``policy`` (Markov in a finite memory) on a homogeneous chain.

    Parameters
    ----------
    chain : DecodingChain
        Homogeneous, deterministic transitions, unichain under the policy.
    policy : Policy
        Not ``uses_path``, not position dependent (a :class:`StartStatePolicy` with ``[S]``
        lengths is evaluated by :func:`~spectheory.stopping.optimal.long_run_rate`), with a
        a memory of kind ``"flag"`` or ``"counts"`` (finite ``n_memory``).
    cost : Cost or float

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma, long_run_policy
    >>> from spectheory.stopping.optimal import long_run_rate
    >>> chain = st.DecodingChain.random(3, concentration=1.0, rng=0)
    >>> a = long_run_policy(chain, FixedGamma(3), 0.1).rate
    >>> bool(abs(a - long_run_rate(chain, 3, 0.1)) < 1e-12)
    True
    """
    cost = as_cost(cost)
    if not isinstance(policy, Policy):
        raise ValueError(f"policy: expected a spectheory.stopping Policy, got {type(policy).__name__}")
    if not chain.is_homogeneous:
        raise ValueError("chain: the long-run objective needs a homogeneous chain")
    if isinstance(policy, StartStatePolicy):
        if policy.lengths.shape[0] != 1:
            raise ValueError("policy: a StartStatePolicy needs lengths [S] (one per state) for the long run")
        lengths = policy.lengths[0]
        r = long_run_rate(chain, lengths, cost)
        return LongRunValue(r, float("nan"), float("nan"), policy.name)
    if policy.uses_path or policy.uses_start or policy.position_dependent:
        raise ValueError(
            f"policy: {policy.name} reads the path's acceptance probability, the round's start or the "
            "position, so it has no finite round-start chain; use the finite horizon "
            "(evaluate_policy) or Monte Carlo (st.simulate)"
        )
    require_memory(policy, ("flag", "counts"), "long_run_policy")
    M = int(policy.n_memory)
    K = Kernels(chain)
    laws = K.at(0)
    S, D = K.S, int(policy.max_depth)
    tk = cost.call_times(D)
    op = lambda mass: _dense(chain.transition_operator(mass))  # noqa: E731
    Pop, Rop = op(laws.target), op(laws.rej)
    rej_mass = laws.rej.sum(-1)
    big = np.zeros((M * S, M * S))
    tokens = np.zeros(M * S)
    time = np.zeros(M * S)
    with single_thread(S):
        for m in range(M):
            fixed = policy.round_length(m)
            drafted = -1 if fixed is None else min(int(fixed), D)  # -1: decided inside the round
            Dm, L = np.eye(S), np.eye(S)
            drafts, ttime, tok = np.zeros(S), np.zeros(S), np.zeros(S)
            rows = slice(m * S, (m + 1) * S)
            for i in range(D):
                drafts += Dm.sum(1)
                m_rej = policy.memory_after(m, i, drafted)
                big[rows, m_rej * S : (m_rej + 1) * S] += L @ Rop
                tok += (i + 1) * (L @ rej_mass)
                if i + 1 == D:
                    sig = np.ones((S, K.V))
                else:
                    ctx = edge_context(K, policy, 0, i, m)
                    sig = np.broadcast_to(np.asarray(policy.stop(ctx), dtype=np.float64), (S, K.V))
                ttime += tk[i] * (Dm @ (laws.draft * sig).sum(-1))
                stop_alive = L @ op(laws.acc * sig)
                tok += (i + 2) * stop_alive.sum(1)
                m_acc = policy.memory_after(m, i + 1, i + 1)
                big[rows, m_acc * S : (m_acc + 1) * S] += stop_alive @ Pop
                Dm = Dm @ op(laws.draft * (1.0 - sig))
                L = L @ op(laws.acc * (1.0 - sig))
                if not Dm.any():
                    break
            tokens[rows] = tok
            time[rows] = cost.c * drafts + ttime
    ge, _ = _gain(big, tokens)
    gt, _ = _gain(big, time)
    return LongRunValue(float(ge / gt), float(ge), float(gt), policy.name)

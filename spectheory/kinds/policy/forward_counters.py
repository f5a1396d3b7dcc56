r"""The forward recursion of a policy's generation: where rounds start, where rejections land, and
how many drafts each round keeps.

The backward recursions (:mod:`.evaluate`, :mod:`.paths`) give a policy's counters; the
per-position masses of the shared result vocabulary (``docs/architecture.md``) need the law of
round starts, carried forward over the same round law. With ``F_n[m, s]`` the probability that
a round starts at position ``n`` in state ``s`` with policy memory ``m`` (``F_0[m_0] =`` the
chain's initial law), a round drafted from ``(n, m)`` with the verifier's per-token masses
(``A``: drafted and accepted, ``R``: rejected and ``y`` emitted; token verification
``min(p, q)`` and ``max(p - q, 0)``) and the policy's stop table ``sigma`` on each edge moves
the alive mass ``a_0 = F_n[m]`` through depths ``i = 0, 1, ...``:

.. math::
    F_{n+i+1}[m_{\rm rej}] \mathrel{+}= a_i R,\qquad
    F_{n+i+2}[m_{\rm acc}] \mathrel{+}= (a_i (A \sigma)) P_{\rm target},\qquad
    a_{i+1} = a_i (A (1 - \sigma))

(kernels at index ``n + i``; ``v M`` moves a state law through ``s' = next(s, x)``; the bonus
branch ends at the horizon). The rejected mass ``a_i R 1`` is the rejection at position
``n + i`` and a round that accepted ``i``; the stopped mass ``a_i A \sigma 1`` a round that
accepted ``i + 1``. Cost ``O(T M D S V)``, the backward recursion's. Policies fixing their
length at the round start (:class:`~spectheory.stopping.StartStatePolicy`) play each start
state's round length; path policies are carried through the drafted-path tree
(:func:`~spectheory.kinds.policy.paths.paths_counters`).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ._kernels import Kernels
from .context import edge_stops
from .paths import paths_counters
from .value import Counters

if TYPE_CHECKING:
    from ..._protocols import ChainLike
    from .policies import Policy

__all__ = ["policy_counters", "forward_counters"]


def forward_counters(
    chain: ChainLike, policy: Policy, horizon: int, verifier: Any = "token", max_nodes: int = 2_000_000
) -> partial:
    """What computes :func:`policy_counters` on first use (a :class:`~spectheory.stopping.PolicyValue`'s
    ``counters``; a ``functools.partial``, so the value pickles)."""
    return partial(policy_counters, chain, policy, horizon, verifier, max_nodes)


def policy_counters(
    chain: ChainLike, policy: Policy, horizon: int, verifier: Any = "token", max_nodes: int = 2_000_000
) -> Counters:
    """The forward masses of ``policy``'s generation of ``horizon`` tokens (see the module).

    Returns
    -------
    Counters
        ``round_starts [T, S]``, ``rejection_by_position [T]``, ``accepted_counts [D + 1]``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma
    >>> from spectheory.kinds.policy.forward_counters import policy_counters
    >>> chain = st.DecodingChain.random(3, concentration=1.0, rng=0)
    >>> got = policy_counters(chain, FixedGamma(3), 12)
    >>> want = chain.protocol(12, 3)
    >>> bool(abs(got.accepted_counts - want.accepted_counts).max() < 1e-12)
    True
    """
    T = chain.check_horizon(horizon)
    if policy.uses_path or (policy.uses_start and not policy.length_at_start):
        return paths_counters(chain, policy, T, verifier, max_nodes)
    K = Kernels(chain, verifier)
    D, M, S = policy.max_depth, policy.n_memory, K.S
    F = np.zeros((T + 1, M, S))
    F[0, policy.initial_memory] = chain.initial
    out = Counters(np.zeros((T, S)), np.zeros(T), np.zeros(D + 1))
    fixed = [policy.round_length(m) for m in range(M)]
    cacheable = K.hom and not getattr(policy, "position_dependent", False)
    sigmas: dict = {}

    def sigma(n: int, i: int, m: int) -> np.ndarray:
        key = (i, m) if cacheable else (n, i, m)
        if key not in sigmas:
            sigmas[key] = edge_stops(K, policy, n, i, m)
        return sigmas[key]

    for n in range(T):
        out.round_starts[n] = F[n].sum(0)
        kmax = min(D, T - n)
        for m in range(M):
            if not F[n, m].any():
                continue
            length = fixed[m]
            drafted = -1 if length is None else min(length, kmax)  # -1: decided inside the round
            after = [
                (policy.memory_after(m, i + 1, i + 1), policy.memory_after(m, i, drafted))
                for i in range(kmax)
            ]
            if policy.length_at_start:  # one round length per start state
                k = np.minimum(policy.length(n, np.arange(S)), kmax)
                for length in np.unique(k):
                    _round(K, F, out, np.where(k == length, F[n, m], 0.0), n, int(length), None, after, T)
            else:
                _round(K, F, out, F[n, m], n, kmax, lambda i: sigma(n, i, m), after, T)  # noqa: B023
    return out


def _round(K, F, out, a, n, k, sigma, after, T):
    """Carry the alive mass ``a [S]`` of rounds starting at ``n`` through at most ``k`` drafts
    (``sigma(i)``: the stop table after draft ``i + 1``; ``None``: draft all ``k``), adding the
    next round starts to ``F`` and the masses to ``out``."""
    for i in range(k):
        d = i + 1
        m_acc, m_rej = after[i]
        ch = K.check(n + i, i)
        rejected = a @ ch.rej.sum(-1)
        out.rejection_by_position[n + i] += rejected
        out.accepted_counts[i] += rejected
        F[n + d, m_rej] += K.push(a, ch.rej)
        if d == k:
            stop, go = ch.acc, None
        elif sigma is None:
            stop, go = None, ch.acc
        else:
            sig = sigma(i)
            stop, go = ch.acc * sig, ch.acc * (1.0 - sig)
        if stop is not None:
            ended = K.push(a, stop)
            out.accepted_counts[d] += ended.sum()
            if n + d < T:
                F[n + d + 1, m_acc] += K.push(ended, K.at(n + d).target)
        if go is None:
            return
        a = K.push(a, go)

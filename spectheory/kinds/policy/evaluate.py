r"""Exact evaluation of any draft-length policy on a :class:`~spectheory.DecodingChain`.

Backward recursion over round starts (``docs/stopping.md``). ``W_n[m, s]`` holds the expected
remaining (target calls, draft steps, target-call time, rejections, bonus tokens) of a
generation that has emitted ``n`` tokens, is in chain state ``s`` and whose policy memory is ``m``; ``W_T = 0``. Within a
round the cost splits into a part paid whatever the verifier decides (draft steps and the
call, which depend only on the drafted path) and a part paid only while every drafted token
is still accepted (the continuation after the residual or bonus token). With the
verifier's per-token masses (``Verifier.phase_masses``; token verification: ``A = min(p, q)``,
``R = max(p - q, 0)``, p = target, q = draft, the drafting law ``q``), ``sigma`` the stop decision
on the edge ``(s, x)`` and ``B_d(s) = e_bonus + sum_y p(y|s) W_{n+d+1}(next(s, y))`` the value
of stopping alive at depth ``d``:

.. math::
    X_i(s) &= e_{\rm draft} + \sum_x q(x|s)\,[\sigma\, t(i+1) e_{\rm call\,time}
              + (1 - \sigma) X_{i+1}(s')],\\
    Y_i(s) &= \sum_y R(y|s) (e_{\rm rej} + W_{n+i+1}(s'_y)) + \sum_x A(x|s)\,[\sigma B_{i+1}(s') + (1-\sigma) Y_{i+1}(s')],

and ``W_n(s) = e_calls + X_0(s) + Y_0(s)`` (kernels at index ``n + i``, ``s' = next(s, x)``).
Policies with memory run it once per memory state, with the memory after an all-accepted
or a rejected round in the two continuations. Policies that use the path (the oracle
acceptance probability) are evaluated by enumerating drafted paths
(:mod:`spectheory.kinds.policy.paths`); :class:`FixedGamma` by the verifier's own exact engine
(:meth:`spectheory.verifiers.Verifier.exact`: the phase engine for token verification).
The verification is valid for any rule that checks one drafted token at a time given the
tokens before it: the drafting side ``X`` does not depend on the verifier's decisions, and
the alive side ``Y`` follows the rule's per-token masses along the drafts the policy made.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...cost.base import as_cost
from ...verifiers.base import Verifier, get_verifier
from ._kernels import BONUS, CALLS, DRAFTS, N_COMP, TTIME, Kernels, single_thread, time_weights
from .context import edge_context, edge_stops
from .forward_counters import forward_counters
from .paths import evaluate_paths
from .policies import Policy, require_memory
from .value import Counters, PolicyValue, _value, backward_positions, bonus_value, reject_value

if TYPE_CHECKING:
    from ..._protocols import ChainLike
    from ...cost.base import Cost

__all__ = ["PolicyValue", "evaluate_policy", "edge_context"]

_E = np.eye(N_COMP)


def evaluate_policy(
    chain: ChainLike,
    policy: Policy,
    horizon: int,
    cost: Cost | float | None = None,
    *,
    bonus: bool = True,
    method: str = "auto",
    max_nodes: int = 2_000_000,
    progress: bool | None = None,
    verifier: str | Verifier = "token",
) -> PolicyValue:
    r"""Exact expected target calls, draft steps and time of ``policy`` over ``horizon`` tokens.

    Parameters
    ----------
    chain : DecodingChain
    policy : Policy
        Any :mod:`spectheory.kinds.policy.policies` object.
    horizon : int
        Tokens per generation ``T``.
    cost : Cost or float, optional
        A :class:`Cost` or the draft step cost ``c`` (default 0).
    bonus : bool
        Only ``True`` (the protocol's default) is supported.
    method : {"auto", "rounds"}
        ``"auto"`` evaluates :class:`FixedGamma` with the phase engine; ``"rounds"`` forces
        the round recursion above (the tests compare both).
    max_nodes : int
        Size limit of the drafted-path enumeration (path policies): ``ValueError`` beyond it.
    verifier : str or Verifier
        The single-path rule that checks each round's drafts (default token verification).
        A rule that checks one token at a time (``phase_masses``: token, point-mass,
        sample-and-match, argmax drafting, rejection rules) runs in every recursion; a
        whole-round rule (``round_transition``: block, HSD) only under :class:`FixedGamma`
        (``method="auto"``), whose rounds are the fixed-length rounds its engine describes
        (``ValueError`` otherwise).

    Returns
    -------
    PolicyValue
        Its per-position masses and accepted-count histogram are computed on first use by a
        forward recursion over the same round law (:mod:`spectheory.kinds.policy.forward_counters`).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma, evaluate_policy
    >>> chain = st.DecodingChain.random(3, concentration=1.0, rng=0)
    >>> a = evaluate_policy(chain, FixedGamma(3), 12, 0.1)
    >>> b = evaluate_policy(chain, FixedGamma(3), 12, 0.1, method="rounds")
    >>> abs(a.time() - b.time()) < 1e-12 and abs(a.rejections - b.rejections) < 1e-12
    True
    """
    T = chain.check_horizon(horizon)
    cost = as_cost(cost)
    if not bonus:
        raise ValueError("bonus: only bonus=True is supported by the stopping engines")
    if not isinstance(policy, Policy):
        raise ValueError(f"policy: expected a spectheory.stopping Policy, got {type(policy).__name__}")
    if method not in ("auto", "rounds"):
        raise ValueError(f"method: expected 'auto' or 'rounds', got {method!r}")
    require_memory(policy, ("flag", "counts"), "evaluate_policy")
    verifier = _policy_verifier(verifier, chain)
    if policy.uses_path or (policy.uses_start and not policy.length_at_start):
        return evaluate_paths(
            chain, policy, T, cost, max_nodes=max_nodes, progress=progress, verifier=verifier
        )
    if policy.constant_length is not None and method == "auto":
        return _fixed_gamma(chain, policy, T, cost, verifier)
    K = Kernels(chain, verifier)
    with single_thread(chain.n_states):
        if policy.length_at_start:
            W0 = start_class_recursion(K, T, cost, policy=policy, progress=progress)[0]
        else:
            W0 = _edge_recursion(K, policy, T, cost, progress)
    return _value(T, cost, chain.initial @ W0, policy, counters=forward_counters(chain, policy, T, verifier))


def _policy_verifier(verifier: Any, chain: ChainLike) -> Verifier:
    """The single-path verifier of a policy's rounds; ``ValueError`` for one that calls the
    target more than once per round (naive HSD: the policy's rounds are one call each)."""
    v = get_verifier(verifier).require_path()
    if v.round_extra_calls(chain) is not None:
        raise ValueError(
            f"verifier: {v.name!r} calls the target more than once per round; a draft-length "
            "policy's round is one target call (use a path round: PathRound(gamma, verifier))"
        )
    return v


def _fixed_gamma(chain, policy, T, cost, verifier):
    """A policy of ``constant_length`` (:class:`FixedGamma`) by the verifier's own exact engine
    (the phase engine for token verification, the round engine for a whole-round rule)."""
    gamma = policy.constant_length
    res = verifier.exact(chain, T, gamma, True)
    k = np.minimum(gamma, T - np.arange(T))
    ttime = float(res.round_start_prob @ cost.call_times(gamma)[k - 1])
    counters = Counters(res.round_starts, res.rejection_by_position, res.accepted_counts)
    return PolicyValue(
        T,
        cost,
        res.target_calls,
        res.draft_tokens,
        ttime,
        res.rejections,
        res.bonus_tokens,
        policy.name,
        counters=counters,
    )


def _edge_recursion(K, policy, T, cost, progress):
    D = policy.max_depth
    M = policy.n_memory
    tk = cost.call_times(D)
    W = np.zeros((T + 1, M, K.S, N_COMP))
    masses: dict = {}
    xs: dict = {}
    bon: dict = {}
    rej: dict = {}
    cacheable = K.hom and not getattr(policy, "position_dependent", False)

    def split(n, i, m, last):
        """Draft/accept masses of edges after which the round stops or goes on (cached)."""
        key = (last, i, m) if cacheable else (n, last, i, m)
        if key not in masses:
            ch = K.check(n + i, i)
            if last:
                masses[key] = (None, None, ch.acc, None)
            else:
                sig = edge_stops(K, policy, n, i, m)
                qs = ch.drafting * sig
                masses[key] = (qs.sum(-1), ch.drafting - qs, ch.acc * sig, ch.acc * (1.0 - sig))
        return masses[key]

    def bonus(pos, m):  # cached: W_{pos+1} is final once computed
        if (pos, m) not in bon:
            bon[(pos, m)] = bonus_value(K, W, pos, T, m)
        return bon[(pos, m)]

    def reject(pos, i, m):
        key = (pos, i if K.phase else 0, m)
        if key not in rej:
            rej[key] = reject_value(K, K.check(pos, i).rej, W[pos + 1][m])
        return rej[key]

    fixed = [policy.round_length(m) for m in range(M)]
    afters: dict = {}

    def after(m, i, kmax):
        """Memories after a round from memory ``m`` accepted to depth ``i + 1`` / rejected at token ``i + 1``."""
        drafted = -1 if fixed[m] is None else min(fixed[m], kmax)  # -1: decided inside the round
        if (m, i, drafted) not in afters:
            afters[(m, i, drafted)] = (
                policy.memory_after(m, i + 1, i + 1),
                policy.memory_after(m, i, drafted),
            )
        return afters[(m, i, drafted)]

    for n in backward_positions(T, "evaluate policy", progress, T * D * M * K.S * K.V):
        for m in range(M):
            kmax = min(D, T - n)
            X = Y = None
            for i in range(kmax - 1, -1, -1):
                d = i + 1
                m_acc, m_rej = after(m, i, kmax)
                q_stop, q_cont, acc_stop, acc_cont = split(n, i, m, d == kmax)
                xkey = (kmax, i, m) if cacheable else None
                if xkey in xs:
                    Xn = xs[xkey]
                elif d == kmax:
                    Xn = np.broadcast_to(_E[DRAFTS] + tk[d - 1] * _E[TTIME], (K.S, N_COMP))
                else:
                    Xn = _E[DRAFTS] + q_stop[:, None] * (tk[d - 1] * _E[TTIME]) + K.apply(q_cont, X)
                if xkey is not None:
                    xs[xkey] = Xn
                Yn = reject(n + i, i, m_rej) + K.apply(acc_stop, bonus(n + d, m_acc))
                if Y is not None:
                    Yn = Yn + K.apply(acc_cont, Y)
                X, Y = Xn, Yn
            W[n, m] = _E[CALLS] + X + Y
    return W[0, policy.initial_memory]


def start_class_recursion(
    K: Kernels,
    T: int,
    cost: Cost,
    *,
    policy: Policy | None = None,
    max_depth: int | None = None,
    progress: bool | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    r"""Round-start recursion for policies that fix ``k`` at the round start (state information).

    With ``H_m^{(0)} = B(m)`` and ``H_m^{(r)} = R_m W_{m+1} + A_m H_{m+1}^{(r-1)}`` (the
    alive-side value of a round suffix at position ``m`` with ``r`` drafts left), a round
    at ``n`` drafting ``k`` tokens is worth ``e_calls + k e_draft + t(k) e_time + H_n^{(k)}``.
    With ``policy`` (one whose ``length_at_start``, e.g. a :class:`StartStatePolicy`) ``k`` is read
    from its ``length``; otherwise ``k``
    minimises the time (ties: the smaller ``k``), the dynamic programme of
    :func:`~spectheory.stopping.optimal_policy`. Cost ``O(T D S V)``.

    Returns ``(W_0 [S, N_COMP], lengths [T, S])`` (components: ``spectheory.kinds.policy._kernels``).
    """
    if policy is not None:
        D = policy.max_depth
    elif max_depth is not None:
        D = int(max_depth)
    else:
        raise ValueError("max_depth: required when no policy is given")
    if K.phase:
        raise ValueError(
            f"verifier: {K.verifier.name!r} has phase-dependent masses; the start-class recursion "
            "shares a round suffix across round lengths and needs masses that do not depend on the phase"
        )
    tk = cost.call_times(D)
    w = time_weights(cost)
    S = K.S
    W_next = np.zeros((S, N_COMP))  # W_{n+1}
    H_next = np.zeros((S, D + 1, N_COMP))  # H_{n+1}^{(r)}
    lengths = np.zeros((T, S), dtype=np.int64)
    ks = np.arange(1, D + 1)
    base = _E[CALLS] + ks[:, None] * _E[DRAFTS] + tk[:, None] * _E[TTIME]  # [D, N_COMP]
    for n in backward_positions(T, "state DP", progress, T * D * S * K.V):
        ch = K.check(n, 0)
        kmax = min(D, T - n)
        H = np.empty((S, D + 1, N_COMP))
        H[:, 0] = K.apply(K.at(n).target, W_next) + _E[BONUS]  # B(n), n < T
        H[:, 1 : kmax + 1] = reject_value(K, ch.rej, W_next)[:, None] + K.apply(ch.acc, H_next[:, :kmax])
        vals = base[None, :kmax] + H[:, 1 : kmax + 1]  # [S, kmax, 3]
        if policy is None:
            k = np.argmin(vals @ w, axis=1) + 1
        else:
            k = np.minimum(policy.length(n, np.arange(S)), kmax)
        lengths[n] = k
        W_next = vals[np.arange(S), k - 1]
        H_next = H
    return W_next, lengths

r"""The phase engine: exact recursions for rules that verify one draft token at a time.

See :mod:`spectheory.exact` for the protocol and the state ``Q_n[i, s]``
(position ``n``, ``i`` drafts of the round accepted, state ``s``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from .parts import (
    ProtocolResult,
    _check_gamma,
    _check_rows,
    _MassOps,
    _positions,
    _single_threaded,
    _vm,
    check_engine_size,
    token_masses,
)

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["phase_recursion", "calls_law", "token_accept_survival"]


@_single_threaded
def phase_recursion(
    chain: ChainLike,
    horizon: int,
    gamma: int,
    bonus: bool,
    accept_mass: Callable[[int, int], ArrayLike] | ArrayLike,
    reject_mass: Callable[[int, int], ArrayLike] | ArrayLike,
    *,
    position_dependent: bool | None = None,
    phase_dependent: bool = True,
    progress: bool | None = None,
) -> ProtocolResult:
    r"""Exact expectations of a position-by-position verifier, by the phase recursion.

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
        Tokens per generation ``T`` (at most ``chain.max_horizon``).
    gamma : int
        Draft length ``>= 1``.
    bonus : bool
        Whether an all-accepted round emits one bonus token from the target.
    accept_mass, reject_mass : callable ``(n, i) -> [S, V]`` or array ``[S, V]`` / ``[T, S, V]``
        ``accept_mass(n, i)[s, x]``: mass of "draft token ``x`` proposed and accepted" at
        kernel index ``n`` in state ``s`` when ``i`` drafts of the round are already
        accepted; ``reject_mass(n, i)[s, x]``: mass of "rejected, and ``x`` emitted
        instead". Each row of ``accept + reject`` must sum to 1. Standard token
        verification: ``min(target, draft)`` and ``max(target - draft, 0)``
        (:func:`token_masses`).
    position_dependent : bool, optional
        Whether a callable's value depends on ``n``. Default: ``not chain.is_homogeneous``;
        otherwise operators are built once.
    phase_dependent : bool
        Whether a callable's value depends on ``i`` (default True; False lets the
        engine move all phases with one matrix product).
    progress : bool, optional
        Show a tqdm bar over positions (default: only for large problems).

    Returns
    -------
    ProtocolResult

    Notes
    -----
    Per position ``n < T``: the phase-``gamma`` mass (all ``gamma`` accepted) ends its
    round -- bonus: ``Q[gamma] @ P_target`` starts a round at ``n + 1``; no bonus: it is
    added to ``Q[0]`` (a round starts at ``n``). Then
    ``Q_{n+1}[1:] = Q_n[:gamma] @ A`` and ``Q_{n+1}[0] = Q_n[:gamma] @ R`` (+ bonus).
    At ``n = T`` phase ``i >= 1`` mass is a round truncated to ``k = i`` that accepted
    everything. Cost: ``T`` products of ``[gamma, S] @ [S, S]`` plus two vector-matrix
    products per position.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.exact import phase_recursion, token_masses
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.9, 0.1])
    >>> acc, rej = token_masses(chain)
    >>> res = phase_recursion(chain, 3, 1, False, acc, rej)
    >>> round(res.rejections, 12)  # = 3 * TV = 3 * 0.4
    1.2
    """
    T = chain.check_horizon(horizon)
    G = _check_gamma(gamma)
    bonus = bool(bonus)
    S = chain.n_states
    seconds = check_engine_size(chain, "path_exact", T, gamma=min(G, T))
    A = _MassOps(chain, accept_mass, "accept_mass", position_dependent, phase_dependent)
    R = _MassOps(chain, reject_mass, "reject_mass", position_dependent, phase_dependent)
    checked = set()
    starts = np.zeros((T, S))
    checks = np.zeros((T, S))
    rej_pos = np.zeros(T)
    counts = np.zeros(G + 1)
    bonus_tokens = 0.0
    Q = np.zeros((G + 1, S))
    Q[0] = chain.initial
    for n in _positions(T, G, S, progress, "phase recursion", seconds):
        nxt = np.zeros((G + 1, S))
        full = Q[G]
        full_mass = full.sum()
        if full_mass > 0:
            counts[G] += full_mass
            if bonus:
                nxt[0] += _vm(full, chain.target_operator(n))
                bonus_tokens += full_mass
            else:
                Q[0] += full
        starts[n] = Q[0]
        live = Q[:G]
        checks[n] = live.sum(0)
        if A.phase or R.phase:
            for i in range(G):
                (aop, asum), (rop, rsum) = A.get(n, i), R.get(n, i)
                key = (A.key(n, i), R.key(n, i))
                if key not in checked:
                    _check_rows(asum, rsum, n, i)
                    checked.add(key)
                nxt[i + 1] = _vm(live[i], aop)
                nxt[0] += _vm(live[i], rop)
                r = live[i] @ rsum
                counts[i] += r
                rej_pos[n] += r
        else:
            (aop, asum), (rop, rsum) = A.get(n, 0), R.get(n, 0)
            key = (A.key(n, 0), R.key(n, 0))
            if key not in checked:
                _check_rows(asum, rsum, n, 0)
                checked.add(key)
            nxt[1:] = _vm(live, aop)
            nxt[0] += _vm(live.sum(0), rop)
            r = live @ rsum
            counts[:G] += r
            rej_pos[n] = r.sum()
        Q = nxt
    counts[1:] += Q[1:].sum(-1)  # rounds reaching position T with everything accepted
    return ProtocolResult(T, G, bonus, starts, rej_pos, counts, float(bonus_tokens), checks)


@_single_threaded
def calls_law(
    chain: ChainLike,
    horizon: int,
    gamma: int,
    bonus: bool,
    accept_mass: Callable[[int, int], ArrayLike] | ArrayLike,
    reject_mass: Callable[[int, int], ArrayLike] | ArrayLike,
    max_elements: int = 2**26,
) -> np.ndarray:
    r"""Exact law of the number of target calls (rounds), ``P(calls = c)`` for ``c = 0..T``.

    The phase recursion with the mass split by the number of rounds started so far,
    ``Q_n[i, c, s]``: a round start at position ``n < T`` moves mass from ``c`` to
    ``c + 1``. Masses must be phase-independent (token-like rules). Cost ``T`` times
    a ``[gamma (T + 1), S] @ [S, S]`` product; raises ``ValueError`` when
    ``(gamma + 1) (T + 1) S`` exceeds ``max_elements``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.exact import calls_law, token_masses
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])
    >>> calls_law(chain, 2, 1, True, *token_masses(chain)).tolist()  # one round if accepted
    [0.0, 0.5, 0.5]
    """
    T = chain.check_horizon(horizon)
    G = _check_gamma(gamma)
    S = chain.n_states
    C = T + 1
    if (G + 1) * C * S > max_elements:
        raise ValueError(
            f"horizon: calls law needs (gamma+1)(T+1)S = {(G + 1) * C * S} entries (> {max_elements})"
        )
    A = _MassOps(chain, accept_mass, "accept_mass", None, False)
    R = _MassOps(chain, reject_mass, "reject_mass", None, False)
    Q = np.zeros((G + 1, C, S))
    Q[0, 0] = chain.initial
    for n in _positions(T, G * C, S, None, "calls law"):
        nxt = np.zeros_like(Q)
        full = Q[G]
        if bonus:
            nxt[0] += _vm(full, chain.target_operator(n))
        else:
            Q[0] += full
        Q[0, 1:] = Q[0, :-1].copy()  # a round starts here: one more call
        Q[0, 0] = 0.0
        (aop, asum), (rop, rsum) = A.get(n, 0), R.get(n, 0)
        _check_rows(asum, rsum, n, 0)
        live = Q[:G]
        nxt[1:] = _vm(live.reshape(G * C, S), aop).reshape(G, C, S)
        nxt[0] += _vm(live.sum(0), rop)
        Q = nxt
    return Q.sum((0, 2))


@_single_threaded
def token_accept_survival(chain: ChainLike, horizon: int, gamma: int) -> np.ndarray:
    r"""Per-start law of a round's accepted count under token verification.

    ``P(J >= j | n0, s) = (A_{n0} A_{n0+1} ... A_{n0+j-1} 1)(s)`` with
    ``A_n = transition_operator(min(target_n, draft_n))``.

    Returns
    -------
    ndarray
        Homogeneous chains: ``[S, gamma + 1]``, the untruncated round law.
        Inhomogeneous chains: ``[T, S, gamma + 1]``, the law of the round started at
        ``n0`` as the protocol runs it (``k = min(gamma, T - n0)``, entries above ``k`` zero).
    """
    T = chain.check_horizon(horizon)
    G = _check_gamma(gamma)
    acc, _ = token_masses(chain)
    if chain.is_homogeneous:
        op = chain.transition_operator(acc)
        surv = np.ones((G + 1, chain.n_states))
        for j in range(1, G + 1):
            surv[j] = op @ surv[j - 1]
        law = surv.copy()
        law[:G] -= surv[1:]
        return np.clip(law.T, 0.0, None)
    surv = np.zeros((T + 1, G + 1, chain.n_states))
    surv[:, 0] = 1.0
    for n0 in range(T - 1, -1, -1):
        op = chain.transition_operator(acc(n0, 0))
        m = min(G, T - n0)
        surv[n0, 1 : m + 1] = (op @ surv[n0 + 1, :m].T).T
    law = np.zeros((T, chain.n_states, G + 1))
    for n0 in range(T):
        k = min(G, T - n0)
        law[n0, :, :k] = (surv[n0, :k] - surv[n0, 1 : k + 1]).T
        law[n0, :, k] = surv[n0, k]
    return np.clip(law, 0.0, None)

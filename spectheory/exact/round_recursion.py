r"""The round engine: exact recursion over round starts for round-level rules (block verification).

See :mod:`spectheory.exact` for the protocol.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from .parts import ProtocolResult, _check_gamma, _positions, _single_threaded, check_engine_size, token_masses

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["round_recursion", "token_round_transition"]

#: ``(n0, k, emit_bonus) -> Q`` with ``Q[s, j, s']`` the mass of a round started at position
#: ``n0`` in state ``s`` that accepts ``j`` of its ``k`` drafts and ends in state ``s'``.
RoundTransition = Callable[[int, int, bool], np.ndarray]


@_single_threaded
def round_recursion(
    chain: ChainLike,
    horizon: int,
    gamma: int,
    bonus: bool,
    round_transition: RoundTransition,
    *,
    position_dependent: bool | None = None,
    progress: bool | None = None,
) -> ProtocolResult:
    r"""Exact expectations of any round-level verifier, by a recursion over round starts.

    Parameters
    ----------
    chain, horizon, gamma, bonus : as in :func:`phase_recursion`
    round_transition : callable ``(n0, k, emit_bonus) -> [S, k + 1, S]``
        ``Q[s, j, s']`` = P(accepted count ``j`` and state ``s'`` after the round's
        last emitted token | round starts at ``n0`` in state ``s``). The round emits
        ``j + 1`` tokens if ``j < k`` and ``k + emit_bonus`` tokens if ``j == k``.
    position_dependent : bool, optional
        Whether ``round_transition`` depends on ``n0`` (default: ``not chain.is_homogeneous``);
        otherwise it is called once per ``(k, emit_bonus)``.
    progress : bool, optional
        Show a tqdm bar over round starts (default: only for large problems).

    Returns
    -------
    ProtocolResult
        ``rejection_by_position[n]`` counts rejections whose replacement token sits at
        kernel index ``n``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.exact import round_recursion, token_round_transition
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.9, 0.1])
    >>> res = round_recursion(chain, 3, 1, False, token_round_transition(chain))
    >>> round(res.rejections, 12)
    1.2
    """
    T = chain.check_horizon(horizon)
    G = _check_gamma(gamma)
    bonus = bool(bonus)
    S = chain.n_states
    posdep = (not chain.is_homogeneous) if position_dependent is None else bool(position_dependent)
    seconds = check_engine_size(chain, "round_exact", T, gamma=min(G, T))
    cache: dict = {}
    R = np.zeros((T + 1, S))
    R[0] = chain.initial
    rej_pos = np.zeros(T)
    counts = np.zeros(G + 1)
    bonus_tokens = 0.0
    for n0 in _positions(T, G, S, progress, "round recursion", seconds):
        r = R[n0]
        if not np.any(r):
            continue
        k = min(G, T - n0)
        eb = bonus and n0 + k < T
        key = (n0 if posdep else 0, k, eb)
        Q = cache.get(key)
        if Q is None:
            Q = np.asarray(round_transition(n0, k, eb), dtype=np.float64)
            if Q.shape != (S, k + 1, S):
                raise ValueError(
                    f"round_transition: expected shape ({S}, {k + 1}, {S}) at n0={n0}, got {Q.shape}"
                )
            if not np.all(np.isfinite(Q)) or np.any(Q < 0):
                raise ValueError(f"round_transition: entries must be finite and >= 0 (n0={n0})")
            if posdep:
                cache.clear()
            cache[key] = Q
        out = np.einsum("s,sjt->jt", r, Q)
        tot = out.sum(-1)
        counts[: k + 1] += tot
        R[n0 + 1 : n0 + k + 1] += out[:k]
        rej_pos[n0 : n0 + k] += tot[:k]
        R[n0 + k + eb] += out[k]
        if eb:
            bonus_tokens += tot[k]
    return ProtocolResult(T, G, bonus, R[:T].copy(), rej_pos, counts, float(bonus_tokens))


def _dense(op):
    return op.toarray() if sp.issparse(op) else np.asarray(op)


def token_round_transition(chain: ChainLike) -> RoundTransition:
    r"""Standard token verification as a round transition ``(n0, k, emit_bonus) -> [S, k+1, S]``.

    With ``A_n``, ``R_n`` the operators of ``min(target, draft)`` and
    ``max(target - draft, 0)`` and ``P_n`` of the target kernel,
    ``Q[:, j] = A_{n0} ... A_{n0+j-1} R_{n0+j}`` for ``j < k`` and
    ``Q[:, k] = A_{n0} ... A_{n0+k-1} (P_{n0+k} if emit_bonus)``. Dense, for small ``S``.
    """
    acc, rej = token_masses(chain)
    if chain.is_homogeneous:
        a, r = acc, rej
        acc, rej = (lambda n, i: a), (lambda n, i: r)

    def transition(n0, k, emit_bonus):
        S = chain.n_states
        E = np.eye(S)
        Q = np.zeros((S, k + 1, S))
        for i in range(k):
            n = n0 + i
            Q[:, i] = E @ _dense(chain.transition_operator(rej(n, i)))
            E = E @ _dense(chain.transition_operator(acc(n, i)))
        Q[:, k] = E @ _dense(chain.target_operator(n0 + k)) if emit_bonus else E
        return Q

    return transition

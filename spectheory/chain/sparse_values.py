r"""The stored chain's value functions of a round's configuration, for the refined truncation bound.

The phase recursion's configuration at position ``n`` (0-based) is ``(i, s)``: ``i`` drafts of
the current round accepted, state ``s``. For a reward collected when a round starts (a target
call: 1; its draft tokens: :math:`\min(\gamma, T - n)`), the expected reward still to come from
``(i, s)`` at ``n`` under token verification is, backwards from :math:`W_T = 0`,

.. math::

    W_n(i, s) = [i = 0]\,r_n + (A W_{n+1}(i + 1, \cdot))(s) + (R W_{n+1}(0, \cdot))(s), \quad i < \gamma,

with :math:`A`, :math:`R` the transition operators of :math:`\min(p, q)` and :math:`(p - q)_+`;
:math:`W_n(\gamma, s) = (P W_{n+1}(0, \cdot))(s)` with a bonus token (:math:`P` the target's
operator), else :math:`W_n(0, s)` (a new round starts at once). ``initial @ W_0(0, .)`` is the
expected total (tested against ``protocol``). Cost: the forward recursion's, for two rewards.

What :mod:`.sparse_bound` needs is how much :math:`W_{n+1}` varies over the configurations one
step can reach: after a check at phase ``i``, ``(i + 1, s')`` or ``(0, s')`` for any ``s'`` (a
true row's tail token leads anywhere); after a bonus token, ``(0, s')``.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .._guards import check_bool, check_int
from ..exact.parts import token_masses

__all__ = ["start_reward_values"]


def start_reward_values(
    chain: Any, horizon: int, gamma: int, bonus: bool = True
) -> tuple[np.ndarray, np.ndarray]:
    """``(spread, W0)`` for the rewards (target calls, draft tokens) collected at round starts.

    Returns
    -------
    spread : ndarray, shape (T, 2)
        ``spread[n, k]``: the largest oscillation of :math:`W_{n+1}` (reward ``k``) over the
        configurations reachable in one step from any configuration at position ``n``.
    W0 : ndarray, shape (S, gamma + 1, 2)
        :math:`W_0`; ``chain.initial @ W0[:, 0, 0]`` is the expected number of target calls.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.random(4, rng=0)
    >>> spread, W0 = start_reward_values(chain, 12, 3)
    >>> res = chain.protocol(12, 3)
    >>> bool(abs(chain.initial @ W0[:, 0, 0] - res.target_calls) < 1e-12)
    True
    >>> bool(abs(chain.initial @ W0[:, 0, 1] - res.draft_tokens) < 1e-12)
    True
    """
    T = check_int(horizon, "horizon", 1)
    G = check_int(gamma, "gamma", 1)
    bonus = check_bool(bonus, "bonus")
    acc, rej = token_masses(cast("Any", chain))
    A = chain.transition_operator(acc)
    R = chain.transition_operator(rej)
    P = chain.target_operator(0)
    S = chain.n_states
    W = np.zeros((S, G + 1, 2))  # W_{n+1}
    spread = np.zeros((T, 2))
    for n in range(T - 1, -1, -1):
        hi, lo = W.max(axis=0), W.min(axis=0)  # [G + 1, 2]
        check = np.maximum(hi[1:], hi[0]) - np.minimum(lo[1:], lo[0])  # after a check at phase i < G
        spread[n] = check.max(axis=0)
        if bonus:
            spread[n] = np.maximum(spread[n], hi[0] - lo[0])
        new = np.empty_like(W)
        ahead = np.asarray(A @ W[:, 1:, :].reshape(S, 2 * G)).reshape(S, G, 2)
        new[:, :G, :] = ahead + np.asarray(R @ W[:, 0, :])[:, None, :]
        new[:, 0, :] += np.array([1.0, float(min(G, T - n))])
        new[:, G, :] = np.asarray(P @ W[:, 0, :]) if bonus else new[:, 0, :]
        W = new
    return spread, W

"""What a draft-length policy may look at after each drafted token (:class:`StopContext`).

Its own module so that the policy round (:mod:`.round`, what ``st.simulate(chain, T, policy)``
plays) needs no import of the policy classes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ._kernels import Kernels

__all__ = ["StopContext", "RoundFeedback", "edge_context", "edge_stops"]


@dataclass
class StopContext:
    """What a policy may look at after drafting token ``depth`` (arrays broadcast together).

    Attributes
    ----------
    depth : int
        Tokens drafted so far in this round (``>= 1``).
    position, start_state : int arrays
        The round's start (tokens generated before it) and the chain state there.
    prev_state, token, state : int arrays
        State before the last drafted token, the token, and the state after it.
    top, entropy, token_prob : float arrays
        Top probability, entropy (nats) and ``q(token)`` of the draft law that proposed
        the last token (q = draft; computed already, so no extra draft step).
    accept_prob : float array or None
        Oracle only: P(all drafted tokens of the round are accepted | drafted path).
    memory : int array
        The policy's memory between rounds (0 for memoryless policies).
    """

    depth: int
    position: np.ndarray
    start_state: np.ndarray
    prev_state: np.ndarray
    token: np.ndarray
    state: np.ndarray
    top: np.ndarray
    entropy: np.ndarray
    token_prob: np.ndarray
    accept_prob: np.ndarray | None
    memory: np.ndarray


@dataclass
class RoundFeedback:
    """What a policy learns after a round's verification (per run of a batch of ``R`` runs).

    Attributes
    ----------
    accepted : int array, shape (R,)
        Drafted tokens the verifier accepted (``j``).
    drafted : int array, shape (R,)
        Tokens the round drafted (``k``; ``j == k``: all accepted).
    token_prob : float array, shape (R, D)
        ``q(x_i)`` of the drafted tokens (columns ``>= drafted`` are meaningless).
    """

    accepted: np.ndarray
    drafted: np.ndarray
    token_prob: np.ndarray


def edge_context(K: Kernels, policy: Any, n: int, i: int, memory: int) -> StopContext:
    """Context of every edge ``(s, x)`` for the decision after drafting token ``i + 1`` of a round at ``n``."""
    laws = K.at(n + i)
    S, V = K.S, K.V
    prev = np.broadcast_to(np.arange(S)[:, None], (S, V))
    return StopContext(
        depth=i + 1,
        position=np.full((S, V), n),
        start_state=prev,
        prev_state=prev,
        token=np.broadcast_to(np.arange(V), (S, V)),
        state=K.next_state,
        top=laws.top[prev],
        entropy=laws.entropy[prev],
        token_prob=laws.draft,
        accept_prob=None,
        memory=np.full((S, V), memory),
    )


def edge_stops(K: Kernels, policy: Any, n: int, i: int, memory: int) -> np.ndarray:
    """``sigma [S, V]`` (float): whether ``policy`` stops after drafting token ``i + 1`` of a
    round at ``n`` on each edge ``(s, x)`` (policies that decide on the edge, not the path)."""
    return np.asarray(policy.stop(edge_context(K, policy, n, i, memory)), dtype=np.float64)

"""What a draft-length policy may look at after each drafted token (:class:`StopContext`).

Its own module so that the policy round (:mod:`.round`, what ``st.simulate(chain, T, policy)``
plays) needs no import of the policy classes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["StopContext", "RoundFeedback"]


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

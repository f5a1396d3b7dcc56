"""The result of a tree generation and the forward masses both exact tree engines accumulate
(:mod:`.exact`, per node; :mod:`.enumerate`, per drafted tree)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

__all__ = ["TreeProtocolResult"]


@dataclass
class TreeProtocolResult:
    """Exact expectations of one generation of ``horizon`` tokens with a draft tree.

    Attributes
    ----------
    horizon : int
    target_calls, rejections, draft_tokens, accepted : float
        Expected rounds, corrections, drafted nodes, accepted drafts.
    tokens_per_call : float
        ``horizon / target_calls``.
    accepted_length_law : ndarray, shape (depth + 1,)
        Law of a round's accepted length: expected rounds with ``j`` accepted drafts over
        expected rounds.
    round_starts : ndarray, shape (T, S)
        P(a round starts at position ``n`` in state ``s``).
    """

    horizon: int
    target_calls: float
    rejections: float
    draft_tokens: float
    accepted: float
    tokens_per_call: float
    accepted_length_law: np.ndarray
    round_starts: np.ndarray = field(repr=False)


class _Accumulator:
    """Forward masses over round starts: ``starts[n]`` is ``[S]`` or ``[B, S]``."""

    def __init__(self, T, D, init, start=0):
        init = np.asarray(init, dtype=np.float64)
        self.starts = np.zeros((T + 1,) + init.shape)
        self.starts[start] = init
        lead = init.shape[:-1]
        self.length = np.zeros((D + 1,) + lead)
        self.rejections = np.zeros(lead)
        self.accepted = np.zeros(lead)
        self.drafted = np.zeros(lead)


def _result(acc, T):
    calls = float(acc.starts[:T].sum())
    law = acc.length / max(acc.length.sum(), 1e-300)
    return TreeProtocolResult(
        T,
        calls,
        float(acc.rejections),
        float(acc.drafted),
        float(acc.accepted),
        T / calls,
        law,
        acc.starts[:T].copy(),
    )

"""The result of a tree generation and the forward masses both exact tree engines accumulate
(:mod:`.exact`, per node; :mod:`.enumerate`, per drafted tree)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ...exact.result import ProtocolResult

__all__ = ["TreeProtocolResult"]


@dataclass(frozen=True, repr=False)
class TreeProtocolResult(ProtocolResult):
    """Exact expectations of one generation of ``horizon`` tokens with a draft tree.

    A :class:`~spectheory.exact.ProtocolResult` (the same members: ``target_calls``,
    ``rejections``, ``draft_tokens``, ``accepted``, ``tokens_per_call``, ``accepted_counts``,
    ``accepted_count_law``, ``rejection_by_position``, ``round_starts``, ``time(cost)``,
    ``speedup(cost)``, ``summary()``) whose ``gamma`` is the tree's depth and whose
    ``round_drafts[n]`` is the number of tree nodes within the depth ``min(depth, T - n)`` a
    round started at ``n`` drafts. ``rejections`` counts rounds that emitted a correction,
    ``accepted`` accepted path lengths; ``accepted_counts[j]`` the expected rounds whose
    accepted path has ``j`` drafts; ``bonus_tokens`` the tokens after an accepted leaf.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.trees import DraftTree
    >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])  # always accepted
    >>> res = chain.protocol(10, tree=DraftTree.from_branching([2, 1]))
    >>> res.target_calls, res.draft_tokens, res.accepted_count_law.tolist()
    (4.0, 14.0, [0.0, 0.25, 0.75])
    """


class _Accumulator:
    """Forward masses over round starts: ``starts[n]`` is ``[S]`` or ``[B, S]``."""

    def __init__(self, T, D, init, start=0):
        init = np.asarray(init, dtype=np.float64)
        self.starts = np.zeros((T + 1,) + init.shape)
        self.starts[start] = init
        lead = init.shape[:-1]
        self.length = np.zeros((D + 1,) + lead)
        self.rejection_by_position = np.zeros((T,) + lead)
        self.accepted = np.zeros(lead)
        self.drafted = np.zeros(lead)

    def reject(self, n, mass):
        """Record ``mass`` of rounds whose correction token sits at kernel index ``n``."""
        self.rejection_by_position[n] += mass

    @property
    def rejections(self):
        return self.rejection_by_position.sum(0)


def _result(acc: _Accumulator, T: int, tree: Any, bonus: bool) -> TreeProtocolResult:
    drafts = np.array([tree.nodes_within(min(tree.max_depth, T - n)) for n in range(T)], dtype=np.int64)
    starts = acc.starts[:T].copy()
    counts = acc.length.copy()
    return TreeProtocolResult(
        horizon=T,
        gamma=tree.max_depth,
        bonus=bool(bonus),
        round_starts=starts,
        rejection_by_position=acc.rejection_by_position.copy(),
        accepted_counts=counts,
        # every position emits one token: accepted, a correction or a bonus token
        bonus_tokens=float(T - np.arange(counts.size) @ counts - acc.rejections) if bonus else 0.0,
        round_drafts=drafts,
        level_widths=np.bincount(tree.depth, minlength=tree.max_depth + 1),
    )

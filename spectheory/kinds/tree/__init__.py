"""The tree kind: a :class:`DraftTree` drafted under a child policy and checked by a tree rule
(:class:`TreeRound`), with its exact per-node engine (:func:`tree_protocol`,
:func:`tree_round_law`) and the Fraction-exact enumeration (:func:`tree_sequence_law`)."""

from .accumulate import TreeProtocolResult
from .draft_tree import DraftTree
from .enumerate import tree_sequence_law
from .exact import tree_protocol, tree_round_law
from .round import TreeRound

__all__ = [
    "DraftTree",
    "TreeRound",
    "TreeProtocolResult",
    "tree_protocol",
    "tree_round_law",
    "tree_sequence_law",
]

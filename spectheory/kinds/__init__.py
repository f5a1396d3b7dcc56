"""Round kinds, one folder each: what a round drafts, and all of its engine code.

The contract every kind implements is :class:`spectheory.rounds.Round` (``rounds/`` holds it
and the Monte Carlo driver, and imports no kind). Each folder here is one kind, with all of its engine code:

- ``path/``: :class:`~spectheory.kinds.path.PathRound` (the path's engines are its rule's);
- ``tree/``: :class:`~spectheory.kinds.tree.TreeRound`, :class:`~spectheory.kinds.tree.DraftTree`,
  the exact per-node engine and the Fraction enumeration;
- ``batch/``: :class:`~spectheory.kinds.batch.BatchRound`, its readings and their tree
  verifiers, the exact batch engine;
- ``dynamic/``: :class:`~spectheory.kinds.dynamic.DynamicTreeRound`, EAGLE-2's and OPT-Tree's
  rules;
- ``policy/``: :class:`~spectheory.kinds.policy.PolicyRound`, the draft-length policies and
  their exact engine (backward and forward recursions);
- ``scheduled/``: :class:`~spectheory.kinds.scheduled.ScheduledRound`, a batch verification
  schedule (:mod:`spectheory.schedules`) deciding each row's verified length.

:func:`as_round` turns a round argument or a shorthand (an ``int``, a ``DraftTree``, a
``Policy``) into a round. The theory built on a kind sits above it: optimal trees in
:mod:`spectheory.trees`, optimal stopping in :mod:`spectheory.stopping` (both re-export their
kind's public names). How a tree's children are drafted (child policies) is
:mod:`spectheory.children`, below the rules that read it.

Examples
--------
>>> from spectheory.kinds import as_round
>>> as_round(4)
PathRound(gamma=4, verifier='token')
"""

from .._lazy import lazy_exports

_EXPORTS = {
    "as_round": "spectheory.kinds.normalize",
    "PathRound": "spectheory.kinds.path",
    "TreeRound": "spectheory.kinds.tree",
    "DraftTree": "spectheory.kinds.tree",
    "BatchRound": "spectheory.kinds.batch",
    "DynamicTreeRound": "spectheory.kinds.dynamic",
    "PolicyRound": "spectheory.kinds.policy",
    "ScheduledRound": "spectheory.kinds.scheduled",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(
    __name__, _EXPORTS, submodules=("path", "tree", "batch", "dynamic", "policy", "scheduled")
)

r"""Token trees, exactly: draft trees, tree verifiers, exact values on chains, Sequoia audited.

Notation: p = target, q = draft (code says ``target``/``draft``). See docs/trees.md for the
tree protocol, what is counted and the losslessness proofs.

- :class:`DraftTree` -- topologies (parent list, per-depth branching, M paths, Sequoia shape);
- :mod:`.children` -- child policies (:class:`IID`, :class:`WithoutReplacement`,
  :class:`~spectheory.children.TopK`: objects with methods) and their exact node laws and sampler;
- :mod:`.verifiers` -- tree verifiers (:class:`RecursiveRejectionTree`,
  :class:`TraversalTree`; registered in the one registry as ``tree_rrs``, ``tree_rrs_wo``,
  ``tree_topk``, ``traversal``, ``traversal_iid``: ``get_verifier(name)``);
- :func:`tree_protocol` -- exact expectations on a :class:`~spectheory.DecodingChain`;
- :class:`TreeRound`, :class:`BatchRound` -- tree rounds for ``st.simulate`` (Monte Carlo);
- :mod:`spectheory.kinds.batch` -- batch decoding with M drafts, its three readings;
- :mod:`.gbv_tree` -- greedy multi-path block verification (:data:`GBV`) on ``K`` i.i.d. paths;
- :mod:`.sequoia` -- Sequoia's positional DP and its audit.
- :mod:`.by_batch` -- the best tree per batch size under a cost model (``docs/cost.md``).
- :mod:`spectheory.kinds.dynamic`, :mod:`.state_optimal` -- a tree per round start:
  EAGLE-2's and OPT-Tree's rules and the exact per-state optimal tree.
- :mod:`.optimum` -- the most drafts any lossless verifier accepts on a tree (the tree optimum).

>>> import spectheory as st
>>> from spectheory.trees import DraftTree, tree_protocol
>>> chain = st.DecodingChain.random(4, rng=1)
>>> res = tree_protocol(chain, 16, DraftTree.from_branching([3, 1]), "tree_rrs_wo")
>>> 1 < res.tokens_per_call < 3
True
"""

from ..kinds.batch.exact import BatchTreeResult, batch_readings, batch_tree_expected
from ..kinds.batch.round import BatchRound
from ..kinds.dynamic.round import DynamicTreeRound
from ..kinds.dynamic.rules import Eagle2Tree, OptTree
from ..kinds.tree.draft_tree import DraftTree
from ..kinds.tree.enumerate import tree_sequence_law
from ..kinds.tree.exact import TreeProtocolResult, tree_protocol, tree_round_law
from ..kinds.tree.round import TreeRound
from .by_batch import optimal_tree_by_batch
from .gbv_tree import GBV
from .longrun import StateTrees, long_run_tree_optimum, long_run_trees
from .optimum import tree_optimum
from .sequoia import exact_tree_value, optimal_tree_search, positional_vector, sequoia_positional_dp
from .state_optimal import OptimalTree, optimal_tree_dp

__all__ = [
    "DraftTree",
    "TreeProtocolResult",
    "tree_protocol",
    "tree_round_law",
    "tree_sequence_law",
    "TreeRound",
    "BatchRound",
    "BatchTreeResult",
    "batch_readings",
    "batch_tree_expected",
    "exact_tree_value",
    "optimal_tree_search",
    "positional_vector",
    "sequoia_positional_dp",
    "optimal_tree_by_batch",
    "DynamicTreeRound",
    "Eagle2Tree",
    "OptTree",
    "OptimalTree",
    "StateTrees",
    "long_run_tree_optimum",
    "long_run_trees",
    "optimal_tree_dp",
    "tree_optimum",
    "GBV",
]

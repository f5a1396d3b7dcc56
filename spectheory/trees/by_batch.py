r"""The best draft tree per batch size under a cost model (``docs/cost.md`` §5).

For a node budget ``n`` the tree that maximises tokens per call does not depend on the cost, so
Sequoia's dynamic program (:func:`~spectheory.trees.sequoia_positional_dp`, on the positional
acceptance vector measured exactly on the chain) proposes one candidate per budget; the cost
picks the budget. At batch ``B`` a tree of depth ``d`` with ``w_l`` nodes at depth ``l`` costs
:math:`\sum_{l<d} f_D(B, w_l, L)` to draft (one draft forward per level) and
:math:`f_T(B, n + 1, L)` to verify, so a wide tree that pays at batch 1 (memory-bound calls:
``n`` extra tokens are free) loses to a thin one once ``B (n + 1)`` passes the ridge. Each
candidate's exact generation (``chain.protocol``) is costed at every batch size by
:func:`spectheory.cost.optimal_round`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from ..cost.batch import crossover_batch, optimal_round
from ..cost.round_cost import CostModel
from ..kinds.tree.draft_tree import DraftTree
from ..kinds.tree.round import TreeRound
from .sequoia import positional_vector, sequoia_positional_dp

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["TreesByBatch", "optimal_tree_by_batch"]


@dataclass(frozen=True)
class TreesByBatch:
    """The best of Sequoia's trees (one per node budget) at each batch size.

    Attributes
    ----------
    batches, budgets : ndarray of int
    trees : list of DraftTree
        Sequoia's tree for each budget.
    speedup : ndarray, shape (len(batches), len(budgets))
        Exact speedup over plain decoding at the same batch size.
    best : ndarray of int, shape (len(batches),)
        Index (into ``budgets``) of the best tree per batch size.
    best_speedup : ndarray, shape (len(batches),)
    crossover : int or None
        Smallest batch size where even the best tree loses to plain decoding.
    """

    batches: np.ndarray
    budgets: np.ndarray
    trees: list[DraftTree]
    speedup: np.ndarray
    best: np.ndarray
    best_speedup: np.ndarray
    crossover: int | None

    @property
    def best_budget(self) -> np.ndarray:
        """The node budget of the best tree per batch size."""
        return self.budgets[self.best]


def optimal_tree_by_batch(
    chain: ChainLike,
    model: CostModel,
    batches: Sequence[int],
    horizon: int,
    *,
    budgets: Sequence[int] = (1, 2, 4, 8, 16),
    max_children: int = 4,
    verifier: Any = "tree_rrs_wo",
    context: float = 0.0,
    states: ArrayLike | None = None,
) -> TreesByBatch:
    """Sequoia's best tree for each node budget, costed exactly at each batch size.

    Parameters
    ----------
    chain : DecodingChain
        Homogeneous (the positional vector is measured under its stationary law, or ``states``).
    model : CostModel
    batches : sequence of int
    horizon : int
        Tokens per generation of the exact evaluation.
    budgets : sequence of int
        Drafted nodes per round of the candidates.
    max_children : int
        Children per node Sequoia's program may use.
    verifier : str or TreeVerifier
        The tree verifier (its child policy sets the positional vector).
    context : float
    states : array_like, optional
        State law of the positional vector.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.cost import named_cost
    >>> from spectheory.trees.by_batch import optimal_tree_by_batch
    >>> chain = st.DecodingChain.random(8, concentration=0.5, similarity=0.4, rng=0)
    >>> res = optimal_tree_by_batch(chain, named_cost("llama2-7b/68m-h200"), [1, 16, 256], 64)
    >>> res.best_budget.tolist(), res.crossover
    ([16, 8, 1], 256)
    """
    if not isinstance(model, CostModel):
        raise ValueError(f"model: expected a CostModel (spectheory.cost), got {type(model).__name__}")
    n = np.asarray(list(budgets), dtype=np.int64)
    if n.ndim != 1 or n.size == 0 or n.min() < 1:
        raise ValueError(f"budgets: expected node budgets >= 1, got {budgets!r}")
    a = positional_vector(chain, max_children, verifier, states)
    trees = [sequoia_positional_dp(a, tree_size=int(b) + 1)[1] for b in n]
    rounds = [TreeRound(t, verifier) for t in trees]
    best, best_speedup, table = optimal_round(chain, rounds, model, batches, horizon, context=context)
    B = np.asarray(list(batches), dtype=np.int64)
    return TreesByBatch(B, n, trees, table, best, best_speedup, crossover_batch(best_speedup, B))

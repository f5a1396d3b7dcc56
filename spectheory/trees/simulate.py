"""Deprecated: Monte Carlo of tree rounds is ``st.simulate(chain, T, tree, verifier=...)``.

:func:`simulate_tree` and ``TreeSimulationResult`` stay one release: the function plays a
:class:`~spectheory.trees.TreeRound` through the one driver (:mod:`spectheory.rounds.driver`),
the result type is :class:`~spectheory.rounds.SimulationResult` (same draws for the same seed
as before; ``length_counts`` is ``accepted_hist``).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..rounds.driver import run_rounds
from ..rounds.result import SimulationResult
from .children import draw_children
from .draft_tree import DraftTree
from .round import MAX_ELEMENTS, TreeRound

__all__ = ["draw_children", "simulate_tree"]


def simulate_tree(
    chain: Any,
    horizon: int,
    tree: DraftTree,
    verifier: Any = "tree_rrs",
    n_runs: int = 1000,
    rng: Any = None,
    bonus: bool = True,
    return_tokens: bool = False,
    max_elements: int = MAX_ELEMENTS,
) -> SimulationResult:
    """Deprecated: ``st.simulate(chain, horizon, TreeRound(tree, verifier), n_runs, rng, ...)``.

    Examples
    --------
    >>> import warnings, spectheory as st
    >>> from spectheory.trees import DraftTree, simulate_tree
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     sim = simulate_tree(st.DecodingChain.random(3, rng=0), 6, DraftTree.from_branching([2]), n_runs=10)
    >>> w[0].category.__name__, sim.n_runs
    ('DeprecationWarning', 10)
    """
    warnings.warn(
        "simulate_tree is deprecated; use st.simulate(chain, horizon, tree, n_runs, rng, verifier=...)",
        DeprecationWarning,
        stacklevel=2,
    )
    rnd = TreeRound(tree, verifier, max_elements=max_elements)
    return run_rounds(
        chain, horizon, rnd, n_runs, rng, bonus=bonus, return_tokens=return_tokens, progress=False
    )


def __getattr__(name: str) -> Any:
    if name == "TreeSimulationResult":
        warnings.warn(
            "TreeSimulationResult is deprecated; st.simulate returns a SimulationResult for every round",
            DeprecationWarning,
            stacklevel=2,
        )
        return SimulationResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

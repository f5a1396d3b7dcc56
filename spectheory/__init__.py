"""spectheory: exact theory, Monte Carlo and a real decoder for speculative decoding.

Notation: in code the two models are always ``target`` (the large model whose law the
output must follow; *p* in Leviathan et al.) and ``draft`` (the small proposer; *q*).

The everyday names live here: the one-position laws (:mod:`spectheory.laws`), Leviathan et
al.'s closed forms under i.i.d. acceptance (``iid_*``, not to be confused with the exact
values of a chain, ``chain.expected_tokens_per_call(T, gamma)``), the central object
:class:`DecodingChain`, the round kinds (:class:`PathRound`, :class:`TreeRound`,
:class:`BatchRound`, :class:`PolicyRound`) and the Monte Carlo driver :func:`simulate`; a
computation estimated above the size limits raises :class:`SizeError` before it starts.
Everything else is in the subpackages (``spectheory.trees``, ``spectheory.stopping``,
``spectheory.analysis``, ...), which are imported on first use: ``import spectheory`` loads numpy and the one-position laws,
nothing heavier (no scipy.stats, no torch).

>>> import spectheory as st
>>> float(st.acceptance_rate([0.2, 0.8], [0.5, 0.5]))
0.7
>>> round(float(st.iid_tokens_per_call(0.5, 3)), 6)
1.875
"""

from typing import TYPE_CHECKING

from ._lazy import lazy_exports
from .laws.closed_form import (
    iid_accepted_count_law,
    iid_causal_acceptance,
    iid_mean_accepted,
    iid_operations_factor,
    iid_optimal_gamma,
    iid_speedup,
    iid_tokens_per_call,
)
from .laws.distributions import (
    acceptance_probs,
    acceptance_rate,
    maximal_coupling,
    residual,
    speculative_step_law,
    speculative_step_parts,
    tv,
)

if TYPE_CHECKING:  # the lazy names, for type checkers
    from ._sizes import SizeError
    from .chain.constructors import ngram_counts
    from .chain.decoding_chain import DecodingChain
    from .cost import CostModel
    from .kinds.batch.round import BatchRound
    from .kinds.normalize import as_round
    from .kinds.path.round import PathRound
    from .kinds.policy.round import PolicyRound
    from .kinds.tree.draft_tree import DraftTree
    from .kinds.tree.round import TreeRound
    from .montecarlo.simulate import simulate
    from .montecarlo.simulator import sample_target
    from .rounds import Cost, Round, SimulationResult

__version__ = "0.2.0"

#: Names loaded on first use (the chain, the rounds and the simulator pull in scipy.sparse and
#: the engines).
_LAZY = {
    "DecodingChain": "spectheory.chain.decoding_chain",
    "ngram_counts": "spectheory.chain.constructors",
    "simulate": "spectheory.montecarlo.simulate",
    "SimulationResult": "spectheory.rounds",
    "sample_target": "spectheory.montecarlo.simulator",
    "Round": "spectheory.rounds",
    "PathRound": "spectheory.kinds.path.round",
    "TreeRound": "spectheory.kinds.tree.round",
    "BatchRound": "spectheory.kinds.batch.round",
    "PolicyRound": "spectheory.kinds.policy.round",
    "DraftTree": "spectheory.kinds.tree.draft_tree",
    "as_round": "spectheory.kinds.normalize",
    "Cost": "spectheory.rounds",
    "CostModel": "spectheory.cost",
    "SizeError": "spectheory._sizes",
}

_SUBPACKAGES = (
    "analysis",
    "app",
    "chain",
    "children",
    "cost",
    "decoder",
    "exact",
    "kinds",
    "laws",
    "montecarlo",
    "objectives",
    "rounds",
    "stopping",
    "teaching",
    "testing",
    "trees",
    "validation",
    "verifiers",
)

__all__ = [
    # the central object, rounds and the Monte Carlo driver
    "DecodingChain",
    "ngram_counts",
    "simulate",
    "SimulationResult",
    "sample_target",
    "Round",
    "PathRound",
    "TreeRound",
    "BatchRound",
    "PolicyRound",
    "DraftTree",
    "as_round",
    "Cost",
    "CostModel",
    # one position
    "tv",
    "acceptance_rate",
    "acceptance_probs",
    "residual",
    "maximal_coupling",
    "speculative_step_law",
    "speculative_step_parts",
    # Leviathan et al.'s closed forms under i.i.d. acceptance
    "iid_tokens_per_call",
    "iid_mean_accepted",
    "iid_causal_acceptance",
    "iid_speedup",
    "iid_optimal_gamma",
    "iid_accepted_count_law",
    "iid_operations_factor",
    # a computation refused up front (above the size limits)
    "SizeError",
]

__getattr__, __dir__ = lazy_exports(__name__, _LAZY, _SUBPACKAGES)

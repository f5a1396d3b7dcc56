"""spectheory: exact theory, Monte Carlo and a real decoder for speculative decoding.

Notation: in code the two models are always ``target`` (the large model whose law the
output must follow; *p* in Leviathan et al.) and ``draft`` (the small proposer; *q*).

>>> import spectheory as st
>>> float(st.acceptance_rate([0.2, 0.8], [0.5, 0.5]))
0.7
"""

from .chain import DecodingChain, ngram_counts
from .laws.closed_form import (
    accepted_count_law,
    arithmetic_operations_factor,
    causal_acceptance,
    expected_tokens_per_call,
    mean_accepted,
    optimal_gamma,
    walltime_speedup,
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
from .montecarlo.simulator import sample_target
from .rounds import Cost, PathRound, Round, SimulationResult, as_round, simulate
from .trees.batch_round import BatchRound
from .trees.draft_tree import DraftTree
from .trees.round import TreeRound

__version__ = "0.1.0"

__all__ = [
    "DecodingChain",
    "ngram_counts",
    "accepted_count_law",
    "arithmetic_operations_factor",
    "causal_acceptance",
    "expected_tokens_per_call",
    "mean_accepted",
    "optimal_gamma",
    "walltime_speedup",
    "acceptance_probs",
    "acceptance_rate",
    "maximal_coupling",
    "residual",
    "speculative_step_law",
    "speculative_step_parts",
    "tv",
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
]


def __getattr__(name: str):
    """``st.PolicyRound`` on first use (the draft-length policies' room is not imported eagerly)."""
    if name == "PolicyRound":
        from .stopping.round import PolicyRound

        return PolicyRound
    raise AttributeError(f"module 'spectheory' has no attribute {name!r}")

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
from .montecarlo.simulator import SimulationResult, sample_target, simulate

__version__ = "0.1.0"

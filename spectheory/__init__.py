"""spectheory: exact theory, Monte Carlo and a real decoder for speculative decoding.

Notation: in code the two models are always ``target`` (the large model whose law the
output must follow; *p* in Leviathan et al.) and ``draft`` (the small proposer; *q*).

>>> import spectheory as st
>>> float(st.acceptance_rate([0.2, 0.8], [0.5, 0.5]))
0.7
"""
from .laws.distributions import (tv, acceptance_rate, residual, acceptance_probs,
                            speculative_step_law, speculative_step_parts, maximal_coupling)
from .laws.closed_form import (expected_tokens_per_call, walltime_speedup, optimal_gamma,
                          accepted_count_law, arithmetic_operations_factor, mean_accepted,
                          causal_acceptance)
from .chain import DecodingChain, ngram_counts
from .montecarlo.simulator import simulate, sample_target, SimulationResult

__version__ = "0.1.0"

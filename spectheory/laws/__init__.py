"""One position, no chain: total variation, acceptance, the residual, Leviathan et al.'s i.i.d.
formulas (:mod:`.closed_form`) and the sampling primitives shared by every simulator
(:mod:`.sampling`). Notation: p = target, q = draft."""
from .distributions import (tv, acceptance_rate, residual, acceptance_probs, speculative_step_law,
                            speculative_step_parts, maximal_coupling)
from .closed_form import (expected_tokens_per_call, walltime_speedup, optimal_gamma, accepted_count_law,
                          arithmetic_operations_factor, mean_accepted, causal_acceptance)

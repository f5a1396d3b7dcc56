"""One position, no chain: total variation, acceptance, the residual, Leviathan et al.'s i.i.d.
formulas (:mod:`.closed_form`) and the sampling primitives shared by every simulator
(:mod:`.sampling`). Notation: p = target, q = draft."""

from .closed_form import (
    accepted_count_law,
    arithmetic_operations_factor,
    causal_acceptance,
    expected_tokens_per_call,
    mean_accepted,
    optimal_gamma,
    walltime_speedup,
)
from .distributions import (
    acceptance_probs,
    acceptance_rate,
    maximal_coupling,
    residual,
    speculative_step_law,
    speculative_step_parts,
    tv,
)

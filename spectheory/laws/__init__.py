"""One position, no chain: total variation, acceptance, the residual, Leviathan et al.'s
closed forms under i.i.d. acceptance (:mod:`.closed_form`, every name ``iid_*``) and the
sampling primitives shared by every simulator (:mod:`.sampling`). Notation: p = target,
q = draft. numpy only."""

from .closed_form import (
    iid_accepted_count_law,
    iid_causal_acceptance,
    iid_mean_accepted,
    iid_operations_factor,
    iid_optimal_gamma,
    iid_speedup,
    iid_tokens_per_call,
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

__all__ = [
    "tv",
    "acceptance_rate",
    "acceptance_probs",
    "residual",
    "maximal_coupling",
    "speculative_step_law",
    "speculative_step_parts",
    "iid_tokens_per_call",
    "iid_mean_accepted",
    "iid_causal_acceptance",
    "iid_speedup",
    "iid_optimal_gamma",
    "iid_accepted_count_law",
    "iid_operations_factor",
]

"""One position, no chain: total variation, acceptance, the residual, Leviathan et al.'s
closed forms under i.i.d. acceptance (:mod:`.closed_form`, every name ``iid_*``) and the
sampling primitives shared by every simulator (:mod:`.sampling`). Notation: p = target,
q = draft. numpy only."""

from .._lazy import lazy_package

#: public name -> the submodule defining it
_EXPORTS = {
    "tv": "distributions",
    "acceptance_rate": "distributions",
    "acceptance_probs": "distributions",
    "residual": "distributions",
    "maximal_coupling": "distributions",
    "speculative_step_law": "distributions",
    "speculative_step_parts": "distributions",
    "iid_tokens_per_call": "closed_form",
    "iid_mean_accepted": "closed_form",
    "iid_causal_acceptance": "closed_form",
    "iid_speedup": "closed_form",
    "iid_optimal_gamma": "closed_form",
    "iid_accepted_count_law": "closed_form",
    "iid_operations_factor": "closed_form",
}

__all__, __getattr__, __dir__ = lazy_package(__name__, _EXPORTS)

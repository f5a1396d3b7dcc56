"""The draft-objective lab: which draft to train (issue 26; ``docs/draft_objectives.md``).

- the restricted draft family, a draft that sees a coarser state than the target
  (:mod:`.family`): :class:`TiedDraft`, the lab's targets :func:`context_chain`;
- the multi-step objective, exact expected target calls differentiable in the draft
  (:mod:`.multistep`): :func:`expected_calls_torch` (torch autograd) and
  :func:`expected_calls_gradient` (the adjoint recursion, numpy);
- drafts fitted by forward KL, reverse KL, JSD, TV or tokens per call (:mod:`.fitted_drafts`):
  :func:`fit_draft`, :class:`FittedDraft`, :func:`divergence`, :func:`state_weights`;
- the draft temperature (:mod:`.temperature`): :func:`tempered`,
  :func:`optimal_draft_temperature` on chains, :func:`temperature_sweep` along target paths of
  the shipped models.

Names load on first use; torch is imported only by the functions that need it.
"""

from .._lazy import lazy_package

_EXPORTS = {
    "TiedDraft": "family",
    "context_chain": "family",
    "transition_tensor": "multistep",
    "expected_calls_torch": "multistep",
    "expected_calls_gradient": "multistep",
    "calls_and_gradient": "multistep",
    "DIVERGENCES": "fitted_drafts",
    "OBJECTIVES": "fitted_drafts",
    "divergence": "fitted_drafts",
    "state_weights": "fitted_drafts",
    "fit_draft": "fitted_drafts",
    "FittedDraft": "fitted_drafts",
    "tempered": "temperature",
    "tempered_chain": "temperature",
    "TemperatureOptimum": "temperature",
    "optimal_draft_temperature": "temperature",
    "temperature_sweep": "temperature",
}

__all__, __getattr__, __dir__ = lazy_package(__name__, _EXPORTS)

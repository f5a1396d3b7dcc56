"""The theory checked against the real decoder (torch for the decoder parts).

- losslessness measured (:mod:`.lossless`): :func:`exact_two_token_law`, :func:`lossless_check`,
  :data:`BROKEN_RULES`;
- Rao-Blackwellised predictions of rejections, calls, draft steps and accepted-count laws
  (:mod:`.predict`): :func:`rb_predictions`, :func:`first_round_law`, :func:`measure_decoder`,
  :func:`compare_theory`, along paths and their exact statistics (:mod:`.paths`):
  :func:`sample_paths`, :func:`path_statistics`;
- the Markov abstraction (:mod:`.markov`): :func:`fit_order_k_chain`, :func:`chain_predictions`;
  certified fits along target paths for any state abstraction (:mod:`.abstraction`:
  :func:`fit_abstraction`, :func:`plugin_bound`), context trees (:mod:`.context_tree`:
  :class:`ContextTree`), hidden-state clusters (:mod:`.hidden_states`), exact coarsenings and
  bootstrap intervals (:mod:`.certified`: :func:`coarsen`, :func:`bootstrap_interval`);
- draft-length policies, Rao-Blackwellised along target paths (:mod:`.policy_predict`):
  :func:`policy_path_inputs`, :func:`predict_policy`;
- speed (:mod:`.speed`): :func:`measure_speed`;
- wall time and throughput at every batch size (:mod:`.cost_predict`, :mod:`.cost_rounds`,
  :mod:`.cost_timing`; any round reaches them through its ``along_path`` method and the visitor
  of :mod:`.along_path`, each kind's one jump kernel in :mod:`.round_kernels`): :func:`sample_target_paths`, :func:`predict_time`,
  :class:`DecoderTiming`, :func:`measure_overhead`; the same fitted on the decoder's own
  logged calls, each run predicted from the others (:mod:`.cost_insitu`:
  :func:`measure_logged`, :func:`insitu_timing`, :func:`predict_held_out`); and which configuration to run
  (:mod:`.tuning`): :func:`tune`, :class:`TuneResult`;
- repeated prompts prefilled once, same samples (:mod:`.prefill_view`): :func:`shared_prefill`.

Names load on first use (``spectheory._lazy``): the torch-free fits (:mod:`.markov`,
:mod:`.context_tree`, :mod:`.abstraction`, :mod:`.certified`) import and run without torch;
the rest needs it.
"""

from .._lazy import lazy_exports

#: public name -> the submodule defining it (the everyday names; the rest are imported from
#: their modules)
_EXPORTS = {
    "exact_two_token_law": "lossless",
    "lossless_check": "lossless",
    "fit_order_k_chain": "markov",
    "fit_abstraction": "abstraction",
    "plugin_bound": "abstraction",
    "ContextTree": "context_tree",
    "HiddenStateAbstraction": "hidden_states",
    "PathStatistics": "paths",
    "path_statistics": "paths",
    "measure_decoder": "predict",
    "compare_theory": "predict",
    "mean_se": "paths",
    "zscore": "paths",
    "repeat_prompts": "paths",
    "round_dp": "predict",
    "sample_paths": "paths",
    "measure_speed": "speed",
    "resolve_models": "speed",
    "policy_path_inputs": "policy_predict",
    "predict_policy": "policy_predict",
    "dynamic_tree_along_paths": "dynamic_trees",
    "predict_time": "cost_predict",
    "tune": "tuning",
    "TuneResult": "tuning",
    "shared_prefill": "prefill_view",
}

__all__ = list(_EXPORTS)

__getattr__, __dir__ = lazy_exports(
    __name__, {name: f"{__name__}.{module}" for name, module in _EXPORTS.items()}
)

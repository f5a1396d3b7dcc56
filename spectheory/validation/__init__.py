"""The theory checked against the real decoder (torch).

- losslessness measured (:mod:`.lossless`): :func:`exact_two_token_law`, :func:`lossless_check`,
  :data:`BROKEN_RULES`; the shipped models to validate: :func:`resolve_models`;
- Rao-Blackwellised predictions of rejections, calls, draft steps and accepted-count laws
  (:mod:`.predict`, each kind's outcome kernel in :mod:`.round_kernels`): :func:`round_dp`,
  :func:`measure_decoder`, :func:`compare_theory`, along paths and their exact statistics
  (:mod:`.path_stats`): :func:`sample_paths`, :func:`path_statistics`;
- draft trees (:mod:`.tree_decoding`, :mod:`.tree_rounds`, :mod:`.tree_forced`, :mod:`.tree_pruned`) and
  dynamic trees (:mod:`.dynamic_trees`: :func:`dynamic_tree_along_paths`) against the decoder;
- draft-length policies, Rao-Blackwellised along target paths (:mod:`.policy_predict`):
  :func:`policy_path_inputs`, :func:`predict_policy`;
- repeated prompts prefilled once, same samples (:mod:`.prefill_view`): :func:`shared_prefill`.

Which configuration to run, predicted from the same paths, is :mod:`spectheory.tuning`; the
Markov abstraction of the models is :mod:`spectheory.abstraction`.

Names load on first use (``spectheory._lazy``).
"""

from .._lazy import lazy_package

#: public name -> the submodule defining it (the everyday names; the rest are imported from
#: their modules)
_EXPORTS = {
    "exact_two_token_law": "lossless",
    "lossless_check": "lossless",
    "PathStatistics": "path_stats",
    "path_statistics": "path_stats",
    "measure_decoder": "predict",
    "compare_theory": "predict",
    "mean_se": "path_stats",
    "zscore": "path_stats",
    "repeat_prompts": "path_stats",
    "round_dp": "predict",
    "sample_paths": "path_stats",
    "resolve_models": "lossless",
    "policy_path_inputs": "policy_predict",
    "predict_policy": "policy_predict",
    "dynamic_tree_along_paths": "dynamic_trees",
    "shared_prefill": "prefill_view",
}

__all__, __getattr__, __dir__ = lazy_package(__name__, _EXPORTS)

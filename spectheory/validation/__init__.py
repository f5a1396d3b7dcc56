"""The theory checked against the real decoder (needs torch).

- losslessness measured (:mod:`.lossless`): :func:`exact_two_token_law`, :func:`lossless_check`,
  :data:`BROKEN_RULES`;
- Rao-Blackwellised predictions of rejections, calls, draft steps and accepted-count laws
  (:mod:`.predict`): :func:`sample_paths`, :func:`path_statistics`, :func:`rb_predictions`,
  :func:`first_round_law`, :func:`measure_decoder`, :func:`compare_theory`;
- the Markov abstraction (:mod:`.markov`): :func:`fit_order_k_chain`, :func:`chain_predictions`;
  certified fits along target paths for any state abstraction (:mod:`.abstraction`:
  :func:`fit_abstraction`, :func:`plugin_bound`), context trees (:mod:`.context_tree`:
  :class:`ContextTree`), hidden-state clusters (:mod:`.hidden_states`), exact coarsenings and
  bootstrap intervals (:mod:`.certified`: :func:`coarsen`, :func:`bootstrap_interval`);
- draft-length policies, Rao-Blackwellised along target paths (:mod:`.policy_predict`):
  :func:`policy_path_inputs`, :func:`predict_policy`;
- speed (:mod:`.speed`): :func:`measure_speed`.
"""

from .abstraction import chain_summary, fit_abstraction, plugin_bound, state_sums
from .certified import bootstrap_interval, bootstrap_weights, coarsen, prefix_tree_labels
from .context_tree import ContextTree
from .hidden_states import HiddenStateAbstraction, kmeans, last_hidden_states
from .lossless import (
    BROKEN_RULES,
    BrokenCorrection,
    decoder_two_token_samples,
    exact_two_token_law,
    lossless_check,
    model_device,
    pooled_chisquare,
)
from .markov import chain_predictions, context_keys, fit_order_k_chain
from .policy_predict import policy_path_inputs, predict_policy
from .predict import (
    PathStatistics,
    compare_theory,
    first_round_law,
    mean_se,
    measure_decoder,
    path_statistics,
    rb_predictions,
    repeat_prompts,
    round_dp,
    sample_paths,
    zscore,
)
from .speed import measure_speed, resolve_models

__all__ = [
    "BROKEN_RULES",
    "exact_two_token_law",
    "lossless_check",
    "pooled_chisquare",
    "BrokenCorrection",
    "decoder_two_token_samples",
    "model_device",
    "fit_order_k_chain",
    "chain_predictions",
    "context_keys",
    "fit_abstraction",
    "plugin_bound",
    "state_sums",
    "chain_summary",
    "coarsen",
    "prefix_tree_labels",
    "bootstrap_weights",
    "bootstrap_interval",
    "ContextTree",
    "HiddenStateAbstraction",
    "kmeans",
    "last_hidden_states",
    "PathStatistics",
    "path_statistics",
    "rb_predictions",
    "first_round_law",
    "measure_decoder",
    "compare_theory",
    "mean_se",
    "zscore",
    "repeat_prompts",
    "round_dp",
    "sample_paths",
    "measure_speed",
    "resolve_models",
    "policy_path_inputs",
    "predict_policy",
]

"""The Markov abstraction of real models: chains fitted along target paths, certified.

A *state abstraction* maps every prefix to one of ``S`` states; fitted along target paths it
turns the models' next-token laws into a :class:`~spectheory.DecodingChain` that the exact theory
evaluates (the proofs: ``docs/markov_abstraction.md``).

- order-``k`` chains fitted to model samples (:mod:`.markov`): :func:`fit_order_k_chain`,
  :func:`chain_predictions`;
- one fit for any partition of prefixes, and its plug-in bound (:mod:`.fitting`):
  :func:`fit_abstraction`, :func:`plugin_bound`;
- variable-order contexts (:mod:`.context_tree`): :class:`ContextTree`;
- k-means clusters of the target's last hidden state (:mod:`.hidden_states`, torch):
  :class:`HiddenStateAbstraction`;
- exact coarsenings and bootstrap intervals (:mod:`.certified`): :func:`coarsen`,
  :func:`bootstrap_interval`;
- a real model at its real vocabulary: last-token states, sparse top-k rows with certified tails
  (:mod:`.sparse_markov`): :func:`fit_last_token_chain`.

Names load on first use (``spectheory._lazy``): every fit but the hidden-state clusters
imports and runs without torch.

Examples
--------
The order-1 contexts of a binary path after a one-token prompt: the empty context and the two
tokens.

>>> import numpy as np
>>> from spectheory.abstraction import ContextTree
>>> ContextTree.order_k(np.array([[0, 1, 0, 1, 1]]), n_prompt=1, order=1, vocab_size=2).n_states
3
"""

from .._lazy import lazy_package

#: public name -> the submodule defining it (the everyday names; the rest are imported from
#: their modules)
_EXPORTS = {
    "fit_order_k_chain": "markov",
    "chain_predictions": "markov",
    "fit_abstraction": "fitting",
    "plugin_bound": "fitting",
    "ContextTree": "context_tree",
    "HiddenStateAbstraction": "hidden_states",
    "coarsen": "certified",
    "bootstrap_interval": "certified",
    "fit_last_token_chain": "sparse_markov",
}

__all__, __getattr__, __dir__ = lazy_package(__name__, _EXPORTS)

"""Views of a ``transformers`` decoder-only model that share its modules: what the drafts of
:mod:`spectheory.decoder.real_drafts` and :mod:`spectheory.decoder.real_drafts_distilled` are
built from (no weight is copied unless asked).

Examples
--------
>>> from transformers import LlamaConfig, LlamaForCausalLM
>>> cfg = LlamaConfig(vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=3,
...                   num_attention_heads=2, num_key_value_heads=1, tie_word_embeddings=True)
>>> hf = LlamaForCausalLM(cfg)
>>> two = first_layers(hf, 2)
>>> len(two.model.layers), two.config.num_hidden_layers, two.lm_head is hf.lm_head
(2, 2, True)
"""

from __future__ import annotations

import copy
from typing import Any

from torch import nn

__all__ = ["shell", "first_layers"]


def shell(module: nn.Module) -> Any:
    """A shallow copy of ``module`` whose tables of children, parameters and buffers are its own
    (their entries still shared): replacing a child of the copy leaves ``module`` unchanged."""
    out = copy.copy(module)
    out._modules = dict(module._modules)
    out._parameters = dict(module._parameters)
    out._buffers = dict(module._buffers)
    return out


def first_layers(hf: Any, n_layers: int, copy_layers: bool = False) -> Any:
    """``hf`` (a causal LM with ``.model.layers``, ``.model.norm``, ``.lm_head``) cut to its first
    ``n_layers`` decoder layers, then its final norm and head: the early exit. The embedding,
    norm and head are shared; the layers too unless ``copy_layers`` (then fresh copies, e.g. to
    train them). ``config.num_hidden_layers`` of the view is ``n_layers``.

    Raises
    ------
    ValueError
        ``n_layers`` outside ``1..len(hf.model.layers)``.
    """
    n = len(hf.model.layers)
    if isinstance(n_layers, bool) or not isinstance(n_layers, int) or not 1 <= n_layers <= n:
        raise ValueError(f"layers must be in [1, {n}], got {n_layers!r}")
    config = copy.deepcopy(hf.config)
    config.num_hidden_layers = n_layers
    kept = list(hf.model.layers)[:n_layers]
    inner = shell(hf.model)
    inner.layers = nn.ModuleList([copy.deepcopy(layer) for layer in kept] if copy_layers else kept)
    inner.config = config
    outer = shell(hf)
    outer.model = inner
    outer.config = config
    return outer

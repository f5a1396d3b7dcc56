"""The PyTorch speculative decoder, the shipped small models and model adapters (torch only; the
theory-versus-decoder checks live in :mod:`spectheory.validation`).

- models: :func:`load_model`, :func:`list_models`, :func:`registered_models`, :func:`model_info`,
  :func:`load_model_from` (:mod:`.registry`); real pretrained LLMs by name:
  :func:`load_pretrained` (:mod:`.pretrained`, with its tokenizer and names,
  the ``real`` extra); :class:`GPT`, :class:`GPTConfig` (:mod:`.model`); :class:`NGramModel`
  (:mod:`.ngram_model`; its torch-free chain is :class:`spectheory.chain.ngram.NGramChain`);
  :class:`HFCausalLM` (:mod:`.hf`, HuggingFace models);
- single-path decoding: :func:`speculative_generate`, :func:`autoregressive_generate`
  (:mod:`.speculative`); :func:`hf_speculative_generate` (:mod:`.hf_generate`);
- one entry point taking the round ``st.simulate`` takes: :func:`generate` (:mod:`.dispatch`);
- token trees: :func:`tree_generate` (:mod:`.tree_decode`), :class:`ModelDrafter` (:mod:`.tree_draft`);
- Medusa heads: :func:`medusa_generate`, :func:`load_heads`, :class:`MedusaHeads`,
  :class:`MedusaDrafter`, :func:`sparse_tree`, :func:`typical_rule` (:mod:`.medusa`);
- the held-out corpus windows the validations decode: :func:`heldout_windows` (:mod:`.corpus`).

Needs torch (``pip install "spectheory[decoder]"``); the rest of spectheory imports
without it. Names are resolved lazily so that ``import spectheory.decoder`` itself
never imports torch.
"""

from .._lazy import lazy_package

#: public name -> the submodule defining it
_EXPORTS = {
    "list_models": "registry",
    "registered_models": "registry",
    "load_model": "registry",
    "load_model_from": "registry",
    "model_info": "registry",
    "load_pretrained": "pretrained",
    "GPT": "model",
    "GPTConfig": "model",
    "NGramModel": "ngram_model",
    "HFCausalLM": "hf",
    "speculative_generate": "speculative",
    "autoregressive_generate": "autoregressive",
    "hf_speculative_generate": "hf_generate",
    "tree_generate": "tree_decode",
    "generate": "dispatch",
    "GenerationResult": "generation_result",
    "ModelDrafter": "tree_draft",
    "medusa_generate": "medusa",
    "load_heads": "medusa",
    "MedusaHeads": "medusa",
    "MedusaDrafter": "medusa",
    "sparse_tree": "medusa",
    "typical_rule": "medusa",
    "heldout_windows": "corpus",
}

__all__, __getattr__, __dir__ = lazy_package(__name__, _EXPORTS)

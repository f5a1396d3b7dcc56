"""The PyTorch speculative decoder, the shipped small models and model adapters (torch only; the
theory-versus-decoder checks live in :mod:`spectheory.validation`).

Needs torch (``pip install "spectheory[decoder]"``); the rest of spectheory imports
without it. Names are resolved lazily so that ``import spectheory.decoder`` itself
never imports torch.
"""

import importlib

_EXPORTS = {
    "list_models": "registry",
    "load_model": "registry",
    "model_info": "registry",
    "GPT": "model",
    "GPTConfig": "model",
    "NGramModel": "ngram",
    "speculative_generate": "speculative",
    "autoregressive_generate": "speculative",
    "HFCausalLM": "hf",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f".{_EXPORTS[name]}", __name__)
    return getattr(module, name)

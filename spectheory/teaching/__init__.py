"""Teaching material: a toy word-level language pair and the engine behind ``spectheory demo``.

See :mod:`spectheory.teaching.toy` (models, one round, exact predictions) and
:mod:`spectheory.teaching.render` (terminal text bars and per-step figures).
"""

from .._lazy import lazy_package

#: public name -> the submodule defining it
_EXPORTS = {
    "WORDS": "toy",
    "ToyModels": "toy",
    "toy_models": "toy",
    "accepts": "toy",
    "acceptance_ratio": "toy",
    "StepRecord": "toy",
    "RoundRecord": "toy",
    "play_round": "toy",
    "expected_accepted": "toy",
    "rejection_probability": "toy",
}

__all__, __getattr__, __dir__ = lazy_package(__name__, _EXPORTS)

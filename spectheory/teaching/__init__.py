"""Teaching material: a toy word-level language pair and the engine behind ``spectheory demo``.

See :mod:`spectheory.teaching.toy` (models, one round, exact predictions) and
:mod:`spectheory.teaching.render` (terminal text bars and per-step figures).
"""

from .toy import (
    WORDS,
    RoundRecord,
    StepRecord,
    ToyModels,
    acceptance_ratio,
    accepts,
    expected_accepted,
    play_round,
    rejection_probability,
    toy_models,
)

__all__ = [
    "WORDS",
    "ToyModels",
    "toy_models",
    "accepts",
    "acceptance_ratio",
    "StepRecord",
    "RoundRecord",
    "play_round",
    "expected_accepted",
    "rejection_probability",
]

"""The policy kind: draft one token at a time until a draft-length policy stops
(:class:`PolicyRound`), the policies (:class:`Policy`, :class:`FixedGamma`, ...) and their exact
engine (:func:`evaluate_policy`, :class:`PolicyValue`). Optimal policies, oracles and
controllers built on it are in :mod:`spectheory.stopping`."""

from .evaluate import PolicyValue, evaluate_policy
from .policies import (
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    Policy,
    RejectionThreshold,
    StartStatePolicy,
    StopContext,
    leviathan_policy,
)
from .round import PolicyRound

__all__ = [
    "PolicyRound",
    "Policy",
    "StopContext",
    "FixedGamma",
    "ConfidenceThreshold",
    "EntropyRule",
    "RejectionThreshold",
    "HFSchedule",
    "StartStatePolicy",
    "leviathan_policy",
    "PolicyValue",
    "evaluate_policy",
]

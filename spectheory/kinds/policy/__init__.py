"""The policy kind: draft one token at a time until a draft-length policy stops
(:class:`PolicyRound`), the policies (:mod:`.policies`: :class:`Policy`, :class:`FixedGamma`,
SpecDec++'s threshold, HF's schedules, ...) and their exact engine (:func:`evaluate_policy`,
:class:`PolicyValue`). Optimal policies, oracles and controllers built on it, and every public
name here, are in :mod:`spectheory.stopping`."""

from .evaluate import PolicyValue, evaluate_policy
from .policies import FixedGamma, Policy
from .round import PolicyRound

__all__ = ["PolicyRound", "Policy", "FixedGamma", "PolicyValue", "evaluate_policy"]

"""Fronts, bounds and closed forms that are not rules: what the best rule can do, computed.

The rules themselves (verifiers one can run) live in :mod:`spectheory.verifiers`; this room
imports them and never the other way round.

- :mod:`.sequence_front` -- the exact sequence-level front: the fewest expected rejections any
  rule can pay at a sequence-level TV budget (a linear program over the prefix tree,
  :mod:`.sequence_front_lp`, :mod:`.sequence_front_tree`), and the rule attaining it;
  :mod:`.sequence_front_gaps` -- how far the heuristic lossy rules sit above it;
- :mod:`.pareto` -- the one-position (rejection, TV loss) Pareto front of lossy rules and the
  sequence-level TV of a rule on a chain, by enumeration;
- :mod:`.optimal_transport` -- the optimal multi-draft acceptance (a transport bound, computed
  with a sort by the prefix-set theorem); :mod:`.drafting_laws` -- the same for greedy
  drafting (top tokens plus random ones, Hu et al. 2025) and any drafting law given as tuples;
- :mod:`.verdicts` -- claimed vs exact: each verification rule's claim (lossless, accepts more
  than another rule) against its exact law by Fraction enumeration;
- :mod:`.batch_closed_form` -- closed forms of batch decoding with ``M`` drafts (Bernoulli and
  uniform instances, the i.i.d. horizon formula); :mod:`.batch_chain` -- its exact expected
  rejections on a chain.

>>> from spectheory.analysis import optimal_multidraft_acceptance, pareto_front
>>> round(optimal_multidraft_acceptance([0.5, 0.5], [0.9, 0.1], 2), 6)
0.69
>>> pareto_front([0.2, 0.8], [0.5, 0.5], num=2).rejection.round(12).tolist()
[0.3, 0.0]
"""

from .batch_chain import BatchRejections, batch_expected_rejections
from .batch_closed_form import (
    bernoulli_batch_rejection,
    iid_batch_expected_rejections,
    uniform_batch_rejection,
    uniform_instance,
)
from .drafting_laws import greedy_optimal_acceptance
from .optimal_transport import optimal_multidraft_acceptance
from .pareto import ParetoFront, pareto_front, sequence_front, sequence_tv
from .sequence_front import SequenceFront, optimal_rule_chain, optimal_sequence_front, optimal_sequence_rule
from .sequence_front_gaps import FrontGap, front_gaps, heuristic_rules
from .sequence_front_lp import front_lp
from .sequence_front_tree import prefix_forest, rule_point
from .verdicts import RULE_CLAIMS, RuleClaim, settle_claims

__all__ = [
    # the sequence-level front
    "SequenceFront",
    "optimal_sequence_front",
    "optimal_rule_chain",
    "optimal_sequence_rule",
    "FrontGap",
    "front_gaps",
    "heuristic_rules",
    "front_lp",
    "prefix_forest",
    "rule_point",
    # Pareto fronts and sequence-level TV
    "ParetoFront",
    "pareto_front",
    "sequence_tv",
    "sequence_front",
    # optimal multi-draft acceptance
    "optimal_multidraft_acceptance",
    "greedy_optimal_acceptance",
    # batch decoding closed forms and exact values
    "BatchRejections",
    "batch_expected_rejections",
    "bernoulli_batch_rejection",
    "uniform_batch_rejection",
    "uniform_instance",
    "iid_batch_expected_rejections",
    # claimed vs exact
    "RuleClaim",
    "RULE_CLAIMS",
    "settle_claims",
]

"""Serving questions settled exactly (issue 39): what engines do around the round.

- :mod:`.speculation_cache` -- speculative speculative decoding (SSD / Saguaro): the joint law
  of a round's outcome (accepted count, emitted token), the exact hit probability of a
  fan-out allocation, the optimal allocation, and the paper's power-law assumption tested;
- :mod:`.ssd_law` -- the exact output law of SSD rounds, cache hits and misses (Fractions), so
  that a cache-miss path that verifies against the wrong draft law is caught.

>>> from spectheory.serving import speculation_cache, ssd_law
"""

from .speculation_cache import hit_probability, optimal_fanout, outcome_law, power_law_test, round_start_law
from .ssd_law import ssd_output_law, target_law

__all__ = [
    "outcome_law",
    "round_start_law",
    "hit_probability",
    "optimal_fanout",
    "power_law_test",
    "ssd_output_law",
    "target_law",
]

"""Rounds: what a speculative round drafts and which verifier checks it, and the one Monte
Carlo driver that plays any of them (:func:`simulate`, returning :class:`SimulationResult`).

- :class:`Round` -- the base class of round kinds (one method, :meth:`Round.play`), and
  :class:`RoundOutcome`, what a round did;
- :class:`PathRound` -- a path of ``gamma`` drafts and a single-path verifier; tree rounds
  (:class:`spectheory.trees.TreeRound`, :class:`spectheory.trees.BatchRound`) and draft-length
  policy rounds (:class:`spectheory.stopping.PolicyRound`) live with their rooms;
- :func:`as_round` -- an ``int``, a ``DraftTree``, a policy or a round -> a round;
- :func:`simulate` -- the Monte Carlo entry point (``st.simulate``), :class:`SimulationResult`;
- :class:`ChainSampler`, :class:`Cost`, :func:`mean_and_se` -- the sampler, the cost model and
  the SE convention every round and result shares.

See ``docs/architecture.md`` for the call graph and how to add a round kind.
"""

from ..cost.base import Cost, as_cost
from .base import ENGINES, Round, RoundOutcome, RoundRuns, RoundTags, UnsupportedRoundError
from .driver import run_rounds
from .normalize import as_round
from .path import PathRound
from .result import STATISTICS, SimulationResult
from .sampler import ChainSampler, sample_initial
from .simulate import simulate
from .stats import mean_and_se

__all__ = [
    "Round",
    "RoundOutcome",
    "RoundRuns",
    "RoundTags",
    "UnsupportedRoundError",
    "ENGINES",
    "PathRound",
    "as_round",
    "simulate",
    "run_rounds",
    "SimulationResult",
    "STATISTICS",
    "ChainSampler",
    "sample_initial",
    "Cost",
    "as_cost",
    "mean_and_se",
]

"""Rounds: the contract every round kind implements, and the one Monte Carlo driver that plays
any of them (:func:`run_rounds`, returning :class:`SimulationResult`). This room imports no
round kind: the kinds live one folder each in :mod:`spectheory.kinds`, and the Monte Carlo
entry point ``st.simulate`` (which turns a shorthand into a round) in
:mod:`spectheory.montecarlo`.

- :class:`Round` -- the base class of round kinds (:meth:`Round.play`, :meth:`Round.exact`,
  :meth:`Round.decode`, :meth:`Round.check_plan`, :meth:`Round.along_path`), what it supports
  (:class:`RoundTags`, :data:`ENGINES`), and :class:`RoundOutcome`, what a round did;
- :func:`run_rounds` -- the Monte Carlo driver, :class:`SimulationResult`;
- :class:`ChainSampler`, :class:`Cost`, :func:`mean_and_se` -- the sampler, the cost model and
  the SE convention every round and result shares.

See ``docs/architecture.md`` for the call graph and how to add a round kind.
"""

from .._deprecation import moved_names
from ..cost.base import Cost, as_cost
from .base import ENGINES, Round, RoundOutcome, RoundRuns, RoundTags, UnsupportedRoundError
from .driver import run_rounds
from .result import STATISTICS, SimulationResult
from .sampler import ChainSampler, sample_initial
from .standard_error import mean_and_se

__all__ = [
    "Round",
    "RoundOutcome",
    "RoundRuns",
    "RoundTags",
    "UnsupportedRoundError",
    "ENGINES",
    "run_rounds",
    "SimulationResult",
    "STATISTICS",
    "ChainSampler",
    "sample_initial",
    "Cost",
    "as_cost",
    "mean_and_se",
]

#: The path kind, ``as_round`` and ``simulate`` moved out of this room in 0.3.0 (it imports no
#: round kind); the old names warn until 0.4.0.
__getattr__ = moved_names(
    __name__,
    {
        "PathRound": ("spectheory.kinds.path", "PathRound"),
        "as_round": ("spectheory.kinds.normalize", "as_round"),
        "simulate": ("spectheory.montecarlo.simulate", "simulate"),
    },
    remove_in="0.4.0",
)

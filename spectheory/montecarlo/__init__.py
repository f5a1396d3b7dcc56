"""Monte Carlo of the protocol, vectorised over runs, with one result type
(:class:`SimulationResult`): :func:`simulate` for every single-path
:class:`~spectheory.verifiers.Verifier`, :func:`simulate_batch` for batch decoding with ``M``
drafts (first-token construction), :func:`sequence_tv_mc` for the sequence-level TV of lossy
rules, :func:`sample_target` for plain target sampling."""

from .positional import simulate_batch, simulate_positional
from .sequence_tv import sequence_tv_mc
from .simulator import STATISTICS, SimulationResult, sample_target, simulate
from .stats import mean_and_se, pooled_chisquare

__all__ = [
    "simulate",
    "sample_target",
    "SimulationResult",
    "mean_and_se",
    "STATISTICS",
    "simulate_batch",
    "simulate_positional",
    "sequence_tv_mc",
    "pooled_chisquare",
]

"""One Monte Carlo simulator of the protocol (:func:`simulate`, vectorised over runs) and its
result type (:class:`SimulationResult`)."""
from .simulator import STATISTICS, SimulationResult, mean_and_se, sample_target, simulate

__all__ = ["simulate", "sample_target", "SimulationResult", "mean_and_se", "STATISTICS"]

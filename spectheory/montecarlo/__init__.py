"""Monte Carlo: :func:`simulate` (``st.simulate``, the one entry point for every round kind,
from :mod:`spectheory.rounds`) and its one result type :class:`SimulationResult`;
:func:`sequence_tv_mc` for the sequence-level TV of lossy rules, :func:`sample_target` for plain
target sampling, :func:`pooled_chisquare` and :func:`mean_and_se` (the SE convention)."""

from .chisquare import mean_and_se, pooled_chisquare
from .sequence_tv import sequence_tv_mc
from .simulator import STATISTICS, SimulationResult, sample_target, simulate

__all__ = [
    "simulate",
    "sample_target",
    "SimulationResult",
    "mean_and_se",
    "STATISTICS",
    "sequence_tv_mc",
    "pooled_chisquare",
]

"""Deprecated: Monte Carlo of draft-length policies is ``st.simulate(chain, T, policy, cost=...)``.

:func:`simulate_policy` and ``StoppingSimulation`` stay one release: the function plays a
:class:`~spectheory.stopping.PolicyRound` through the one driver (:mod:`spectheory.rounds.driver`;
same draws for the same seed as before), the result type is
:class:`~spectheory.rounds.SimulationResult` (``target_time`` and ``time`` under the cost).
"""

from __future__ import annotations

import warnings
from typing import Any

from ..exact.cost import as_cost
from ..rounds.driver import run_rounds
from ..rounds.result import SimulationResult
from .round import PolicyRound

__all__ = ["simulate_policy"]


def simulate_policy(
    chain: Any,
    policy: Any,
    horizon: int,
    cost: Any = None,
    n_runs: int = 1000,
    rng: Any = None,
    progress: bool | None = None,
) -> SimulationResult:
    """Deprecated: ``st.simulate(chain, horizon, policy, n_runs, rng, cost=cost)``.

    ``cost=None`` costs the runs with ``Cost(0)`` (the result always has ``time``), as before.

    Examples
    --------
    >>> import warnings, spectheory as st
    >>> from spectheory.stopping import FixedGamma, simulate_policy
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])   # always accepted
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     res = simulate_policy(chain, FixedGamma(4), 10, 0.1, n_runs=50, rng=0)
    >>> int(res.target_calls.max()), float(res.time().max())
    (2, 2.8)
    """
    warnings.warn(
        "simulate_policy is deprecated; use st.simulate(chain, horizon, policy, n_runs, rng, cost=cost)",
        DeprecationWarning,
        stacklevel=2,
    )
    return run_rounds(chain, horizon, PolicyRound(policy), n_runs, rng, cost=as_cost(cost), progress=progress)


def __getattr__(name: str) -> Any:
    if name == "StoppingSimulation":
        warnings.warn(
            "StoppingSimulation is deprecated; st.simulate returns a SimulationResult for every round",
            DeprecationWarning,
            stacklevel=2,
        )
        return SimulationResult
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

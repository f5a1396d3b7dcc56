"""Self-contained sweep tasks: each takes plain parameters (seed included) and returns plain data.

They are module-level functions so that :func:`spectheory.app.sweeps.run_sweep` can ship them to
local processes or a Dask cluster, and their results are identical wherever they run.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from .._typing import RNGLike
from ..chain.decoding_chain import DecodingChain

if TYPE_CHECKING:
    from ..chain import DecodingChain

__all__ = ["COUNTERS", "exact_counters", "exact_vs_monte_carlo", "counter_rows", "chain_task"]


#: The protocol counters compared exactly against Monte Carlo, by SimulationResult field name.
COUNTERS = ("target_calls", "rejections", "draft_tokens")


def exact_counters(chain: DecodingChain, horizon: int, gamma: int, bonus: bool = True) -> dict:
    """The exact expectation of each counter of :data:`COUNTERS` (``chain.protocol``)."""
    res = chain.protocol(horizon, gamma, bonus=bonus)
    return {name: float(getattr(res, name)) for name in COUNTERS}


def exact_vs_monte_carlo(
    chain: DecodingChain,
    horizon: int,
    gamma: int,
    n_runs: int,
    rng: RNGLike = None,
    bonus: bool = True,
    progress: bool | None = None,
) -> list[dict]:
    """Exact expectation and Monte Carlo mean, SE and z-score of each protocol counter.

    Returns one dict per counter of :data:`COUNTERS`: ``quantity``, ``exact``, ``mc_mean``,
    ``mc_se`` and ``z = (mc_mean - exact) / mc_se`` (0 when the SE is 0).

    Examples
    --------
    >>> import spectheory as st
    >>> rows = exact_vs_monte_carlo(st.DecodingChain.random(3, rng=0), 6, 2, 500, rng=1)
    >>> [r["quantity"] for r in rows]
    ['target_calls', 'rejections', 'draft_tokens']
    """
    from ..montecarlo.simulator import mean_and_se, simulate

    sim = simulate(chain, horizon, gamma, n_runs, rng=rng, bonus=bonus, progress=progress)
    estimates = {name: mean_and_se(getattr(sim, name)) for name in COUNTERS}
    return counter_rows(exact_counters(chain, horizon, gamma, bonus), estimates)


def counter_rows(exact: Mapping[str, float], estimates: Mapping[str, tuple[float, float]]) -> list[dict]:
    """One dict per counter of :data:`COUNTERS`: ``quantity``, ``exact``, ``mc_mean``, ``mc_se``
    and ``z = (mc_mean - exact) / mc_se`` (0 when the SE is 0), from the exact values and the
    Monte Carlo ``(mean, se)`` by counter name."""
    rows = []
    for name in COUNTERS:
        mean, se = estimates[name]
        value = float(exact[name])
        z = (mean - value) / se if se > 0 else 0.0
        rows.append({"quantity": name, "exact": value, "mc_mean": mean, "mc_se": se, "z": z})
    return rows


def chain_task(
    seed: int,
    gamma: int,
    vocab_size: int = 8,
    horizon: int = 32,
    n_runs: int = 2000,
    n_states: int | None = None,
    concentration: float = 1.0,
    bonus: bool = True,
) -> dict:
    """Exact and Monte Carlo statistics of one random chain (Dirichlet, seeded).

    Returns a dict of floats: exact expected target calls / rejections / draft tokens, and the
    Monte Carlo means and standard errors of the same, with the z-scores.

    Examples
    --------
    >>> r = chain_task(seed=0, gamma=2, vocab_size=3, horizon=4, n_runs=100)
    >>> sorted(r)[:3]
    ['calls_exact', 'calls_mc', 'calls_se']
    """
    chain = DecodingChain.random(vocab_size, n_states=n_states, concentration=concentration, rng=seed)
    mc_stream = np.random.SeedSequence([seed, 1])  # independent of the chain's stream (not seed + 1)
    out = {}
    for row in exact_vs_monte_carlo(
        chain, horizon, gamma, n_runs, rng=mc_stream, bonus=bonus, progress=False
    ):
        name = "calls" if row["quantity"] == "target_calls" else row["quantity"]
        out.update(
            {
                f"{name}_exact": row["exact"],
                f"{name}_mc": row["mc_mean"],
                f"{name}_se": row["mc_se"],
                f"{name}_z": row["z"],
            }
        )
    return out

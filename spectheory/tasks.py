"""Self-contained sweep tasks: each takes plain parameters (seed included) and returns plain data.

They are module-level functions so that :func:`spectheory.sweeps.run_sweep` can ship them to
local processes or a Dask cluster, and their results are identical wherever they run.
"""
from __future__ import annotations

from .chain import DecodingChain

__all__ = ["chain_task"]


def chain_task(seed: int, gamma: int, vocab_size: int = 8, horizon: int = 32, n_runs: int = 2000,
               n_states: int | None = None, concentration: float = 1.0, bonus: bool = True) -> dict:
    """Exact and Monte Carlo statistics of one random chain (Dirichlet, seeded).

    Returns a dict of floats: exact expected target calls / rejections / draft tokens, and the
    Monte Carlo means and standard errors of the same, with the z-scores.

    Examples
    --------
    >>> r = chain_task(seed=0, gamma=2, vocab_size=3, horizon=4, n_runs=100)
    >>> sorted(r)[:3]
    ['calls_exact', 'calls_mc', 'calls_se']
    """
    from .montecarlo import simulate

    chain = DecodingChain.random(vocab_size, n_states=n_states, concentration=concentration, rng=seed)
    sim = simulate(chain, horizon, gamma, n_runs, rng=seed + 1, bonus=bonus, progress=False)
    exact = {
        "calls": chain.expected_target_calls(horizon, gamma, bonus=bonus),
        "rejections": chain.expected_rejections(horizon, gamma=gamma, bonus=bonus),
        "draft_tokens": chain.expected_draft_tokens(horizon, gamma, bonus=bonus),
    }
    sampled = {"calls": sim.target_calls, "rejections": sim.rejections, "draft_tokens": sim.draft_tokens}
    out = {}
    for name, value in exact.items():
        x = sampled[name]
        mean, se = float(x.mean()), float(x.std(ddof=1) / len(x) ** 0.5)
        out[f"{name}_exact"] = float(value)
        out[f"{name}_mc"] = mean
        out[f"{name}_se"] = se
        out[f"{name}_z"] = (mean - float(value)) / se if se > 0 else 0.0
    return out

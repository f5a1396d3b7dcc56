r"""The comparison behind fig10 and ``simulations/stopping_policies.py``: each shipped rule against the optimum.

For one chain, horizon and cost, :func:`policy_table` evaluates exactly the rules that
engines ship, each with its published default or tuned at its best on a small grid (an
upper bound on what tuning can buy), plus the state- and path-information optima, and
reports every time as a ratio to the best optimum computed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ..cost.base import as_cost
from ..kinds.policy.evaluate import evaluate_policy
from ..kinds.policy.policies import (
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    RejectionThreshold,
    leviathan_policy,
)
from .optimal import optimal_policy

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from ..cost.base import Cost

__all__ = ["policy_table", "POLICY_NAMES", "path_feasible"]

#: Row names of :func:`policy_table`, in plotting order.
POLICY_NAMES = (
    "Leviathan gamma",
    "best fixed gamma",
    "HF confidence 0.4",
    "HF schedule",
    "HF schedule + confidence",
    "entropy rule (tuned)",
    "SpecDec++ threshold (tuned)",
    "optimum (state)",
    "optimum (path)",
)

ENTROPY_GRID = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0)
REJECTION_GRID = (0.1, 0.3, 0.5, 0.7, 0.9)


def path_feasible(chain: ChainLike, max_depth: int, max_nodes: int = 2_000_000) -> bool:
    """Whether the drafted-path tree (``S (V + ... + V^D)`` nodes at most) fits ``max_nodes``."""
    V, S = chain.vocab_size, chain.n_states
    return S * sum(V**i for i in range(1, max_depth + 1)) <= max_nodes


def policy_table(
    chain: ChainLike,
    horizon: int,
    cost: Cost | float | None,
    max_depth: int = 6,
    paths: bool | None = None,
) -> dict:
    """Exact time of each rule of ``POLICY_NAMES`` and its ratio to the optimum.

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
    cost : Cost or float
    max_depth : int
        Longest draft of every rule and of the optima.
    paths : bool, optional
        Compute the path (oracle) rules and optimum; default: when the path tree is small.

    Returns
    -------
    dict
        ``{name: {"time", "ratio", "reference", "tokens_per_call", "detail"}}``; ``ratio`` is
        the time over the path optimum's (``reference`` "path"), or over the state optimum's
        when paths are off (``"state"``; rules that look along the drafted path may then be
        below 1).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping.sweep import policy_table
    >>> tab = policy_table(st.DecodingChain.random(3, rng=0), 10, 0.1, max_depth=3)
    >>> round(tab["optimum (path)"]["ratio"], 12)
    1.0
    """
    T = chain.check_horizon(horizon)
    cost = as_cost(cost)
    D = max_depth
    paths = path_feasible(chain, D) if paths is None else bool(paths)
    out = {}

    def put(name, value, detail=""):
        out[name] = {"time": value.time(), "tokens_per_call": value.tokens_per_call, "detail": detail}

    lev = leviathan_policy(chain, T, cost, max_depth=D)
    put("Leviathan gamma", evaluate_policy(chain, lev, T, cost), f"gamma={lev.gamma}")
    fixed = [evaluate_policy(chain, FixedGamma(g), T, cost) for g in range(1, D + 1)]
    g = int(np.argmin([v.time() for v in fixed]))
    put("best fixed gamma", fixed[g], f"gamma={g + 1}")
    put("HF confidence 0.4", evaluate_policy(chain, ConfidenceThreshold(0.4, max_depth=D), T, cost))
    put("HF schedule", evaluate_policy(chain, HFSchedule(min(5, D), max_depth=D), T, cost))
    put(
        "HF schedule + confidence",
        evaluate_policy(chain, HFSchedule(min(5, D), max_depth=D, confidence=0.4), T, cost),
    )
    ent = [evaluate_policy(chain, EntropyRule(h, max_depth=D), T, cost) for h in ENTROPY_GRID]
    i = int(np.argmin([v.time() for v in ent]))
    put("entropy rule (tuned)", ent[i], f"threshold={ENTROPY_GRID[i]}")
    put("optimum (state)", optimal_policy(chain, T, cost, "state", D))
    if paths:
        rej = [evaluate_policy(chain, RejectionThreshold(h, max_depth=D), T, cost) for h in REJECTION_GRID]
        i = int(np.argmin([v.time() for v in rej]))
        put("SpecDec++ threshold (tuned)", rej[i], f"threshold={REJECTION_GRID[i]}")
        put("optimum (path)", optimal_policy(chain, T, cost, "path", D))
    ref = "path" if paths else "state"
    best = out[f"optimum ({ref})"]["time"]
    for row in out.values():
        row["ratio"] = row["time"] / best
        row["reference"] = ref
    return out

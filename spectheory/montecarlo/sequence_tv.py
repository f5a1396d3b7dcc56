"""Monte Carlo of the sequence-level total variation of a lossy rule (the exact value, by
enumeration, is :func:`spectheory.analysis.pareto.sequence_tv`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._typing import RNGLike
from ..analysis.pareto import sequence_log_likelihoods
from ..verifiers.rejection import RejectionRule
from .simulator import mean_and_se, simulate

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["sequence_tv_mc"]


def sequence_tv_mc(
    chain: ChainLike,
    horizon: int,
    rule: RejectionRule,
    n_runs: int,
    rng: RNGLike = None,
    gamma: int | None = None,
    bonus: bool = True,
) -> tuple[float, float, np.ndarray]:
    r"""Monte Carlo :math:`\mathrm{TV}(G, P_T) = E_G[(1 - P_T(X)/G(X))_+]` with its standard error.

    Sequences are simulated with :func:`spectheory.montecarlo.simulate` (the rule as
    verifier; ``gamma=None`` drafts to the end of the horizon); the estimator is unbiased. Returns ``(estimate, standard_error, rejections)`` where
    ``rejections`` is the simulation's per-run rejection counts.
    """
    T = chain.check_horizon(horizon)
    G = T if gamma is None else gamma
    res = simulate(chain, T, G, n_runs, rng=rng, bonus=bonus, verifier=rule, return_tokens=True)
    assert res.tokens is not None  # return_tokens=True
    lg, lt = sequence_log_likelihoods(chain, T, rule, res.tokens, gamma, bonus)
    vals = np.maximum(1.0 - np.exp(lt - lg), 0.0)
    mean, se = mean_and_se(vals)
    return mean, se, res.rejections

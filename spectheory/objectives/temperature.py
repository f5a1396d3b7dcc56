r"""The draft temperature: the one maximising exact tokens per call, for a given target temperature.

Sampling at temperature ``tau`` draws from :math:`p^{1/\tau} / \sum_x p^{1/\tau}`
(:func:`tempered`). The target runs at ``tau_t`` (the user's choice: it fixes the output law);
the draft's temperature ``tau_d`` is free, since token verification is lossless for any draft.
:func:`optimal_draft_temperature` maximises the exact tokens per call over ``tau_d`` on a chain
(a grid search refined locally: the best over the grid and its neighbourhood, not a certified
global optimum);
:func:`temperature_sweep` computes tokens per call for a grid of ``tau_d`` along target paths
of real models (the paths sampled at ``tau_t`` and both models' logits computed once; the
Rao-Blackwellised round bookkeeping :func:`spectheory.validation.predict.round_dp` per
``tau_d``). HuggingFace's default assistant temperature of 1.5 is the comparison of
``docs/draft_objectives.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..chain import DecodingChain

if TYPE_CHECKING:
    import torch

    from ..decoder.batching import CausalLM

__all__ = [
    "tempered",
    "tempered_chain",
    "TemperatureOptimum",
    "optimal_draft_temperature",
    "temperature_sweep",
]


def _check_tau(tau: float, name: str) -> float:
    t = float(tau)
    if not (np.isfinite(t) and t > 0):
        raise ValueError(f"{name}: must be a finite temperature > 0, got {tau!r}")
    return t


def tempered(law: ArrayLike, tau: float) -> np.ndarray:
    r"""``law ** (1 / tau)`` renormalised on the last axis (zeros stay zero).

    Examples
    --------
    >>> tempered([0.2, 0.8], 1.0).tolist()
    [0.2, 0.8]
    >>> tempered([0.2, 0.8], 0.5).round(4).tolist()          # sharper
    [0.0588, 0.9412]
    """
    t = _check_tau(tau, "tau")
    p = np.asarray(law, dtype=np.float64)
    with np.errstate(divide="ignore"):
        z = np.log(p) / t
    z = z - z.max(-1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(-1, keepdims=True)


def tempered_chain(
    chain: DecodingChain, target_temperature: float, draft_temperature: float
) -> DecodingChain:
    """``chain`` with its target at ``target_temperature`` and its draft at ``draft_temperature``
    (same initial law and transitions)."""
    ns: Any = chain.next_state
    if chain.is_stochastic:
        ns = chain.transition_law.toarray().reshape(chain.n_states, chain.vocab_size, -1)
    return DecodingChain(
        tempered(chain.target, target_temperature),
        tempered(chain.draft, draft_temperature),
        chain.initial,
        ns,
        max_horizon=chain.max_horizon,
    )


@dataclass(frozen=True)
class TemperatureOptimum:
    """The best draft temperature: ``temperature``, its ``tokens_per_call``, and the grid searched
    (``grid``, ``grid_tokens_per_call``)."""

    temperature: float
    tokens_per_call: float
    grid: np.ndarray
    grid_tokens_per_call: np.ndarray


def optimal_draft_temperature(
    chain: DecodingChain,
    horizon: int,
    gamma: int,
    target_temperature: float = 1.0,
    *,
    bonus: bool = True,
    bounds: tuple[float, float] = (0.2, 5.0),
    grid: int = 25,
) -> TemperatureOptimum:
    r"""Draft temperature maximising exact tokens per call, the target at ``target_temperature``.

    A grid of ``grid`` points uniform in ``log tau_d`` over ``bounds``, then a bounded scalar
    search (Brent) in ``log tau_d`` between the best grid point's neighbours.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.random(4, concentration=0.5, similarity=0.5, rng=0)
    >>> best = optimal_draft_temperature(chain, 16, 3)
    >>> bool(best.tokens_per_call >= tempered_chain(chain, 1.0, 1.0).protocol(16, 3).tokens_per_call)
    True
    """
    from scipy.optimize import minimize_scalar

    T = chain.check_horizon(horizon)
    g = check_int(gamma, "gamma", 1)
    tt = _check_tau(target_temperature, "target_temperature")
    lo, hi = (_check_tau(b, "bounds") for b in bounds)
    if not lo < hi:
        raise ValueError(f"bounds: expected low < high, got {bounds!r}")
    n = check_int(grid, "grid", 3)

    def tpc(log_tau: float) -> float:
        return tempered_chain(chain, tt, float(np.exp(log_tau))).protocol(T, g, bonus=bonus).tokens_per_call

    xs = np.linspace(np.log(lo), np.log(hi), n)
    ys = np.array([tpc(x) for x in xs])
    k = int(np.argmax(ys))
    a, b = xs[max(k - 1, 0)], xs[min(k + 1, n - 1)]
    res = minimize_scalar(lambda x: -tpc(x), bounds=(a, b), method="bounded", options={"xatol": 1e-4})
    x, y = (float(res.x), -float(res.fun)) if -res.fun >= ys[k] else (float(xs[k]), float(ys[k]))
    return TemperatureOptimum(float(np.exp(x)), y, np.exp(xs), ys)


def temperature_sweep(
    target: CausalLM,
    draft: CausalLM,
    prompts: ArrayLike,
    horizon: int,
    n_paths: int,
    seed: int,
    target_temperature: float,
    draft_temperatures: Sequence[float],
    gammas: Sequence[int],
    *,
    bonus: bool = True,
    batch_size: int = 64,
    device: str | torch.device | None = None,
) -> dict[str, np.ndarray]:
    r"""Tokens per call for each draft temperature along target paths of real models.

    ``n_paths`` target paths of ``horizon`` tokens after the prompts (cycled,
    :func:`~spectheory.validation.path_stats.repeat_prompts`), sampled at ``target_temperature``
    (seed ``seed``); both models' logits are computed once along them. For each ``tau_d`` the
    per-position rejection probability of the token taken is ``max(0, 1 - q(x)/p(x))`` (``q`` the
    draft at ``tau_d``, ``p`` the target at ``tau_t``), and
    :func:`~spectheory.validation.predict.round_dp` gives each path's expected calls per
    ``gamma`` (Rao-Blackwellised, as :func:`~spectheory.validation.predict.rb_predictions`).

    Returns
    -------
    dict
        ``calls`` ``[n_tau, n_gamma, N]`` (expected calls per path), ``tokens_per_call`` and
        ``tokens_per_call_se`` ``[n_tau, n_gamma]`` (``T / mean(calls)``, delta-method SE),
        ``acceptance`` ``[n_tau]`` (``1 - E[TV]`` per position) and its ``acceptance_se``.
    """
    import torch

    from ..decoder.logits import logits_to_probs
    from ..validation.lossless import model_device
    from ..validation.path_stats import mean_se, repeat_prompts, sample_paths
    from ..validation.predict import round_dp

    T = check_int(horizon, "horizon", 1)
    N = check_int(n_paths, "n_paths", 2)
    tt = _check_tau(target_temperature, "target_temperature")
    taus = [_check_tau(t, "draft_temperatures") for t in draft_temperatures]
    gs = [check_int(g, "gammas", 1) for g in gammas]
    if not taus or not gs:
        raise ValueError("draft_temperatures, gammas: need at least one value each")
    prompts = repeat_prompts(prompts, N)
    L = prompts.shape[1]
    paths = sample_paths(
        target, prompts, T, seed, batch_size=batch_size, sampling=(tt, None, None), device=device
    )
    dev = device if device is not None else model_device(target)
    calls = np.zeros((len(taus), len(gs), N))
    tv = np.zeros((len(taus), N))
    with torch.inference_mode():
        for lo in range(0, N, batch_size):
            ids = torch.as_tensor(paths[lo : lo + batch_size], device=dev)
            lt = target(ids[:, :-1])[:, L - 1 :]
            ld = draft(ids[:, :-1])[:, L - 1 :]
            pt = logits_to_probs(lt, tt)
            x = ids[:, L:, None]
            px = pt.gather(-1, x)[..., 0]
            for a, tau in enumerate(taus):
                qd = logits_to_probs(ld, tau)
                qx = qd.gather(-1, x)[..., 0]
                reject = torch.clamp(1.0 - qx / px, min=0.0).cpu().numpy()
                tv[a, lo : lo + len(ids)] = (0.5 * (pt - qd).abs().sum(-1)).mean(-1).cpu().numpy()
                for b, g in enumerate(gs):
                    calls[a, b, lo : lo + len(ids)] = round_dp(reject, g, bonus)["target_calls"]
    m, se = mean_se(calls, axis=-1)
    acc, acc_se = mean_se(1.0 - tv, axis=-1)
    return {
        "calls": calls,
        "tokens_per_call": T / m,
        "tokens_per_call_se": T * se / m**2,
        "acceptance": acc,
        "acceptance_se": acc_se,
    }

r"""Rao-Blackwellised theory predictions for the real decoder, and what the decoder measures.

Notation: p = target, q = draft (laws after temperature/top-k/top-p); a generation of
``T`` new tokens after a prompt; the protocol of ``docs/protocol.md``.

**Rejections (bonus off), Theorem 1 of Yin et al.** With ``bonus=False`` every position is
produced by a draft check, so

.. math:: E[\text{rejections}] = \sum_{n=1}^{T} E_{x_{<n} \sim p}\,\mathrm{TV}(p(\cdot|x_{<n}), q(\cdot|x_{<n})).

:func:`path_statistics` samples target paths and evaluates the exact TV at every position
with one forward pass of each model; the mean over paths of ``sum_n TV_n`` is unbiased,
with its standard error over paths (the prefixes are sampled, the TVs are exact).

**Everything else, given a target path (exact round bookkeeping).** The decoder's output is
target-distributed, and the joint law of a trajectory factorises as
``prod_n p(x_n|x_<n)`` times, at every *checked* position, ``min(p, q)(x_n)/p(x_n)``
(accepted) or ``(p - q)^+(x_n)/p(x_n)`` (rejected, the token came from the residual); bonus
positions carry no factor. So, given the output sequence, the checks are independent
Bernoulli rejections with

.. math:: r_n = \max(0, 1 - q(x_n|x_{<n}) / p(x_n|x_{<n})),

and which positions are checked follows from the earlier outcomes. :func:`round_dp` runs
the rounds as an exact dynamic programme over (round start position) given ``r``, giving
the conditional expectations of target calls, rejections, draft steps and the number of
rounds with each accepted count ``j``; averaging over target paths gives unbiased
predictions for every ``gamma`` and both bonus settings from one set of paths. (Round
starts are *not* target-typical prefixes — they follow rejections — which is why the
accepted-count law is not the average of per-prefix laws over all positions.)

**First round, along draft paths.** The first round starts at the prompt. Given a draft path
``y_1..y_gamma ~ q``, the round accepts at least ``j`` tokens with probability
``prod_{i<=j} min(1, p(y_i)/q(y_i))`` (per-position acceptances along the draft path);
:func:`first_round_law` averages this over draft paths: the law of the first round's
accepted count, compared with the decoder's first rounds.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._guards import check_int
from ..decoder.rng import derive_seed, row_seeds
from ..kinds.policy.outcome_kernels import outcome_dp
from .path_stats import PathStatistics, mean_se, path_statistics, repeat_prompts, sample_paths, zscore
from .round_kernels import path_outcomes

if TYPE_CHECKING:
    import torch

    from ..decoder.batching import CausalLM

__all__ = [
    "repeat_prompts",
    "PathStatistics",
    "path_statistics",
    "sample_paths",
    "round_dp",
    "rb_predictions",
    "first_round_law",
    "measure_decoder",
    "zscore",
    "mean_se",
    "compare_theory",
]

#: Independent streams of one validation seed (:func:`~spectheory.decoder.rng.derive_seed`):
#: the target paths of the predictions and the draft paths of the first-round law; the decoder's
#: own sequences use the seed itself.
STREAM_TARGET_PATHS, STREAM_DRAFT_PATHS = 1, 2


def round_dp(
    reject: np.ndarray, gamma: int, bonus: bool, caps: ArrayLike | None = None
) -> dict[str, np.ndarray]:
    """Exact expected round statistics given per-position rejection probabilities: the dynamic
    programme of the path kind's jump kernel (:func:`~spectheory.kinds.policy.outcome_kernels.outcome_dp` of
    :func:`~.round_kernels.path_outcomes`).

    Rounds start at position 0; a round at ``n`` checks ``k = min(gamma, T - n)`` positions
    ``n..n+k-1``, each rejected independently with probability ``reject[:, m]``; it stops
    at the first rejection (which emits the residual at that position) or, after ``k``
    acceptances, emits a bonus token at ``n + k`` if ``bonus`` and ``n + k < T``.

    A draft that caps its own proposals (prompt lookup) drafts ``k = caps[i, n]`` tokens in a
    round from ``n`` on path ``i`` instead (``0``: a plain target step, one token from the
    target); given the path its caps are known, so the programme is the same with ``k`` per
    start (:func:`~.round_kernels.path_outcomes`).

    Parameters
    ----------
    reject : array, shape (N, T), entries in [0, 1]
    gamma : int >= 1
    bonus : bool
    caps : int array, shape (N, T), optional
        Draft tokens per round start, ``0 <= caps[i, n] <= min(gamma, T - n)`` (default: that bound).

    Returns
    -------
    dict of arrays: ``target_calls``, ``rejections``, ``draft_tokens`` [N] and
    ``counts`` [N, gamma + 1] (expected number of rounds accepting ``j`` drafts).

    Examples
    --------
    >>> out = round_dp([[0.0, 0.0, 0.0]], 2, bonus=True)   # always accepted: 2 + bonus
    >>> out["target_calls"].tolist(), out["counts"].tolist()
    ([1.0], [[0.0, 0.0, 1.0]])
    >>> out = round_dp([[0.5, 0.5]], 1, bonus=False)
    >>> out["rejections"].tolist()
    [1.0]
    """
    gamma = check_int(gamma, "gamma", 1)
    dp = outcome_dp(path_outcomes(reject, gamma, caps), bonus)
    T = dp["visits"].shape[1]
    if caps is None:
        drafts = dp["visits"][..., 0] @ np.minimum(gamma, T - np.arange(T)).astype(np.float64)
    else:
        drafts = (dp["visits"][..., 0] * np.asarray(caps, dtype=np.float64)).sum(1)
    return {k: dp[k] for k in ("target_calls", "rejections")} | {
        "draft_tokens": drafts,
        "counts": dp["counts"],
    }


def rb_predictions(
    stats: PathStatistics, gammas: Iterable[int], bonus_settings: Iterable[bool] = (False, True)
) -> dict:
    """Predicted means and standard errors over target paths for each (gamma, bonus).

    Returns a dict ``{(gamma, bonus): {stat: (mean, se)}}`` with stats ``target_calls``,
    ``rejections``, ``draft_tokens``, ``counts`` (arrays ``[gamma + 1]``), and for
    ``bonus=False`` also ``rejections_tv`` (the Theorem-1 sum of exact TVs, which does not
    depend on gamma).
    """
    out = {}
    tv_sum = stats.tv.sum(1)
    for g in gammas:
        for b in bonus_settings:
            dp = round_dp(stats.reject, g, b)
            entry = {key: mean_se(val) for key, val in dp.items()}
            if not b:
                entry["rejections_tv"] = mean_se(tv_sum)
            out[(int(g), bool(b))] = entry
    return out


def first_round_law(
    target: CausalLM,
    draft: CausalLM,
    prompts: ArrayLike,
    gamma: int,
    seed: int,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
    batch_size: int = 1024,
    device: str | torch.device | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Law of the first round's accepted count from per-position acceptances along draft paths.

    For each prompt, a draft path ``y_1..y_gamma ~ q``; ``P(J >= j | path) = prod_{i<=j} a_i``
    with ``a_i = min(1, p(y_i)/q(y_i))``. Returns ``(mean, se)`` arrays ``[gamma + 1]``
    over the paths (one path per prompt row).
    """
    prompts = np.asarray(prompts, dtype=np.int64)
    paths = sample_paths(draft, prompts, gamma, seed, batch_size=batch_size, sampling=sampling, device=device)
    st = path_statistics(target, draft, paths, prompts.shape[1], sampling, device=device)
    surv = np.concatenate([np.ones((len(paths), 1)), np.cumprod(st.accept, axis=1)], axis=1)  # P(J >= j)
    law = surv - np.concatenate([surv[:, 1:], np.zeros((len(paths), 1))], axis=1)
    return mean_se(law)


def measure_decoder(
    target: CausalLM,
    draft: CausalLM,
    prompts: ArrayLike,
    horizon: int,
    gamma: int,
    bonus: bool,
    seed: int,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
    batch_size: int = 1024,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
) -> dict:
    """Run :func:`speculative_generate` on ``prompts`` and return per-sequence statistics.

    Returns a dict of arrays: ``target_calls``, ``rejections``, ``draft_tokens`` [N],
    ``counts`` [N, gamma + 1] (rounds with each accepted count), ``first`` [N, gamma + 1]
    (one-hot accepted count of the first round; its length is ``min(gamma, T)``),
    ``accepted``, ``checked`` [N]; and ``time_total`` (s). A draft that declares
    ``batch_dependent_law`` runs one sequence at a time (``batch_size`` is then 1): batched, its
    law would not be the one its along-path statistics score.
    """
    from ..decoder.speculative import speculative_generate

    prompts = np.asarray(prompts, dtype=np.int64)
    keys = ("target_calls", "rejections", "draft_tokens", "counts", "first", "accepted", "checked")
    acc: dict[str, list[np.ndarray]] = {k: [] for k in keys}
    seconds = 0.0
    if getattr(draft, "batch_dependent_law", False):
        batch_size = 1
    for lo in range(0, len(prompts), batch_size):
        chunk = list(prompts[lo : lo + batch_size])
        res = speculative_generate(
            target,
            draft,
            chunk,
            horizon,
            gamma,
            *sampling,
            bonus=bonus,
            seed=row_seeds(seed, len(chunk), start=lo),
            device=device,
            dtype=dtype,
        )
        s = res.stats
        seconds += s.time_total
        acc["target_calls"].append(s.target_calls)
        acc["rejections"].append(s.rejections)
        acc["draft_tokens"].append(s.draft_tokens)
        acc["counts"].append(np.stack([np.bincount(a, minlength=gamma + 1) for a in s.round_accepted]))
        acc["first"].append(np.eye(gamma + 1)[[int(a[0]) for a in s.round_accepted]])
        acc["accepted"].append(s.position_accepted.sum(1))
        acc["checked"].append(s.position_checked.sum(1))
    out: dict[str, Any] = {k: np.concatenate(v).astype(np.float64) for k, v in acc.items()}
    out["time_total"] = seconds
    return out


STATS = ("target_calls", "rejections", "draft_tokens")


def compare_theory(
    target: CausalLM,
    draft: CausalLM,
    prompts: ArrayLike,
    horizon: int,
    gammas: Iterable[int],
    n_sequences: int,
    seed: int = 0,
    bonus_settings: Iterable[bool] = (False, True),
    n_paths: int | None = None,
    batch_size: int = 1024,
    device: str | torch.device | None = None,
    z_max: float = 5.0,
) -> dict:
    """Rao-Blackwellised predictions against the decoder's measurements, per (gamma, bonus).

    ``n_paths`` target paths (default ``n_sequences``) give the predictions; the decoder runs
    ``n_sequences`` sequences per (gamma, bonus), prompts cycling through ``prompts``. Each
    row compares one statistic: ``predicted`` +- ``predicted_se``, ``measured`` +-
    ``measured_se``, ``z`` (combined SE) and ``agree = |z| < z_max``. Statistics:
    ``target_calls``, ``rejections``, ``draft_tokens``, ``count[j]`` (rounds accepting ``j``),
    ``first[j]`` (first round accepting ``j``, predicted along draft paths) and, for
    ``bonus=False``, ``rejections_tv`` (the Theorem-1 sum of TVs). Also returns the pooled
    accepted-count laws (``law_predicted``/``law_measured``) for figures.
    """
    from .prefill_view import shared_prefill

    target, draft = shared_prefill(target), shared_prefill(draft)  # same samples, repeats prefilled once
    prompts = np.asarray(prompts, dtype=np.int64)
    L = prompts.shape[1]
    n_paths = n_sequences if n_paths is None else n_paths
    rows, laws = [], []
    tpaths = sample_paths(
        target,
        repeat_prompts(prompts, n_paths),
        horizon,
        derive_seed(seed, STREAM_TARGET_PATHS),
        batch_size=batch_size,
        device=device,
    )
    pstats = path_statistics(target, draft, tpaths, L, batch_size=min(batch_size, 256), device=device)
    pred = rb_predictions(pstats, gammas, bonus_settings)
    seq_prompts = repeat_prompts(prompts, n_sequences)

    def row(g: int, b: bool, name: str, *values: float | np.ndarray) -> None:
        pm, ps, mm, ms = values  # predicted mean, SE; measured mean, SE
        z = float(zscore(pm, ps, mm, ms))
        rows.append(
            {
                "gamma": g,
                "bonus": b,
                "stat": name,
                "predicted": float(pm),
                "predicted_se": float(ps),
                "measured": float(mm),
                "measured_se": float(ms),
                "z": z,
                "agree": bool(abs(z) < z_max),
            }
        )

    for g in gammas:
        first = first_round_law(
            target,
            draft,
            repeat_prompts(prompts, n_paths),
            min(g, horizon),
            derive_seed(seed, STREAM_DRAFT_PATHS, g),
            batch_size=batch_size,
            device=device,
        )
        for b in bonus_settings:
            meas = measure_decoder(
                target, draft, seq_prompts, horizon, g, b, seed, batch_size=batch_size, device=device
            )
            p = pred[(int(g), bool(b))]
            for name in STATS:
                row(g, b, name, *p[name], *mean_se(meas[name]))
            if not b:
                row(g, b, "rejections_tv", *p["rejections_tv"], *mean_se(meas["rejections"]))
            cm, cs = mean_se(meas["counts"])
            for j in range(g + 1):
                row(g, b, f"count[{j}]", p["counts"][0][j], p["counts"][1][j], cm[j], cs[j])
            fm, fs = mean_se(meas["first"][:, : len(first[0])])
            for j in range(len(first[0])):
                row(g, b, f"first[{j}]", first[0][j], first[1][j], fm[j], fs[j])
            laws.append(
                {
                    "gamma": g,
                    "bonus": b,
                    "law_predicted": (p["counts"][0] / p["counts"][0].sum()).tolist(),
                    "law_measured": (meas["counts"].sum(0) / meas["counts"].sum()).tolist(),
                    "acceptance_measured": float(meas["accepted"].sum() / max(meas["checked"].sum(), 1)),
                    "time_decoder": meas["time_total"],
                }
            )
    return {
        "rows": rows,
        "laws": laws,
        "tv_profile": pstats.tv.mean(0).tolist(),
        "acceptance_predicted": float(1.0 - pstats.tv.mean()),
        "n_paths": n_paths,
        "n_sequences": n_sequences,
        "horizon": horizon,
    }

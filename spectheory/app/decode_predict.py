r"""``spectheory decode``'s prediction: the along-path (Rao-Blackwellised) expectations of one run.

For a prompt, ``N`` target paths of ``T`` tokens are sampled (:func:`~spectheory.validation.path_stats.sample_paths`)
and both models are evaluated once along them
(:func:`~spectheory.validation.path_stats.path_statistics`). Given a target path the decoder's
checks are independent rejections with probability :math:`r_n = \max(0, 1 - q(x_n)/p(x_n))`,
and :func:`~spectheory.validation.predict.round_dp` turns them into the exact conditional
expectations of the run's target calls, rejections and draft tokens for the run's ``gamma`` and
bonus setting; their mean over paths is unbiased, with its standard error over paths
(:mod:`spectheory.validation.predict`). Over several prompts (each run on its own) the
expectations add and the variances add.

A draft that caps its own proposals (prompt lookup's ``proposal_cap``: no match, no draft) is
predicted the same way: along a target path its draft length at every round start is known
(:func:`~spectheory.validation.path_stats.proposal_caps`), and ``round_dp``'s ``caps`` runs the rounds with it; at a position
inside a round its point-mass law rejects the path's token exactly when the lookup proposes
another one. (The decoder uses the cap only with bonus tokens, where a round without drafts is
a plain target step.)

Time: the predicted counts priced at this run's own measured seconds per target call and per
draft call (:func:`predicted_time`), so the time row checks the counts in seconds; it is not a
cost model (``spectheory tune`` fits one).

Examples
--------
>>> import numpy as np
>>> pooled = pool([{"target_calls": (4.0, 0.3)}, {"target_calls": (5.0, 0.4)}])
>>> pooled["target_calls"][0], round(pooled["target_calls"][1], 3)
(9.0, 0.5)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["COUNTS", "predict_run", "pool", "predicted_time", "ratio_se"]

#: The counts predicted per run, as :class:`~spectheory.decoder.generation_result.DecodeStats` names them.
COUNTS = ("target_calls", "rejections", "draft_tokens")


def _path_batch(length: int, vocab: int, budget: float = 2e8) -> int:
    """Paths evaluated at once by ``path_statistics``: its float64 laws ``[b, length, V]`` kept
    near ``budget`` bytes each (a 49k vocabulary would otherwise need gigabytes)."""
    return int(max(1, min(256, budget // (8.0 * length * vocab))))


def predict_run(
    target: Any,
    draft: Any,
    prompt: Sequence[int],
    horizon: int,
    gamma: int,
    bonus: bool,
    temperature: float,
    n_paths: int,
    seed: int,
    device: Any = None,
) -> dict[str, tuple[float, float]]:
    """Along-path expected counts of one run of ``horizon`` new tokens after ``prompt``.

    Returns
    -------
    dict
        ``{name: (mean, se)}`` for ``target_calls``, ``rejections``, ``draft_tokens`` (one run's
        expectations), ``acceptance`` (the mean of :math:`\\sum_x \\min(p, q) = 1 - TV` along the
        paths), ``acceptance_checked`` (:math:`E[\\text{accepted}] / E[\\text{checked}]`, the
        measured acceptance's counterpart: a round's checks stop at its first rejection, so
        checked = accepted + rejections) and ``counts`` (arrays ``[gamma + 1]``: expected rounds
        accepting ``j`` drafts).
    """
    from ..decoder.rng import derive_seed
    from ..validation.path_stats import mean_se, path_statistics, proposal_caps, repeat_prompts, sample_paths
    from ..validation.predict import STREAM_TARGET_PATHS, round_dp

    prompts = repeat_prompts([list(prompt)], n_paths)
    sampling = (float(temperature), None, None)
    paths = sample_paths(
        target, prompts, horizon, derive_seed(seed, STREAM_TARGET_PATHS), sampling=sampling, device=device
    )
    batch = _path_batch(paths.shape[1], int(target.vocab_size))
    stats = path_statistics(target, draft, paths, len(prompt), sampling, batch_size=batch, device=device)
    caps = proposal_caps(draft, paths, len(prompt), gamma) if bonus else None
    dp = round_dp(stats.reject, gamma, bonus, caps)
    out: dict[str, Any] = {name: tuple(float(v) for v in mean_se(dp[name])) for name in COUNTS}
    out["acceptance"] = tuple(float(v) for v in mean_se(1.0 - stats.tv.mean(1)))
    accepted = dp["counts"] @ np.arange(gamma + 1, dtype=np.float64)
    out["acceptance_checked"] = ratio_se(accepted, accepted + dp["rejections"])
    out["counts"] = mean_se(dp["counts"])
    out["paths"] = {name: dp[name] for name in COUNTS}  # per path, for the time row
    return out


def ratio_se(a: np.ndarray, c: np.ndarray) -> tuple[float, float]:
    r"""``mean(a) / mean(c)`` over paths and its delta-method standard error,
    :math:`\mathrm{sd}(a - R c) / (\sqrt{N}\, \bar c)`.

    Examples
    --------
    >>> ratio_se(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0, 6.0]))
    (0.5, 0.0)
    """
    a, c = np.asarray(a, dtype=np.float64), np.asarray(c, dtype=np.float64)
    if c.mean() <= 0:
        return float("nan"), float("nan")
    r = a.mean() / c.mean()
    se = np.std(a - r * c, ddof=1) / np.sqrt(len(a)) / c.mean() if len(a) > 1 else float("nan")
    return float(r), float(se)


def pool(runs: Sequence[dict]) -> dict[str, tuple[Any, Any]]:
    """Sum of independent runs' ``(mean, se)`` per name (means add, variances add); entries
    that are not ``(mean, se)`` pairs (``paths``) are left out."""
    out = {}
    for name in runs[0]:
        if name == "paths":
            continue
        means = [np.asarray(r[name][0], dtype=float) for r in runs]
        ses = [np.asarray(r[name][1], dtype=float) for r in runs]
        mean = sum(means[1:], means[0])
        se = np.sqrt(sum((s**2 for s in ses[1:]), ses[0] ** 2))
        out[name] = (mean.tolist() if mean.ndim else float(mean), se.tolist() if se.ndim else float(se))
    return out


def predicted_time(predicted: dict, stats: Any) -> tuple[float, float]:
    """``(mean, se)`` seconds of one run: its measured prefill plus, per target path, the
    predicted target calls and draft steps priced at the run's measured seconds per target call
    and per draft call (``stats``: the run's :class:`~spectheory.decoder.generation_result.DecodeStats`)."""
    from ..validation.path_stats import mean_se

    per_call = stats.time_target / max(stats.batch_target_calls, 1)
    per_step = stats.time_draft / max(stats.batch_draft_calls, 1)
    paths = predicted["paths"]
    seconds = stats.time_prefill + paths["target_calls"] * per_call + paths["draft_tokens"] * per_step
    mean, se = mean_se(seconds)
    return float(mean), float(se)

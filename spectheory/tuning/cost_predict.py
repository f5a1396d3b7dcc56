r"""Predicted wall time and batch throughput of the real decoder on real models.

The accepted side comes from target paths sampled once (:func:`sample_target_paths`): along them
the Rao-Blackwellised recursions give, for every fixed ``gamma``, node-local tree and runnable
draft-length policy, the law of a row's number of rounds ``R`` given its path
(:mod:`.cost_rounds`), for the batch's own rows (row ``b`` has prompt ``b mod P``, as the decoder's
rows cycle through the prompts). The cost side is a :class:`~spectheory.tuning.cost_timing.DecoderTiming`
(fitted forwards and measured overheads). For a batch of ``B`` rows generating ``T`` tokens
after prompts of length ``L_0`` (:func:`predict_time`):

.. math:: \text{time}(B) = t_\text{prefill}(B) + E[\max_b R_b]\; E_K[t_\text{round}(B, K, \bar L)],
          \qquad \text{throughput} = \frac{B T}{\text{time}(B)},

a product of expectations and a mean context, so an approximation (the round count, the depth
``K`` and the context are not independent; ``docs/tune.md`` sets it beside measured decoder
times). Here ``K`` is the round's batch draft depth -- the largest over the rows *still generating* of
their own draft lengths, each capped by the tokens the row has left (fixed for paths and trees,
the policy's stopping law for policies, from the draft's own paths, :func:`~.along_path.drafted_length_law`);
its law is simulated on the rounds chain (:func:`~.cost_rounds.batch_depth_law`: the last
rounds of a batch have few rows, all near the end of the horizon, so ``K`` there is well below
the largest of ``B`` independent depths) -- and :math:`\bar L` the mean over rounds of the longest
row's context (attention reads up to the longest row): about
:math:`L_0 + T (1 - E[\min_b R_b] / (2 E[\max_b R_b]))`, i.e. ``L_0 + T/2`` at ``B = 1``. Tokens
per call ``T / E[R]`` has the delta-method SE over paths; ``E[max R]`` a bootstrap SE over
paths, carried to the time and throughput (the fit error of the cost model is reported beside,
not inside, these SEs).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._guards import check_int
from ..stopping.along_paths import ratio_mean_se
from .along_path import round_model
from .cost_rounds import batch_depth_law, batch_rounds, call_prompts, rounds_law
from .cost_timing import DecoderTiming

__all__ = ["PathSample", "sample_target_paths", "round_law", "predict_time"]


@dataclass
class PathSample:
    """Target paths and what the predictions read along them (:func:`sample_target_paths`).

    ``paths [N, L0 + T]`` (path ``i`` from prompt ``prompt_of[i]``); ``reject [N, T]``; ``target_laws``, ``draft_laws [N, T, V]`` (trees
    only); ``policy_inputs`` (``top``, ``entropy``, ``token_prob`` of the draft law along the

    of the paths (the drafted-length law of policies).
    """

    prompt_len: int
    horizon: int
    paths: np.ndarray
    reject: np.ndarray
    target_laws: np.ndarray | None = None
    draft_laws: np.ndarray | None = None
    policy_inputs: dict | None = None
    draft: Any = field(default=None, repr=False)
    sampling: tuple = (1.0, None, None)
    device: Any = "cpu"
    seed: int = 0
    prompt_of: np.ndarray | None = None
    caps: np.ndarray | None = None
    _laws: dict = field(default_factory=dict, repr=False)
    _chains: dict = field(default_factory=dict, repr=False)
    _batch_depths: dict = field(default_factory=dict, repr=False)
    _batch_rounds: dict = field(default_factory=dict, repr=False)

    @property
    def n_paths(self) -> int:
        return int(self.paths.shape[0])


def _seed(rng: Any) -> int:
    return int(np.random.default_rng(rng).integers(0, 2**31 - 1))


def sample_target_paths(
    target: Any,
    draft: Any,
    prompts: Any,
    horizon: int,
    n_paths: int = 256,
    rng: np.random.Generator | int | None = None,
    device: Any = "cpu",
    trees: bool = True,
    policy_depth: int = 0,
    sampling: tuple[float, int | None, float | None] = (1.0, None, None),
) -> PathSample:
    """Sample ``n_paths`` target paths from ``prompts`` (cycled) and evaluate both models along them.

    ``trees``: keep the laws ``[N, T, V]`` (tree predictions); ``policy_depth > 0``: also the
    draft's statistics along the paths, and keep the draft to draft from round starts (policy
    predictions). A draft with a ``proposal_cap`` (prompt lookup) has its caps along the paths
    kept (:func:`~spectheory.validation.path_stats.proposal_caps`): its rounds draft at most that many tokens, none where it has
    no match (a plain target step).
    """
    from ..validation.path_stats import proposal_caps
    from ..validation.policy_predict import policy_path_inputs
    from ..validation.predict import path_statistics, repeat_prompts, sample_paths

    T = check_int(horizon, "horizon", 1)
    N = check_int(n_paths, "n_paths", 2)
    gen = np.random.default_rng(rng)
    P = np.asarray(prompts, dtype=np.int64)
    L0 = P.shape[1]
    paths = sample_paths(target, repeat_prompts(P, N), T, _seed(gen), sampling=sampling, device=device)
    st = path_statistics(target, draft, paths, L0, sampling, keep_laws=trees, device=device)
    sample = PathSample(L0, T, paths, st.reject, st.target_laws, st.draft_laws)
    sample.prompt_of = np.arange(N) % len(P)  # repeat_prompts cycles through the prompts
    if getattr(draft, "proposal_cap", None) is not None:
        sample.caps = proposal_caps(draft, paths, L0)
    if check_int(policy_depth, "policy_depth", 0):
        inp = policy_path_inputs(target, draft, paths, L0, sampling, device=device)
        sample.policy_inputs = {k: inp[k] for k in ("top", "entropy", "token_prob")}
        sample.draft, sample.sampling, sample.device, sample.seed = draft, sampling, device, _seed(gen)
    return sample


def round_law(sample: PathSample, rnd: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(law [N, T + 1], depth law [D + 1])``: a row's rounds given each path, and the law of
    the draft depth of a round (visit-weighted over round starts). The round hands its jump
    kernel and depth laws over through :meth:`~spectheory.rounds.Round.along_path`
    (:func:`~.along_path.round_model`). Cached per round on ``sample``."""
    key = repr(rnd)
    if key in sample._laws:
        return sample._laws[key]
    model = round_model(rnd)
    J, m0 = model.kernel(sample)
    law, visits = rounds_law(J, m0)
    depth, drafted = model.depth_laws(sample, visits)
    sample._laws[key] = (law, depth)
    sample._chains[key] = (J, m0, drafted)
    return law, depth


def predict_time(
    sample: PathSample,
    rnd: Any,
    timing: DecoderTiming,
    batch: int,
    rng: np.random.Generator | int | None = None,
    all_prompts: bool = True,
) -> dict:
    """Predicted time, throughput and tokens per call of round ``rnd`` (``None``: autoregressive)
    on ``batch`` rows (module docstring), over every prompt of the sample: a batch smaller than
    the prompt set is the mean over the calls that decode the set
    (:func:`~.cost_rounds.call_prompts`; batch 1: each prompt on its own), as
    :func:`~.tune_runs.measure_run` measures it (``all_prompts=False``: the first call only,
    rows cycling from prompt 0). Keys: ``tokens_per_call`` (+ ``_se``), ``rounds``
    (``E[max R]``, + ``_se``), ``depth`` (mean batch draft depth), ``context``, ``round_seconds``,
    ``seconds`` (+ ``_se``), ``seconds_per_token`` (per row), ``throughput`` (+ ``_se``, tokens/s
    over the batch) and ``draft_calls`` (per round at batch 1, for Leviathan's constant-c model)."""
    B = check_int(batch, "batch", 1)
    T, L0 = sample.horizon, sample.prompt_len
    if rnd is None:
        ctx = L0 + T / 2
        # T rounds, T - 1 forwards: the prefill's forward gives the first token's law
        seconds = (
            timing.prefill_seconds(B, L0, speculative=False)
            + T * timing.autoregressive_seconds(B, ctx)
            - timing.autoregressive_seconds(B, ctx, overhead=False)
        )
        return {
            "tokens_per_call": 1.0,
            "tokens_per_call_se": 0.0,
            "rounds": float(T),
            "rounds_se": 0.0,
            "depth": 0.0,
            "context": ctx,
            "round_seconds": timing.autoregressive_seconds(B, ctx),
            "seconds": seconds,
            "seconds_se": 0.0,
            "seconds_per_token": seconds / T,
            "throughput": B * T / seconds,
            "throughput_se": 0.0,
            "draft_calls": 0.0,
        }
    model = round_model(rnd)
    law, depth = round_law(sample, rnd)
    J, m0, drafted = sample._chains[repr(rnd)]
    n_prompts = 1 if sample.prompt_of is None else int(np.max(sample.prompt_of)) + 1
    calls = call_prompts(B, n_prompts) if sample.prompt_of is not None else [None]
    calls = calls[: None if all_prompts else 1]
    parts = []
    for j, rows in enumerate(calls):  # every prompt decoded: one call per B prompts below B < P
        rkey = (repr(rnd), B, j, int(rng) if isinstance(rng, (int, np.integer)) else None)
        if rkey[-1] is None or rkey not in sample._batch_rounds:  # a seeded bootstrap is cached
            sample._batch_rounds[rkey] = batch_rounds(
                law, B, rng=rng, groups=sample.prompt_of, row_prompts=rows
            )
        r = sample._batch_rounds[rkey]
        ctx = L0 + T * (1 - r["min"] / (2 * r["max"]))
        key = (repr(rnd), B, j)
        if key not in sample._batch_depths:  # the largest depth over the rows still generating
            sample._batch_depths[key] = batch_depth_law(
                J,
                B,
                drafted,
                m0,
                groups=sample.prompt_of,
                rng=np.random.default_rng(sample.seed + B),
                row_prompts=rows,
                caps=sample.caps,
            )
        bd = sample._batch_depths[key]
        per = sum(p * timing.round_seconds(model, B, k, ctx) for k, p in enumerate(bd) if p > 0)
        first = float(sum(k * p for k, p in enumerate(bd)))  # the first round priced at the mean depth
        sec = timing.prefill_seconds(B, L0, rnd=model, depth=first) + r["max"] * per
        parts.append((r, ctx, bd, per, sec, r["max_se"] * per))
    n = len(parts)
    mean_rounds = sum(p[0]["mean"] for p in parts) / n
    mean_se = float(np.sqrt(sum(p[0]["mean_se"] ** 2 for p in parts))) / n
    if sample.prompt_of is None:
        calls_i = law @ np.arange(law.shape[1])
        tpc, tpc_se = ratio_mean_se(np.full(len(calls_i), float(T)), calls_i)
    else:  # the batch's own prompts, every prompt of the set
        tpc, tpc_se = T / mean_rounds, T * mean_se / mean_rounds**2
    seconds = sum(p[4] for p in parts) / n  # per call of B rows
    seconds_se = float(np.sqrt(sum(p[5] ** 2 for p in parts))) / n
    per_round = sum(p[3] for p in parts) / n
    ctx = sum(p[1] for p in parts) / n
    batch_depth = sum(p[2] for p in parts) / n
    r = {"max": sum(p[0]["max"] for p in parts) / n}
    r["max_se"] = float(np.sqrt(sum(p[0]["max_se"] ** 2 for p in parts))) / n
    k1 = float(depth @ np.arange(len(depth)))
    return {
        "tokens_per_call": tpc,
        "tokens_per_call_se": tpc_se,
        "rounds": r["max"],
        "rounds_se": r["max_se"],
        "depth": float(batch_depth @ np.arange(len(batch_depth))),
        "context": float(ctx),
        "round_seconds": float(per_round),
        "seconds": float(seconds),
        "seconds_se": float(seconds_se),
        "seconds_per_token": float(seconds / T),
        "throughput": float(B * T / seconds),
        "throughput_se": float(B * T * seconds_se / seconds**2),
        "draft_calls": k1,
    }

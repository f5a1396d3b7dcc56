r"""Predicted wall time and batch throughput of the real decoder on real models.

The accepted side comes from target paths sampled once (:func:`sample_target_paths`): along them
the Rao-Blackwellised recursions give, for every fixed ``gamma``, node-local tree and runnable
draft-length policy, the law of a row's number of rounds ``R`` given its path
(:mod:`.cost_rounds`), for the batch's own rows (row ``b`` has prompt ``b mod P``, as the decoder's
rows cycle through the prompts). The cost side is a :class:`~spectheory.validation.cost_timing.DecoderTiming`
(fitted forwards and measured overheads). For a batch of ``B`` rows generating ``T`` tokens
after prompts of length ``L_0`` (:func:`predict_time`):

.. math:: \text{time}(B) = t_\text{prefill}(B) + E[\max_b R_b]\; E_K[t_\text{round}(B, K, \bar L)],
          \qquad \text{throughput} = \frac{B T}{\text{time}(B)},

where ``K`` is the round's batch draft depth -- the largest over the rows *still generating* of
their own draft lengths, each capped by the tokens the row has left (fixed for paths and trees,
the policy's stopping law for policies, from the draft's own paths, :func:`drafted_length_law`);
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
from ..stopping.policies import StopContext
from .cost_rounds import batch_depth_law, batch_rounds, path_kernel, policy_kernel, rounds_law, tree_kernel
from .cost_timing import DecoderTiming, round_kind

__all__ = ["PathSample", "sample_target_paths", "drafted_length_law", "round_law", "predict_time"]


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
    predictions).
    """
    from .policy_predict import policy_path_inputs
    from .predict import path_statistics, repeat_prompts, sample_paths

    T = check_int(horizon, "horizon", 1)
    N = check_int(n_paths, "n_paths", 2)
    gen = np.random.default_rng(rng)
    P = np.asarray(prompts, dtype=np.int64)
    L0 = P.shape[1]
    paths = sample_paths(target, repeat_prompts(P, N), T, _seed(gen), sampling=sampling, device=device)
    st = path_statistics(target, draft, paths, L0, sampling, keep_laws=trees, device=device)
    sample = PathSample(L0, T, paths, st.reject, st.target_laws, st.draft_laws)
    sample.prompt_of = np.arange(N) % len(P)  # repeat_prompts cycles through the prompts
    if check_int(policy_depth, "policy_depth", 0):
        inp = policy_path_inputs(target, draft, paths, L0, sampling, device=device)
        sample.policy_inputs = {k: inp[k] for k in ("top", "entropy", "token_prob")}
        sample.draft, sample.sampling, sample.device, sample.seed = draft, sampling, device, _seed(gen)
    return sample


def drafted_lengths(
    sample: PathSample, policy: Any, visits: np.ndarray, per_path: int = 4
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    r"""Draft lengths a policy plays at round starts drawn from the visits: ``(path, n, k, weight)``, each ``[S]``.

    The decoder drafts before it verifies, so after a rejection the drafted length is set by the
    draft's *own* continuation, not by the output path. Round starts ``(n, memory)`` are drawn
    from each path's expected visits ``visits [N, T, M]`` (:func:`~.cost_rounds.rounds_law`;
    ``per_path`` per path), the draft continues ``D = policy.max_depth`` tokens from the path's
    prefix there, and the policy's stopping rule along that continuation gives ``k`` (not capped
    by the tokens left: ``min(k, T - n)`` is what the row drafts). A draw's ``weight`` is its
    path's expected number of rounds over ``per_path``: a law over rounds weights a path by how
    many rounds it takes, and paths the draft predicts well take fewer, longer rounds (weighting
    every path alike overstates the drafted length).
    """
    from .policy_predict import policy_path_inputs
    from .predict import sample_paths

    if sample.draft is None or sample.policy_inputs is None:
        raise ValueError("policies: the path sample has no draft statistics; sample with policy_depth > 0")
    N, T, M = visits.shape
    D = int(policy.max_depth)
    gen = np.random.default_rng(sample.seed)
    flat = visits.reshape(N, T * M)
    rounds = flat.sum(1)  # E[R_i], each path's expected rounds
    w = flat / rounds[:, None]
    per = check_int(per_path, "per_path", 1)
    picks = np.array([gen.choice(T * M, size=per, p=w[i]) for i in range(N)])  # [N, per]
    rows = np.repeat(np.arange(N), per)
    n_at, mem = np.divmod(picks.ravel(), M)
    k = np.full(len(rows), D)
    for n in np.unique(n_at):
        sel = np.flatnonzero(n_at == n)
        L = sample.prompt_len + int(n)
        dp = sample_paths(
            sample.draft,
            sample.paths[rows[sel], :L],
            D,
            int(gen.integers(2**31 - 1)),
            sampling=sample.sampling,
            device=sample.device,
        )
        own = policy_path_inputs(sample.draft, sample.draft, dp, L, sample.sampling, device=sample.device)
        S, none = len(sel), np.full((len(sel), 1), -1)
        alive = np.ones(S, bool)
        for i in range(1, D):
            ctx = StopContext(
                depth=i,
                position=np.full((S, 1), int(n)),
                start_state=none,
                prev_state=none,
                token=none,
                state=none,
                accept_prob=None,
                memory=mem[sel][:, None],
                **{key: own[key][:, i - 1, None] for key in ("top", "entropy", "token_prob")},
            )
            stop = alive & np.asarray(policy.stop(ctx), bool).reshape(S)
            k[sel[stop]] = i
            alive &= ~stop
    weight = rounds[rows] / per
    return rows, n_at, k, weight


def drafted_length_law(sample: PathSample, policy: Any, visits: np.ndarray, per_path: int = 4) -> np.ndarray:
    """Law ``[D + 1]`` of the draft length a policy plays in a round, capped by the tokens left
    (visit-weighted over round starts, :func:`drafted_lengths`)."""
    _, n, k, weight = drafted_lengths(sample, policy, visits, per_path)
    return _capped_law(k, sample.horizon - n, weight, int(policy.max_depth))


def _capped_law(k: np.ndarray, left: np.ndarray, weight: np.ndarray, D: int) -> np.ndarray:
    counts = np.bincount(np.minimum(k, left), weights=weight, minlength=D + 1)
    return counts / counts.sum()


def _per_prompt_laws(
    sample: PathSample, rows: np.ndarray, k: np.ndarray, weight: np.ndarray, D: int
) -> np.ndarray:
    """Laws ``[P, D + 1]`` of a policy's uncapped draft length, one per prompt (``sample.prompt_of``).

    The batch's rows have their own prompts (row ``b`` has prompt ``b mod P``), and how long a
    confidence rule drafts depends on the text (at batch 1 only prompt 0 is decoded, so a law pooled
    over the prompts misstates its depth). :func:`~.cost_rounds.batch_depth_law` draws each row's length from its
    prompt's law and caps it by the row's tokens left.
    """
    group = np.zeros(sample.n_paths, np.int64) if sample.prompt_of is None else np.asarray(sample.prompt_of)
    counts = np.zeros((int(group.max()) + 1, D + 1))
    np.add.at(counts, (group[rows], k), weight)
    if (counts.sum(1) == 0).any():
        raise ValueError("per_path: too few round starts to give every prompt a drafted-length law")
    return counts / counts.sum(1, keepdims=True)


def round_law(sample: PathSample, rnd: Any) -> tuple[np.ndarray, np.ndarray]:
    """``(law [N, T + 1], depth law [D + 1])``: a row's rounds given each path, and the law of
    the draft depth of a round (visit-weighted over round starts). Cached per round on ``sample``."""
    from .trees import draft_tables

    key = repr(rnd)
    if key in sample._laws:
        return sample._laws[key]
    kind, T = round_kind(rnd), sample.horizon
    m0 = 0
    if kind == "path":
        J, D = path_kernel(sample.reject, rnd.gamma), rnd.gamma
    elif kind == "tree":
        if sample.target_laws is None or sample.draft_laws is None:
            raise ValueError("trees: the path sample has no laws; sample with trees=True")
        tree, D = rnd.tree, rnd.tree.max_depth
        tokens = sample.paths[:, sample.prompt_len :]
        tables = draft_tables(sample.target_laws, sample.draft_laws, tokens, tree, rnd.verifier.children)
        J = tree_kernel(tree, tables, T)
    else:
        if sample.policy_inputs is None:
            raise ValueError(
                "policies: the path sample has no draft statistics; sample with policy_depth > 0"
            )
        D = int(rnd.policy.max_depth)
        J, m0 = policy_kernel({"reject": sample.reject, **sample.policy_inputs}, rnd.policy)
    law, visits = rounds_law(J, m0)
    if kind == "policy":
        rows, n_at, k, weight = drafted_lengths(sample, rnd.policy, visits)
        depth = _capped_law(k, T - n_at, weight, D)
        drafted: Any = _per_prompt_laws(sample, rows, k, weight, D)
    else:
        depth = np.bincount(np.minimum(D, T - np.arange(T)), weights=visits.sum((0, 2)), minlength=D + 1)
        depth = depth / depth.sum()
        drafted = D
    sample._laws[key] = (law, depth)
    sample._chains[key] = (J, m0, drafted)
    return law, depth


def predict_time(
    sample: PathSample,
    rnd: Any,
    timing: DecoderTiming,
    batch: int,
    rng: np.random.Generator | int | None = None,
) -> dict:
    """Predicted time, throughput and tokens per call of round ``rnd`` (``None``: autoregressive)
    on ``batch`` rows (module docstring). Keys: ``tokens_per_call`` (+ ``_se``), ``rounds``
    (``E[max R]``, + ``_se``), ``depth`` (mean batch draft depth), ``context``, ``round_seconds``,
    ``seconds`` (+ ``_se``), ``seconds_per_token`` (per row), ``throughput`` (+ ``_se``, tokens/s
    over the batch) and ``draft_calls`` (per round at batch 1, for Leviathan's constant-c model)."""
    B = check_int(batch, "batch", 1)
    T, L0 = sample.horizon, sample.prompt_len
    if rnd is None:
        ctx = L0 + T / 2
        seconds = timing.prefill_seconds(B, L0, speculative=False) + T * timing.autoregressive_seconds(B, ctx)
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
    kind = round_kind(rnd)
    law, depth = round_law(sample, rnd)
    if isinstance(rng, (int, np.integer)):  # a seeded bootstrap is the same every call: cached
        rkey = (repr(rnd), B, int(rng))
        if rkey not in sample._batch_rounds:
            sample._batch_rounds[rkey] = batch_rounds(law, B, rng=rng, groups=sample.prompt_of)
        r = sample._batch_rounds[rkey]
    else:
        r = batch_rounds(law, B, rng=rng, groups=sample.prompt_of)
    if sample.prompt_of is None:
        calls = law @ np.arange(law.shape[1])
        tpc, tpc_se = ratio_mean_se(np.full(len(calls), float(T)), calls)
    else:  # the batch's own prompts: row b has prompt b mod P
        tpc, tpc_se = T / r["mean"], T * r["mean_se"] / r["mean"] ** 2
    ctx = L0 + T * (1 - r["min"] / (2 * r["max"]))
    J, m0, drafted = sample._chains[repr(rnd)]
    key = (repr(rnd), B)
    if key not in sample._batch_depths:  # the largest depth over the rows still generating
        sample._batch_depths[key] = batch_depth_law(
            J, B, drafted, m0, groups=sample.prompt_of, rng=np.random.default_rng(sample.seed + B)
        )
    batch_depth = sample._batch_depths[key]
    tree = getattr(rnd, "tree", None)
    per_round = sum(
        p * timing.round_seconds(kind, B, k, ctx, tree=tree) for k, p in enumerate(batch_depth) if p > 0
    )
    seconds = timing.prefill_seconds(B, L0) + r["max"] * per_round
    seconds_se = r["max_se"] * per_round
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

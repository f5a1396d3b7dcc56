r"""The law of a row's number of rounds, given its output path (pure numpy).

A batch of the real decoder plays rounds until its *slowest* row is done (a finished row still
rides along in every forward), so a batch's wall time is set by :math:`\max_b R_b`, the largest
number of rounds over its ``B`` rows, not by their mean. The Rao-Blackwellised predictions
(:func:`spectheory.validation.predict.round_dp`, :func:`~spectheory.validation.tree_decoding.tree_round_dp`,
:func:`~spectheory.stopping.along_paths.policy_round_dp`) give ``E[R | path]``; this module gives
the whole law of ``R`` given the path, by the same argument: given the output path the verifier's
outcomes are independent (docs of those functions), so the round boundaries form a Markov chain
on (round start ``n``, policy memory) with a per-path jump kernel

.. math:: J_i(n, a \to n', a') = P(\text{next round starts at } n' \text{ with memory } a'
          \mid \text{start } n, \text{memory } a, \text{path } i),

``n' = T`` meaning done (each kind's kernel: :mod:`~spectheory.validation.round_kernels`;
:func:`~spectheory.kinds.policy.outcome_kernels.outcome_dp` gives those ``E[R | path]`` from the
same kernel). :func:`rounds_law` runs the chain forward counting rounds:
``law[i, c] = P(R = c | path i)``. For ``B`` rows drawn independently (paths from the prompts,
outcomes from their seeds) the law of a random row is the path average
:math:`F(c) = \frac1N \sum_i P(R \le c \mid i)` and

.. math:: E[\max_b R_b] = \sum_{c \ge 0} \big(1 - F(c)^B\big), \qquad
          E[\min_b R_b] = \sum_{c \ge 0} \big(1 - F(c)\big)^B

(:func:`batch_rounds`, with a bootstrap standard error over paths).
"""

from __future__ import annotations

import numpy as np

from .._guards import check_int

__all__ = ["rounds_law", "batch_rounds", "batch_depth_law", "call_prompts"]


def call_prompts(batch: int, n_prompts: int) -> list[np.ndarray]:
    """The prompts of each decoder call that decodes a prompt set at ``batch`` rows.

    A batch at least as large as the set is one call whose row ``b`` has prompt ``b mod P``;
    a smaller batch takes the set in ``ceil(P / B)`` calls of consecutive prompts (the last
    wrapping round), so every prompt is decoded, at batch 1 each on its own
    (:func:`~spectheory.tuning.tune_runs.measure_run`, :func:`~.cost_predict.predict_time`).

    Examples
    --------
    >>> [c.tolist() for c in call_prompts(1, 3)], [c.tolist() for c in call_prompts(2, 3)]
    ([[0], [1], [2]], [[0, 1], [2, 0]])
    >>> [c.tolist() for c in call_prompts(4, 3)]
    [[0, 1, 2, 0]]
    """
    B, P = check_int(batch, "batch", 1), check_int(n_prompts, "n_prompts", 1)
    calls = 1 if B >= P else -(-P // B)
    return [(j * B + np.arange(B)) % P for j in range(calls)]


def rounds_law(J: np.ndarray, initial_memory: int = 0) -> tuple[np.ndarray, np.ndarray]:
    r"""``(law [N, T + 1], visits [N, T, M])``: ``law[i, c] = P(R = c | path i)`` and the expected
    number of rounds starting at ``(n, memory)``.

    Examples
    --------
    Two positions, each rejected with probability 1/2, ``gamma = 1`` without bonus: always 2 rounds.

    >>> from spectheory.validation.round_kernels import path_kernel
    >>> law, visits = rounds_law(path_kernel([[0.5, 0.5]], 1, bonus=False))
    >>> law.tolist(), visits[0, :, 0].tolist()
    ([[0.0, 0.0, 1.0]], [1.0, 1.0])
    """
    J = np.asarray(J, dtype=np.float64)
    N, T, M = J.shape[:3]
    mass = np.zeros((N, T + 1, M, T + 1))  # [path, start, memory, rounds so far]
    mass[:, 0, int(initial_memory), 0] = 1.0
    visits = np.zeros((N, T, M))
    for n in range(T):
        f = mass[:, n]  # [N, M, C]
        visits[:, n] = f.sum(-1)
        if not f.any():
            continue
        g = np.zeros_like(f)
        g[..., 1:] = f[..., :-1]  # one more round
        mass[:, n + 1 :] += np.einsum("iac,iajb->ijbc", g, J[:, n, :, n + 1 :, :])
    return mass[:, T].sum(1), visits


def batch_rounds(
    law: np.ndarray,
    batch: int,
    n_boot: int = 200,
    rng: np.random.Generator | int | None = None,
    groups: np.ndarray | None = None,
    row_prompts: np.ndarray | None = None,
) -> dict:
    r"""Expected largest and smallest number of rounds over ``batch`` independent rows.

    ``law [N, C]``: per path, the law of a row's rounds (:func:`rounds_law`). Without ``groups``
    every row draws a random path: :math:`P(\max \le c) = F(c)^B` with ``F`` the path average.
    With ``groups [N]`` (the prompt of each path, ``0..P-1``) row ``b`` has prompt ``b mod P``
    (the decoder's rows cycle through the prompts), or prompt ``row_prompts[b]`` when given (one
    call of a batch smaller than the prompt set: :func:`call_prompts`), its law is the average
    over that prompt's paths, and :math:`P(\max \le c) = \prod_b F_{p_b}(c)`. Returns ``mean`` (a row's
    ``E[R]``, averaged over the batch's rows), ``max``, ``min`` and their bootstrap standard
    errors over paths (resampled within each prompt): ``mean_se``, ``max_se``, ``min_se``.

    Examples
    --------
    >>> out = batch_rounds(np.array([[0.0, 0.5, 0.5]]), 2)
    >>> out["mean"], out["max"], out["min"]
    (1.5, 1.75, 1.25)
    >>> law = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])   # prompt 0: 1 round, prompt 1: 2
    >>> batch_rounds(law, 1, groups=np.array([0, 1]))["max"], batch_rounds(law, 2, groups=np.array([0, 1]))["max"]
    (1.0, 2.0)
    """
    B = check_int(batch, "batch", 1)
    L = np.asarray(law, dtype=np.float64)
    cdf = np.clip(np.cumsum(L, axis=1), 0.0, 1.0)
    N = L.shape[0]
    g = np.zeros(N, np.int64) if groups is None else np.asarray(groups, dtype=np.int64)
    if g.shape != (N,) or g.min() < 0:
        raise ValueError(f"groups: expected one prompt index >= 0 per path, shape ({N},)")
    P = int(g.max()) + 1
    members = [np.flatnonzero(g == p) for p in range(P)]
    if groups is not None and any(len(members[p]) == 0 for p in np.unique(np.arange(B) % P)):
        raise ValueError("groups: a prompt of the batch has no sampled path")
    if row_prompts is not None:
        if groups is None or np.shape(row_prompts) != (B,):
            raise ValueError(f"row_prompts: expected one prompt per row, shape ({B},), with groups")
        of_row = np.asarray(row_prompts, dtype=np.int64) % P
    else:
        of_row = np.arange(B) % P if groups is not None else np.zeros(B, np.int64)
    rows = np.bincount(of_row, minlength=P)

    def stats(F: np.ndarray) -> np.ndarray:  # F [..., P, C] per-prompt CDFs -> [..., 3]
        used = rows > 0
        Fu, w = F[..., used, :], rows[used][:, None]
        mean = ((1 - Fu) * w).sum((-2, -1)) / B
        hi = (1 - np.prod(Fu**w, axis=-2)).sum(-1)
        lo = np.prod((1 - Fu) ** w, axis=-2).sum(-1)
        return np.stack([mean, hi, lo], axis=-1)

    def per_prompt(idx: list[np.ndarray]) -> np.ndarray:
        return np.stack([cdf[i].mean(0) if len(i) else np.ones(cdf.shape[1]) for i in idx], axis=-2)

    point = stats(per_prompt(members))
    gen = np.random.default_rng(rng)
    if N > 1 and n_boot > 1:
        boots = [
            stats(per_prompt([m[gen.integers(0, len(m), len(m))] if len(m) else m for m in members]))
            for _ in range(n_boot)
        ]
        se = np.std(boots, axis=0, ddof=1)
    else:
        se = np.full(3, np.nan)
    return {
        "mean": float(point[0]),
        "max": float(point[1]),
        "min": float(point[2]),
        "mean_se": float(se[0]),
        "max_se": float(se[1]),
        "min_se": float(se[2]),
    }


def batch_depth_law(
    J: np.ndarray,
    batch: int,
    depth: int | np.ndarray,
    initial_memory: int = 0,
    groups: np.ndarray | None = None,
    rng: np.random.Generator | int | None = None,
    rows: int = 8192,
    row_prompts: np.ndarray | None = None,
    caps: np.ndarray | None = None,
) -> np.ndarray:
    r"""Law ``[D + 1]`` of the draft depth a *batch* plays in a round: the largest depth over the
    rows still generating, simulated on the rounds chain.

    A batch drafts ``K_r = \max_{b:\, R_b \ge r} k_{b,r}`` tokens in its round ``r``: finished rows
    draft nothing, and a row at start ``n`` drafts ``k = \min(D, T - n)`` (``depth`` an int ``D``)
    or ``\min(k', T - n)`` with ``k' ~ depth`` (a law ``[D + 1]`` of a policy's drafted length,
    or ``[P, D + 1]``: one law per prompt, row ``b`` drawing from its prompt's law).
    Near the end of the horizon every row has few tokens left at once and the last rounds have
    few rows, so ``K_r`` is smaller than the largest of ``B`` independent round depths. Rows follow
    ``J [N, T, M, T + 1, M]`` (:func:`~spectheory.validation.round_kernels.path_kernel`, ...) from start 0; row ``b`` takes a path of
    prompt ``b mod P`` (``groups``, as :func:`batch_rounds`; ``row_prompts [B]``: prompt
    ``row_prompts[b]``) or a uniform path; about ``rows`` rows are simulated in all (batches of
    ``batch``). ``caps [N, T]`` (a draft that knows how far it can propose, prompt lookup): a
    row of path ``i`` at start ``n`` drafts at most ``caps[i, n]``. Returns the frequency of each
    ``K`` over all simulated batch rounds.

    Examples
    --------
    Every draft accepted, ``gamma = 2``, ``T = 5``: rounds start at 0 and 3, drafting 2 and 2.

    >>> from spectheory.validation.round_kernels import path_kernel
    >>> J = path_kernel([[0.0] * 5], 2)
    >>> batch_depth_law(J, 4, 2, rng=0).tolist()
    [0.0, 0.0, 1.0]

    Near the end rows are short of tokens: ``gamma = 4``, ``T = 6``, all accepted: rounds start at
    0 (4 drafted, then the bonus) and 5 (1 left).

    >>> batch_depth_law(path_kernel([[0.0] * 6], 4), 2, 4, rng=0).tolist()
    [0.0, 0.5, 0.0, 0.0, 0.5]
    """
    B = check_int(batch, "batch", 1)
    J = np.asarray(J, dtype=np.float64)
    N, T, M = J.shape[:3]
    gen = np.random.default_rng(rng)
    law = None if np.ndim(depth) == 0 else np.atleast_2d(np.asarray(depth, dtype=np.float64))
    D = int(depth) if law is None else law.shape[1] - 1
    cdf = None if law is None else np.cumsum(law / law.sum(1, keepdims=True), axis=1)
    n_batches = max(1, -(-int(rows) // B))
    S = n_batches * B
    g = None if groups is None else np.asarray(groups, dtype=np.int64)
    if g is None:
        path = gen.integers(0, N, S)
    else:
        members = [np.flatnonzero(g == p) for p in range(int(g.max()) + 1)]
        own = np.arange(B) if row_prompts is None else np.asarray(row_prompts, dtype=np.int64)
        prompt = np.tile(own % len(members), n_batches)
        path = np.array([m[gen.integers(len(m))] for m in (members[p] for p in prompt)])
    if law is not None and len(law) > 1:  # one drafted-length law per prompt
        if g is None or len(law) != int(g.max()) + 1:
            raise ValueError(f"depth: {len(law)} laws need groups with {len(law)} prompts")
        row_law = g[path]
    else:
        row_law = np.zeros(S, np.int64)
    flat = np.cumsum(J.reshape(N, T, M, (T + 1) * M), axis=-1)
    n, a = np.zeros(S, np.int64), np.full(S, int(initial_memory), np.int64)
    counts = np.zeros(D + 1)
    for _ in range(T):  # a round advances every live row by at least one position
        live = n < T
        if not live.any():
            break
        if cdf is None:
            k = np.minimum(D, T - n)
        else:  # row i's draft length from its prompt's law, by inverse CDF
            k = np.minimum((gen.random(S)[:, None] > cdf[row_law]).sum(1), D)
            k = np.minimum(k, T - n)
        if caps is not None:
            k = np.minimum(k, np.asarray(caps)[path, np.minimum(n, T - 1)])
        k = np.where(live, k, -1).reshape(n_batches, B).max(1)  # per batch; -1: batch done
        counts += np.bincount(k[k >= 0], minlength=D + 1)[: D + 1]
        idx = np.flatnonzero(live)
        u = gen.random(len(idx))
        c = flat[path[idx], n[idx], a[idx]]
        nxt = np.minimum((u[:, None] * c[:, -1:] > c).sum(1), (T + 1) * M - 1)
        n[idx], a[idx] = np.divmod(nxt, M)
    return counts / counts.sum()

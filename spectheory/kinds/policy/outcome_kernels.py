r"""The outcome kernel of rounds along output paths, and the jump kernel and the dynamic programme
every kind derives from it (pure numpy; ``docs/tune.md`` §3).

Given a target path ``x`` the verifier's outcomes are independent coin flips, so the rounds along
the path form a Markov chain on (round start ``n``, memory ``a``; a draft-length policy's memory).
A round kind is described by one array, its *outcome kernel*

.. math:: O_i(n, a; j, \rho) = P(\text{the round from } (n, a) \text{ accepts } j \text{ drafts
          and ends rejected } (\rho = 1) \text{ or not } (\rho = 0) \mid \text{path } i),

stored by round start, ``O [T, D + 1, 2, N, M]``, and nothing else is kind-specific: the next
round starts at ``n + j + 1`` after a rejection (its correction emitted) and at ``n + j`` plus a
bonus token (``bonus`` and ``n + j < T``) otherwise, with memory ``next_memory(a, not rejected)``.

- :func:`outcome_dp` -- the expected visits of every round start and every round statistic
  (target calls, rejections, accepted drafts, rounds accepting ``j``), by one forward pass;
- :func:`jump_kernel` -- the transition matrix ``J [N, T, M, T + 1, M]`` that the law of the
  number of rounds and the batch simulations read;
- :func:`policy_outcomes` -- the draft-length policy kind's kernel (its stop decisions along the
  paths: :func:`stop_along_paths`). :func:`~.along_paths.policy_round_dp` is
  ``outcome_dp`` of ``policy_outcomes``; the path and tree kinds' kernels live with their
  predictions (:mod:`spectheory.validation.round_kernels`).

Examples
--------
Never rejected, fixed gamma 2 over 6 tokens: rounds from 0 and 3, each accepting 2 (+ bonus).

>>> from spectheory.stopping import FixedGamma
>>> O, moves, m0 = policy_outcomes({"reject": [[0.0] * 6]}, FixedGamma(2))
>>> out = outcome_dp(O, True, moves, m0)
>>> out["target_calls"].tolist(), out["counts"].tolist()
([2.0], [[0.0, 0.0, 2.0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._guards import check_int
from .policies import Policy, StopContext, require_memory

__all__ = ["Moves", "outcome_dp", "jump_kernel", "policy_outcomes", "stop_along_paths"]

#: ``(ok, rejected)``: the memory after a round from each memory value, ``[M]`` int arrays each.
Moves = tuple[np.ndarray, np.ndarray]


def stop_along_paths(
    policy: Policy, depth: int, kmax: int, n: int, inputs: dict[str, Any], N: int, M: int
) -> np.ndarray:
    """The policy's stop decisions ``[N, M]`` after the ``depth``-th draft of a round starting at
    position ``n`` of ``N`` paths, for each of its ``M`` memory values (always stop at ``kmax``).

    ``inputs`` maps ``top``, ``entropy``, ``token_prob`` to ``[N, T]`` arrays (or None): the
    draft law's statistics at each position of the paths, the only things a runnable rule reads.
    """
    if depth == kmax:
        return np.ones((N, M), dtype=bool)
    m = n + depth - 1
    none = np.full((1, M), -1)
    col: dict[str, Any] = {
        k: None if v is None else np.asarray(v, np.float64)[:, m, None] for k, v in inputs.items()
    }
    ctx = StopContext(
        depth=depth,
        position=np.full((N, 1), n),
        start_state=none,
        prev_state=none,
        token=none,
        state=none,
        accept_prob=None,
        memory=np.arange(M)[None, :],
        **col,
    )
    try:
        return np.broadcast_to(np.asarray(policy.stop(ctx), dtype=bool), (N, M))
    except TypeError as exc:
        raise ValueError(
            f"top, entropy, token_prob: {policy.name} needs the draft law's statistics "
            f"along the paths ({exc})"
        ) from None


def policy_outcomes(inputs: dict, policy: Policy, gamma: int | None = None) -> tuple[np.ndarray, Moves, int]:
    """``(O [T, D + 1, 2, N, M], (ok, rejected) memory moves, initial memory)`` of a draft-length
    policy's rounds along output paths (the rounds of
    :func:`~.along_paths.policy_round_dp`, same inputs: ``reject`` and the
    draft law's ``top``, ``entropy``, ``token_prob``; ``gamma`` an extra cap)."""
    r = np.atleast_2d(np.asarray(inputs["reject"], dtype=np.float64))
    N, T = r.shape
    stats = {k: inputs.get(k) for k in ("top", "entropy", "token_prob")}
    D = int(policy.max_depth) if gamma is None else min(int(policy.max_depth), check_int(gamma, "gamma", 1))
    require_memory(policy, ("flag",), "the policy jump kernel")
    M = int(policy.n_memory)
    mems = np.arange(M)
    ok = np.asarray(policy.next_memory(mems, np.ones(M, bool)), dtype=np.int64)
    rej = np.asarray(policy.next_memory(mems, np.zeros(M, bool)), dtype=np.int64)
    O = np.zeros((T, D + 1, 2, N, M))
    for n in range(T):
        kmax = min(D, T - n)
        alive = np.ones((N, M))
        for i in range(1, kmax + 1):
            stopped = alive * r[:, n + i - 1, None]
            O[n, i - 1, 1] = stopped
            alive = alive - stopped
            done = np.where(stop_along_paths(policy, i, kmax, n, stats, N, M), alive, 0.0)
            O[n, i, 0] = done
            alive = alive - done
            if not alive.any():
                break
    return O, (ok, rej), int(policy.initial_memory)


def _targets(n: int, j: int, T: int, bonus: bool) -> tuple[int, int]:
    """Next round start after a round from ``n`` accepting ``j``: (not rejected, rejected; a
    rejection at ``j`` checked position ``n + j < T``)."""
    return min(n + j + (1 if bonus and n + j < T else 0), T), min(n + j + 1, T)


def _move_matrices(moves: Moves | None, M: int) -> tuple[np.ndarray, np.ndarray] | None:
    if moves is None:
        return None
    return tuple(np.eye(M)[np.asarray(m, dtype=np.int64)] for m in moves)  # type: ignore[return-value]


def jump_kernel(outcomes: Any, bonus: bool = True, moves: Moves | None = None) -> np.ndarray:
    """The jump kernel ``J [N, T, M, T + 1, M]`` of an outcome kernel: ``J[i, n, a, n', a']`` the
    probability that the round from ``(n, a)`` is followed by one from ``(n', a')`` (``n' = T``:
    done). ``moves``: the memory after a round (``(ok, rejected)``; ``None``: unchanged)."""
    O = np.asarray(outcomes, dtype=np.float64)
    T, D1, _, N, M = O.shape
    ok, rej = (np.arange(M), np.arange(M)) if moves is None else moves
    cols = np.arange(M)
    J = np.zeros((N, T, M, T + 1, M))
    for n in range(T):
        for j in range(min(D1 - 1, T - n) + 1):
            to_ok, to_rej = _targets(n, j, T, bonus)
            J[:, n, cols, to_rej, rej] += O[n, j, 1]
            J[:, n, cols, to_ok, ok] += O[n, j, 0]
    return J


def outcome_dp(
    outcomes: Any, bonus: bool = True, moves: Moves | None = None, initial_memory: int = 0
) -> dict[str, np.ndarray]:
    r"""Exact expected round statistics per path from an outcome kernel ``O [T, D + 1, 2, N, M]``.

    A forward pass over round starts: ``visits[n, a]`` (expected rounds starting at ``(n, a)``)
    sends ``visits * O[n, a, j, rho]`` to the next start (module docstring). Returns ``visits
    [N, T, M]`` and, per path ``[N]``: ``target_calls`` (rounds), ``rejections`` (rounds ended by a
    rejection), ``full_rounds`` (the others), ``accepted`` (accepted drafts) and ``counts
    [N, D + 1]`` (rounds accepting ``j``).
    """
    O = np.asarray(outcomes, dtype=np.float64)
    T, D1, _, N, M = O.shape
    mats = _move_matrices(moves, M)
    start = np.zeros((T + 1, N, M))  # by round start, every path at once
    start[0, :, int(initial_memory)] = 1.0
    shift = 1 if bonus else 0
    per = np.zeros((D1, 2, N, M))  # expected rounds by outcome
    for n in range(T):
        f = start[n].copy()  # (a round accepting nothing without a bonus would restart at n)
        if not f.any():
            continue
        per += O[n] * f
        inside = min(D1 - 1, T - n - 1)  # rounds ending before the horizon: j + 1 <= T - n
        for rho, to in ((1, n + 1), (0, n + shift)):  # rejected: its correction; else: a bonus
            mass = f * O[n, : inside + 1, rho]  # [j, N, M], to starts to + j
            start[to : to + inside + 1] += mass if mats is None else mass @ mats[rho]
        if T - n <= D1 - 1:  # accepting every token left ends the generation
            mass = f * O[n, T - n, 0]
            start[T] += mass if mats is None else mass @ mats[0]
    visits = start[:T].transpose(1, 0, 2)
    counts = per.sum((1, 3)).T
    return {
        "visits": visits,
        "target_calls": visits.sum((1, 2)),
        "rejections": per[:, 1].sum((0, 2)),
        "full_rounds": per[:, 0].sum((0, 2)),
        "accepted": counts @ np.arange(D1, dtype=np.float64),
        "counts": counts,
    }

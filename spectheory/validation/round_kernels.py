r"""One jump kernel per round kind along output paths; the dynamic programme and the jump
matrix of every kind derived from it (pure numpy).

Given a target path ``x`` the verifier's outcomes are independent coin flips (``docs/tune.md`` §3,
:mod:`.predict`), so the rounds along the path form a Markov chain on (round start ``n``, memory
``a``; a draft-length policy's memory, one value for paths and trees). A round kind is described
by one array, its *outcome kernel*

.. math:: O_i(n, a; j, \rho) = P(\text{the round from } (n, a) \text{ accepts } j \text{ drafts
          and ends rejected } (\rho = 1) \text{ or not } (\rho = 0) \mid \text{path } i),

stored by round start, ``O [T, D + 1, 2, N, M]`` (``O[n, j, rho]`` holds every path and memory
at once, as the forward pass reads it), and nothing else is kind-specific: the next round starts at
``n + j + 1`` after a rejection (its correction emitted) and at ``n + j`` plus a bonus token
(``bonus`` and ``n + j < T``) otherwise, with memory ``next_memory(a, not rejected)``.
From the kernel:

- :func:`outcome_dp` -- the expected visits of every round start and every round statistic
  (target calls, rejections, accepted drafts, rounds accepting ``j``), by one forward pass;
- :func:`jump_kernel` -- the transition matrix ``J [N, T, M, T + 1, M]`` that the law of the
  number of rounds (:func:`~.cost_rounds.rounds_law`) and the batch simulations read.

The kernels: :func:`path_outcomes` (fixed ``gamma``, token verification), :func:`tree_outcomes`
(a draft tree with node-local verifiers), :func:`policy_outcomes` (a runnable draft-length
policy). :func:`~.predict.round_dp`, :func:`~.trees.tree_round_dp` and
:func:`~.tree_rounds.emission_dp` are :func:`outcome_dp` of their kind's kernel;
:func:`path_kernel`, :func:`tree_kernel` and :func:`policy_kernel` its :func:`jump_kernel`.

Examples
--------
Never rejected, ``gamma = 2`` over 6 tokens: rounds from 0 and 3, each accepting 2 (+ bonus).

>>> out = outcome_dp(path_outcomes([[0.0] * 6], 2))
>>> out["target_calls"].tolist(), out["counts"].tolist()
([2.0], [[0.0, 0.0, 2.0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._guards import check_int
from ..stopping.along_paths import stop_along_paths
from ..stopping.policies import Policy, require_memory

__all__ = [
    "path_outcomes",
    "tree_outcomes",
    "policy_outcomes",
    "outcome_dp",
    "jump_kernel",
    "path_kernel",
    "tree_kernel",
    "policy_kernel",
]

#: ``(ok, rejected)``: the memory after a round from each memory value, ``[M]`` int arrays each.
Moves = tuple[np.ndarray, np.ndarray]


def path_outcomes(reject: Any, gamma: int) -> np.ndarray:
    """Outcome kernel ``[T, gamma + 1, 2, N, 1]`` of fixed-``gamma`` path rounds: a round from
    ``n`` checks ``k = min(gamma, T - n)`` positions, each rejected with probability
    ``reject[:, m]``, and stops at the first rejection."""
    r = np.atleast_2d(np.asarray(reject, dtype=np.float64))
    gamma = check_int(gamma, "gamma", 1)
    N, T = r.shape
    by_pos = np.ascontiguousarray(r.T)
    O = np.zeros((T, gamma + 1, 2, N, 1))
    for n in range(T):
        k = min(gamma, T - n)
        surv = np.ones(N)
        for j in range(k):
            stop = surv * by_pos[n + j]
            O[n, j, 1, :, 0] = stop
            surv = surv - stop
        O[n, k, 0, :, 0] = surv
    return O


def tree_outcomes(tree: Any, tables: dict, T: int) -> np.ndarray:
    """Outcome kernel ``[T, D + 1, 2, N, 1]`` of tree rounds with node-local verifiers, from the
    tables of :func:`~.trees.tree_round_dp` (``k -> (a [k, N, T, D], res [N, T, D])``): from a
    node at depth ``d`` the mass goes to child slot ``j`` with ``a[j]``, or ends the round
    rejected with ``res``; a leaf (or depth ``min(D, T - n)``) ends it accepted."""
    N = next(iter(tables.values()))[1].shape[0]
    D = int(tree.max_depth)
    O = np.zeros((T, D + 1, 2, N, 1))
    depth = np.asarray(tree.depth)
    for n in range(T):
        kmax = min(D, T - n)
        mass = {0: np.ones(N)}
        for u in range(tree.n_nodes):
            du = int(depth[u])
            if du > kmax or u not in mass:
                continue
            m = mass.pop(u)
            kids = tree.children[u] if du < kmax else ()
            if kids:
                a, res = tables[len(kids)]
                for j, c in enumerate(kids):
                    mass[c] = m * a[j][:, n, du]
                O[n, du, 1, :, 0] += m * res[:, n, du]
            else:
                O[n, du, 0, :, 0] += m
    return O


def policy_outcomes(inputs: dict, policy: Policy, gamma: int | None = None) -> tuple[np.ndarray, Moves, int]:
    """``(O [T, D + 1, 2, N, M], (ok, rejected) memory moves, initial memory)`` of a draft-length
    policy's rounds along output paths (the rounds of
    :func:`~spectheory.stopping.along_paths.policy_round_dp`, same inputs: ``reject`` and the
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


def path_kernel(reject: np.ndarray, gamma: int, bonus: bool = True) -> np.ndarray:
    """Jump kernel ``J [N, T, 1, T + 1, 1]`` of fixed-``gamma`` path rounds
    (:func:`jump_kernel` of :func:`path_outcomes`).

    Examples
    --------
    >>> J = path_kernel([[0.0, 0.0, 0.0]], 2)
    >>> J[0, 0, 0, :, 0].tolist()   # from 0: 2 accepted + bonus -> start 3 = done
    [0.0, 0.0, 0.0, 1.0]
    """
    return jump_kernel(path_outcomes(reject, gamma), bonus)


def tree_kernel(tree: Any, tables: dict, T: int) -> np.ndarray:
    """Jump kernel ``J [N, T, 1, T + 1, 1]`` of tree rounds with node-local verifiers
    (:func:`jump_kernel` of :func:`tree_outcomes`, same arguments)."""
    return jump_kernel(tree_outcomes(tree, tables, T))


def policy_kernel(
    inputs: dict, policy: Policy, gamma: int | None = None, bonus: bool = True
) -> tuple[np.ndarray, int]:
    """Jump kernel ``J [N, T, M, T + 1, M]`` of a draft-length policy's rounds and the initial
    memory (:func:`jump_kernel` of :func:`policy_outcomes`, same inputs)."""
    O, moves, m0 = policy_outcomes(inputs, policy, gamma)
    return jump_kernel(O, bonus, moves), m0

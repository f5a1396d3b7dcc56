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
From the kernel, :func:`~spectheory.kinds.policy.outcome_kernels.outcome_dp` gives the expected
visits of every round start and every round statistic by one forward pass, and
:func:`~spectheory.kinds.policy.outcome_kernels.jump_kernel` the transition matrix
``J [N, T, M, T + 1, M]`` that the law of the number of rounds (:func:`~spectheory.tuning.cost_rounds.rounds_law`)
and the batch simulations read (both in :mod:`spectheory.kinds.policy.outcome_kernels`, beside the
policy kind's kernel :func:`~spectheory.kinds.policy.outcome_kernels.policy_outcomes`).

The kernels here: :func:`block_outcomes` (a rejection table by round start and depth: block
drafters), :func:`path_outcomes` (fixed ``gamma``, token verification: the block table of one
rejection per position) and
:func:`tree_outcomes` (a draft tree with node-local verifiers). :func:`~.predict.round_dp`,
:func:`~.tree_decoding.tree_round_dp`, :func:`~.tree_rounds.emission_dp` and
:func:`~spectheory.stopping.along_paths.policy_round_dp` are ``outcome_dp`` of their kind's
kernel; :func:`path_kernel`, :func:`tree_kernel` and :func:`policy_kernel` its ``jump_kernel``.

Examples
--------
Never rejected, ``gamma = 2`` over 6 tokens: rounds from 0 and 3, each accepting 2 (+ bonus).

>>> from spectheory.kinds.policy.outcome_kernels import outcome_dp
>>> out = outcome_dp(path_outcomes([[0.0] * 6], 2))
>>> out["target_calls"].tolist(), out["counts"].tolist()
([2.0], [[0.0, 0.0, 2.0]])
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._guards import check_int
from ..kinds.policy.outcome_kernels import jump_kernel, policy_outcomes
from ..kinds.policy.policies import Policy

__all__ = [
    "block_outcomes",
    "path_outcomes",
    "tree_outcomes",
    "path_kernel",
    "tree_kernel",
    "policy_kernel",
]


def block_outcomes(reject: Any, caps: Any = None) -> np.ndarray:
    """Outcome kernel ``[T, gamma + 1, 2, N, 1]`` of rounds that stop at their first rejection,
    from a rejection table ``reject [N, T, gamma]``: a round from ``n`` checks ``k = min(gamma,
    T - n)`` depths, depth ``j + 1`` rejected with probability ``reject[:, n, j]`` (a block
    drafter's, which depends on the round's start:
    :func:`~spectheory.validation.block_heads.head_reject_table`).

    ``caps`` (int ``[N, T]``, ``0 <= caps[i, n] <= min(gamma, T - n)``): a draft that caps its
    own proposals (prompt lookup's ``proposal_cap``) checks ``k = caps[i, n]`` depths in a
    round from ``n`` on path ``i``; ``k = 0`` is a plain target step (accepts nothing, never
    rejects, and its one token is the bonus token)."""
    r = np.asarray(reject, dtype=np.float64)
    if r.ndim != 3 or np.any(r < 0) or np.any(r > 1):
        raise ValueError(f"reject: probabilities of shape (N, T, gamma), got shape {r.shape}")
    N, T, gamma = r.shape
    full = np.minimum(gamma, T - np.arange(T))
    if caps is None:
        ks = np.broadcast_to(full, (N, T))
    else:
        ks = np.asarray(caps, dtype=np.int64)
        if ks.shape != (N, T) or (ks < 0).any() or (ks > full).any():
            raise ValueError(f"caps: expected ints in [0, min(gamma, T - n)] of shape {(N, T)}")
    by_start = np.ascontiguousarray(r.transpose(1, 2, 0))  # [T, gamma, N]
    rows = np.arange(N)
    O = np.zeros((T, gamma + 1, 2, N, 1))
    for n in range(T):
        k = ks[:, n]
        surv = np.ones(N)
        for j in range(int(k.max())):
            stop = surv * by_start[n, j] * (j < k)
            O[n, j, 1, :, 0] = stop
            surv = surv - stop
        O[n, k, 0, rows, 0] = surv
    return O


def path_outcomes(reject: Any, gamma: int, caps: Any = None) -> np.ndarray:
    """Outcome kernel ``[T, gamma + 1, 2, N, 1]`` of fixed-``gamma`` path rounds: a round from
    ``n`` checks ``k = min(gamma, T - n)`` positions, each rejected with probability
    ``reject[:, m]`` (``reject [N, T]``: one per position, whatever the round's start), and stops
    at the first rejection: :func:`block_outcomes` of the table ``reject[:, n + j]`` by start ``n``
    and depth ``j + 1`` (``caps`` as there)."""
    r = np.atleast_2d(np.asarray(reject, dtype=np.float64))
    gamma = check_int(gamma, "gamma", 1)
    N, T = r.shape
    padded = np.concatenate([r, np.zeros((N, gamma - 1))], axis=1)  # depths past the horizon: never read
    table = np.lib.stride_tricks.sliding_window_view(padded, gamma, axis=1)  # [N, T, gamma]
    return block_outcomes(table, caps)


def tree_outcomes(tree: Any, tables: dict, T: int) -> np.ndarray:
    """Outcome kernel ``[T, D + 1, 2, N, 1]`` of tree rounds with node-local verifiers, from the
    tables of :func:`~.tree_decoding.tree_round_dp` (``k -> (a [k, N, T, D], res [N, T, D])``): from a
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


def path_kernel(reject: np.ndarray, gamma: int, bonus: bool = True, caps: Any = None) -> np.ndarray:
    """Jump kernel ``J [N, T, 1, T + 1, 1]`` of fixed-``gamma`` path rounds
    (:func:`jump_kernel` of :func:`path_outcomes`; ``caps``: per path and start).

    Examples
    --------
    >>> J = path_kernel([[0.0, 0.0, 0.0]], 2)
    >>> J[0, 0, 0, :, 0].tolist()   # from 0: 2 accepted + bonus -> start 3 = done
    [0.0, 0.0, 0.0, 1.0]
    """
    return jump_kernel(path_outcomes(reject, gamma, caps), bonus)


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

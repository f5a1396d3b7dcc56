r"""Drafted-path enumeration: exact values of path (oracle) policies and the full-information optimum.

After drafting ``x_1..x_i`` from a round start, what remains of the round depends on the path
only through the current state ``s_i`` and the probability that every drafted token is
still accepted, :math:`\rho_i = \prod_{j \le i} \min(1, p(x_j)/q(x_j))` (p = target,
q = draft; ``docs/stopping.md``). A node of the drafted-path tree at depth ``i`` carries its
path probability ``w = prod q(x_j)`` and its alive mass ``w rho``; its value (absolute, per
round start) is

* stop: ``w t(i) e_time + w rho B_i(s_i)`` (the bonus token, then the next round);
* continue: ``w e_draft + w rho sum_y R(y|s_i) W(next(s_i, y)) + sum_children value``.

A policy picks one per node; the optimum picks the cheaper (ties: stop). The tree has up to
``S (V + ... + V^D)`` nodes (children of zero draft probability are pruned); a
``ValueError`` is raised past ``max_nodes``.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from ..._sizes import positive_branches
from ._kernels import CALLS, DRAFTS, N_COMP, TTIME, Kernels, single_thread, time_weights
from .context import StopContext
from .value import Counters, PolicyValue, _value, backward_positions, bonus_value, reject_value

if TYPE_CHECKING:
    from ..._protocols import ChainLike
    from ...cost.base import Cost
    from .policies import Policy

__all__ = ["evaluate_paths", "optimal_paths", "path_tree", "paths_counters"]

_E = np.eye(N_COMP)


class _Level:
    """One depth of the drafted-path tree: per node its parent, previous state, token, state,
    round-start state, path probability ``w``, alive probability ``rho`` and draft statistics."""

    __slots__ = ("parent", "prev", "token", "state", "root", "w", "rho", "top", "entropy", "token_prob")
    parent: np.ndarray
    prev: np.ndarray
    token: np.ndarray
    state: np.ndarray
    root: np.ndarray
    w: np.ndarray
    rho: np.ndarray
    top: np.ndarray
    entropy: np.ndarray
    token_prob: np.ndarray


def path_tree(K: Kernels, n: int, depth: int, max_nodes: int = 2_000_000) -> list:
    """Levels ``0..depth`` of the drafted-path tree of rounds starting at kernel index ``n`` (all start states)."""
    S = K.S
    root = _Level()
    root.state = root.root = np.arange(S)
    root.w = root.rho = np.ones(S)
    levels = [root]
    total = S
    for i in range(depth):
        laws, ch = K.at(n + i), K.check(n + i, i)
        up = levels[-1]
        q = ch.drafting[up.state]
        par, x, total = positive_branches(
            q,
            total,
            max_nodes,
            lambda: (
                f"max_nodes: the drafted-path tree (S={S}, V={K.V}, depth {depth}) has more "
                f"than {max_nodes} nodes; lower max_depth or use a smaller chain"
            ),
        )
        lv = _Level()
        lv.parent, lv.token = par, x
        lv.prev = up.state[par]
        lv.state = K.next_state[lv.prev, x]
        lv.root = up.root[par]
        lv.token_prob = laws.draft[lv.prev, x]
        lv.w = up.w[par] * q[par, x]
        lv.rho = up.rho[par] * ch.ratio[lv.prev, x]
        lv.top, lv.entropy = laws.top[lv.prev], laws.entropy[lv.prev]
        levels.append(lv)
    return levels


def _round(K, levels, n, kmax, T, W, tk, policy, weights, record=None):
    """Round values ``[S, 3]`` for rounds at ``n`` (memory 0), decisions by ``policy`` or optimal;
    ``record(n, L, level, stop)`` is called with each depth's decisions below the forced stop."""
    J = None
    for L in range(kmax, 0, -1):
        lv = levels[L]
        alive = (lv.w * lv.rho)[:, None]
        stopv = lv.w[:, None] * (tk[L - 1] * _E[TTIME]) + alive * bonus_value(K, W, n + L, T)[lv.state]
        if L == kmax:
            J, stop = stopv, np.ones(lv.w.size, dtype=bool)
        else:
            child = _sum_children(levels[L + 1].parent, J, lv.w.size)
            rej = reject_value(K, K.check(n + L, L).rej, W[n + L + 1][0])[lv.state]
            contv = lv.w[:, None] * _E[DRAFTS] + alive * rej + child
            if policy is not None:
                stop = node_stops(policy, lv, n, L)
            else:
                stop = stopv @ weights <= contv @ weights
            J = np.where(stop[:, None], stopv, contv)
            if record is not None:
                record(n, L, lv, stop)
    root_rej = reject_value(K, K.check(n, 0).rej, W[n + 1][0])
    return _E[CALLS] + _E[DRAFTS] + root_rej + _sum_children(levels[1].parent, J, K.S)


def node_stops(policy: Policy, lv: _Level, n: int, L: int) -> np.ndarray:
    """Whether ``policy`` stops at each node of depth ``L`` of a round at ``n`` (bool ``[nodes]``)."""
    ctx = StopContext(
        depth=L,
        position=np.full(lv.w.size, n),
        start_state=lv.root,
        prev_state=lv.prev,
        token=lv.token,
        state=lv.state,
        top=lv.top,
        entropy=lv.entropy,
        token_prob=lv.token_prob,
        accept_prob=lv.rho,
        memory=np.zeros(lv.w.size, dtype=np.int64),
    )
    return np.broadcast_to(np.asarray(policy.stop(ctx), dtype=bool), lv.w.shape)


def _sum_children(parent, J, size):
    return np.stack([np.bincount(parent, weights=J[:, c], minlength=size) for c in range(N_COMP)], axis=1)


def _run(chain, policy, T, cost, max_depth, max_nodes, progress, name, record=None, verifier="token"):
    K = Kernels(chain, verifier)
    D = max_depth
    tk = cost.call_times(D)
    weights = time_weights(cost)
    W = np.zeros((T + 1, 1, K.S, N_COMP))
    tree = None
    with single_thread(K.S):
        for n in backward_positions(T, name, progress, T * K.S * K.V ** min(D, 12)):
            kmax = min(D, T - n)
            if tree is None or not K.hom:
                tree = path_tree(K, n, kmax if not K.hom else D, max_nodes)
            W[n, 0] = _round(K, tree, n, kmax, T, W, tk, policy, weights, record)
    return chain.initial @ W[0, 0]


def evaluate_paths(
    chain: ChainLike,
    policy: Policy,
    horizon: int,
    cost: Cost | float | None,
    *,
    max_nodes: int = 2_000_000,
    progress: bool | None = None,
    verifier: Any = "token",
) -> PolicyValue:
    """Exact value of a (memoryless) policy that may use the drafted path, by enumeration
    (``verifier``: a token-by-token single-path rule, ``accept_prob`` its probability that
    every drafted token is accepted)."""
    if policy.n_memory != 1:
        raise ValueError("policy: path enumeration supports memoryless policies only")
    T = chain.check_horizon(horizon)
    name = "evaluate on paths"
    v = _run(chain, policy, T, cost, policy.max_depth, max_nodes, progress, name, verifier=verifier)
    return _value(T, cost, v, policy, counters=partial(paths_counters, chain, policy, T, verifier, max_nodes))


def paths_counters(
    chain: ChainLike, policy: Policy, horizon: int, verifier: Any = "token", max_nodes: int = 2_000_000
) -> Counters:
    """The forward masses (:class:`~spectheory.kinds.policy.value.Counters`) of a memoryless path
    policy, on the same drafted-path tree: the round-start law ``F_n`` is carried forward through
    each node's alive mass ``F_n(root) w rho``, its rejection branch (if the policy drafts on)
    and its bonus branch (if it stops)."""
    T = chain.check_horizon(horizon)
    K = Kernels(chain, verifier)
    S, D = K.S, policy.max_depth
    F = np.zeros((T + 1, S))
    F[0] = chain.initial
    starts, rej_pos, counts = np.zeros((T, S)), np.zeros(T), np.zeros(D + 1)
    tree = None
    for n in range(T):
        starts[n] = r = F[n]
        if not r.any():
            continue
        kmax = min(D, T - n)
        if tree is None or not K.hom:
            tree = path_tree(K, n, kmax if not K.hom else D, max_nodes)
        live = np.ones(S, dtype=bool)
        for L in range(kmax + 1):
            lv = tree[L]
            if L:
                live = live[lv.parent]
            alive = np.where(live, r[lv.root] * lv.w * lv.rho, 0.0)
            if L == kmax:
                stop = np.ones(lv.w.size, dtype=bool)
            else:  # the root (L = 0) always drafts
                stop = node_stops(policy, lv, n, L) if L else np.zeros(S, dtype=bool)
            ended = np.bincount(lv.state, weights=np.where(stop, alive, 0.0), minlength=S)
            counts[L] += ended.sum()
            if L and n + L < T:
                F[n + L + 1] += K.push(ended, K.at(n + L).target)
            if L < kmax:
                going = np.bincount(lv.state, weights=np.where(stop, 0.0, alive), minlength=S)
                rej = K.check(n + L, L).rej
                r_mass = going @ rej.sum(-1)
                rej_pos[n + L] += r_mass
                counts[L] += r_mass
                F[n + L + 1] += K.push(going, rej)
                live = live & ~stop
    return Counters(starts, rej_pos, counts)


def optimal_paths(
    chain: ChainLike,
    horizon: int,
    cost: Cost | float | None,
    max_depth: int,
    *,
    max_nodes: int = 2_000_000,
    progress: bool | None = None,
    record_decisions: bool = False,
    verifier: Any = "token",
) -> PolicyValue:
    """The full-information optimum (decisions on the drafted path and the target's laws), exactly
    (``verifier``: a token-by-token single-path rule; ``rho`` its all-accepted probability).

    With ``record_decisions``, ``extra["decisions"]`` lists, per position and depth below the
    forced stop, the nodes' states, ``accept_prob`` (rho), path probabilities and stop flags
    (used to check the threshold structure, ``docs/stopping.md`` Theorem 2).
    """
    T = chain.check_horizon(horizon)
    decisions: list[dict] = []

    def record(n: int, L: int, lv: _Level, stop: np.ndarray) -> None:
        decisions.append(
            {
                "position": n,
                "depth": L,
                "state": lv.state,
                "accept_prob": lv.rho,
                "weight": lv.w,
                "stop": stop,
            }
        )

    name = "path optimum"
    v = _run(
        chain,
        None,
        T,
        cost,
        max_depth,
        max_nodes,
        progress,
        name,
        record if record_decisions else None,
        verifier,
    )
    extra: dict[str, Any] = {"information": "path"}
    if record_decisions:
        extra["decisions"] = decisions
    counters = partial(_optimum_counters, chain, T, cost, max_depth, max_nodes, verifier)
    return _value(T, cost, v, f"optimum (path, max_depth={max_depth})", extra, counters=counters)


class _Replay:
    """The path optimum's decisions as a policy: at position ``n`` and depth ``L`` the stop flags
    the backward pass chose, node for node of the same drafted-path tree."""

    def __init__(self, stops: dict[tuple[int, int], np.ndarray], max_depth: int) -> None:
        self.stops, self.max_depth = stops, max_depth

    def stop(self, ctx: StopContext) -> np.ndarray:
        return self.stops[int(ctx.position[0]), ctx.depth]


def _optimum_counters(
    chain: ChainLike, T: int, cost: Any, max_depth: int, max_nodes: int, verifier: Any
) -> Counters:
    """The forward counters of the path optimum: its decisions again (the backward pass, keeping
    only the stop flags), then the forward pass of :func:`paths_counters` that replays them."""
    stops: dict[tuple[int, int], np.ndarray] = {}

    def keep(n: int, L: int, lv: _Level, stop: np.ndarray) -> None:
        stops[n, L] = stop

    _run(chain, None, T, cost, max_depth, max_nodes, False, "path optimum counters", keep, verifier)
    return paths_counters(chain, _Replay(stops, max_depth), T, verifier, max_nodes)  # type: ignore[arg-type]

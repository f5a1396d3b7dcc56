r"""Path-conditional prediction of any runnable controller along *output* paths (``docs/stopping.md`` §9).

:func:`~spectheory.stopping.along_paths.policy_round_dp` is exact for rules whose memory is a
finite flag. The engines' online controllers (:mod:`.controllers`, :mod:`.adaptive_steps`)
carry statistics learned from every round, so the recursion over (round start, memory) has no
finite state. Their prediction keeps the same conditioning: given the output path
``x_1..x_T``, position ``m`` (when checked) is rejected independently with probability
``r_m = max(0, 1 - q(x_m)/p(x_m))`` and, when rejected, the drafted token ``y`` there follows
``(q - p)^+ / TV`` independently of ``x_m`` (the joint law of (output, rejected, drafted) is
``(p(x) - q(x))^+ (q(y) - p(y))^+ / TV``). :func:`controller_along_paths` draws those coins
``n_coins`` times per path and plays the controller's rounds on them; its per-path means are
unbiased for the decoder's conditional expectations given the path (so their average over
target-sampled paths is unbiased for the decoder's expectations), and only one forward pass of
each model per path is needed (:func:`spectheory.validation.policy_predict.policy_path_inputs`).

Draft steps past a rejection are drafted off the output path: they are predicted for rules
whose stop decision reads only the depth and the memory (fixed gamma, the schedule without its
confidence test, the adaptive-K controllers, the bandit); for rules that read the draft's law
(confidence, entropy, the ROC threshold) ``draft_tokens`` and ``time`` are NaN.
"""

from __future__ import annotations

from typing import Any, cast

import numpy as np

from .._guards import check_int
from .._typing import RNGLike
from ..cost.base import Cost, as_cost
from ..kinds.policy.context import RoundFeedback, StopContext
from ..kinds.policy.policies import Policy

__all__ = ["controller_along_paths"]


def _stop(policy: Policy, depth: int, n: np.ndarray, mem: np.ndarray, stats: dict[str, Any]) -> np.ndarray:
    R = n.size
    none = np.full(R, -1)
    ctx = StopContext(
        depth=depth,
        position=n,
        start_state=none,
        prev_state=none,
        token=none,
        state=none,
        accept_prob=None,
        memory=mem,
        top=cast(Any, stats.get("top")),
        entropy=cast(Any, stats.get("entropy")),
        token_prob=cast(Any, stats.get("token_prob")),
    )
    return np.broadcast_to(np.asarray(policy.stop(ctx), dtype=bool), (R,))


def _length_only(policy: Policy, n: np.ndarray, mem: np.ndarray) -> bool:
    """Whether ``policy.stop`` decides without the draft law's statistics (probe with None)."""
    try:
        _stop(policy, 1, n[:1], mem[:1], {})
    except TypeError:
        return False
    return True


def controller_along_paths(
    inputs: dict[str, np.ndarray],
    policy: Policy,
    n_coins: int = 8,
    rng: RNGLike = None,
    gamma: int | None = None,
    cost: Cost | float | None = None,
) -> dict[str, np.ndarray]:
    r"""Per-path conditional means of a controller's round statistics, by drawing the coins.

    Each of the ``N`` paths is played ``n_coins`` times. A round at position ``n`` with memory
    ``mem`` drafts up to ``k_max = min(gamma, policy.max_depth, T - n)`` tokens; its ``i``-th
    token (position ``m = n + i - 1``) is rejected with probability ``reject[:, m]``; while
    accepted, the round stops at ``k_max`` or when ``policy.stop`` says so (context: depth,
    round start, memory and the draft law's ``top``/``entropy``/``token_prob`` at ``m``).
    A rejection at depth ``i`` sets ``j = i - 1`` accepted and the next round at ``m + 1``; a
    round accepting all ``k`` starts the next at ``n + k + 1`` (the bonus token; ``T`` at the
    horizon). The memory moves by ``policy.update`` with the round's
    :class:`~spectheory.kinds.policy.context.RoundFeedback`: accepted ``j``, drafted ``k`` and the
    drafted tokens' ``q`` (the path's ``token_prob`` up to ``j``, then a draw of
    ``rejected_prob``, the draft probability of the rejected drafted token).

    Parameters
    ----------
    inputs : dict
        ``reject``, ``top``, ``entropy``, ``token_prob`` arrays ``[N, T]`` (as from
        :func:`~spectheory.stopping.along_paths.chain_path_inputs` or
        :func:`~spectheory.validation.policy_predict.policy_path_inputs`) and, for rules whose
        update reads the rejected token's probability (:class:`~spectheory.stopping.ROCThreshold`),
        ``rejected_prob`` ``[N, T, S]`` (``S`` draws, used cyclically over the coins).
    policy : Policy
        A runnable rule (``uses_path`` and ``uses_start`` false), any ``memory_kind``.
    n_coins : int
        Coin draws per path.
    rng : seed or Generator
    gamma : int, optional
        The decoder's extra cap on the draft length.
    cost : Cost or float, optional
        For ``time``: ``c`` per draft step plus ``t(k)`` per target call (default ``c = 0``).

    Returns
    -------
    dict of float arrays ``[N]`` (means over the coins): ``target_calls``, ``accepted``,
    ``draft_tokens`` and ``time`` (NaN when a stop reads the draft's law, see the module
    docstring); ``n_coins`` (int).

    Examples
    --------
    Never rejected, fixed gamma 2 over 6 tokens: 2 calls, 4 draft steps.

    >>> import numpy as np
    >>> from spectheory.stopping import FixedGamma
    >>> out = controller_along_paths({"reject": np.zeros((1, 6))}, FixedGamma(2), 2, rng=0)
    >>> out["target_calls"].tolist(), out["draft_tokens"].tolist()
    ([2.0], [4.0])
    """
    if not isinstance(policy, Policy):
        raise ValueError(f"policy: expected a spectheory.stopping Policy, got {type(policy).__name__}")
    if policy.uses_path or policy.uses_start:
        raise ValueError(f"policy: {policy.name} reads chain states or the target's laws; not runnable")
    r = np.asarray(inputs["reject"], dtype=np.float64)
    if r.ndim != 2 or np.any((r < 0) | (r > 1)) or not np.all(np.isfinite(r)):
        raise ValueError(f"inputs['reject']: expected [N, T] entries in [0, 1], got shape {r.shape}")
    S = check_int(n_coins, "n_coins", 1)
    g = np.random.default_rng(rng)
    cst = as_cost(cost)
    N, T = r.shape
    D = int(policy.max_depth) if gamma is None else min(int(policy.max_depth), check_int(gamma, "gamma", 1))
    t_call = cst.call_times(D)
    stats = {
        k: None if inputs.get(k) is None else np.asarray(inputs[k], np.float64)
        for k in ("top", "entropy", "token_prob")
    }
    rej_q = inputs.get("rejected_prob")
    if getattr(policy, "reads_rejected_prob", False) and rej_q is None:
        raise ValueError(
            f"inputs: {policy.name} learns from the rejected token's draft probability; "
            "pass rejected_prob (rejected_draws > 0 in the path inputs)"
        )
    path = np.repeat(np.arange(N), S)  # run -> path
    coin = np.tile(np.arange(S), N)
    Rn = N * S
    init = np.asarray(policy.initial_memory)
    mem = np.tile(init.astype(np.float64), (Rn, 1)) if init.ndim else np.full(Rn, int(init), dtype=np.int64)
    n = np.zeros(Rn, dtype=np.int64)
    calls, acc, drafts = np.zeros(Rn), np.zeros(Rn), np.zeros(Rn)
    time = np.zeros(Rn)
    length_only = _length_only(policy, n, mem)
    while True:
        act = np.flatnonzero(n < T)
        if act.size == 0:
            break
        na, ma, pa = n[act], mem[act], path[act]
        A = act.size
        kmax = np.minimum(D, T - na)
        j = np.zeros(A, dtype=np.int64)
        k = np.zeros(A, dtype=np.int64)
        live = np.ones(A, dtype=bool)  # every drafted token so far accepted, still drafting
        off = np.zeros(A, dtype=bool)  # rejected, the drafter drafts on off the path
        q = np.zeros((A, D))
        u = g.random((A, D))
        for i in range(1, D + 1):
            playing = (live | off) & (i <= kmax)
            if not playing.any():
                break
            m = np.minimum(na + i - 1, T - 1)
            k = np.where(playing, i, k)
            col = {key: None if v is None else v[pa, m] for key, v in stats.items()}
            rejected = live & playing & (u[:, i - 1] < r[pa, m])
            acc_now = live & playing & ~rejected
            if col["token_prob"] is not None:
                q[:, i - 1] = np.where(acc_now, col["token_prob"], q[:, i - 1])
            if rej_q is not None and rejected.any():
                rq = np.asarray(rej_q)[pa, m, coin[act] % np.shape(rej_q)[2]]
                q[:, i - 1] = np.where(rejected, rq, q[:, i - 1])
            j = np.where(acc_now, i, j)
            done = i >= kmax
            if acc_now.any():
                stop = _stop(policy, i, na, ma, col) | done
                live = np.where(acc_now, ~stop, live)
            live = live & ~rejected
            if length_only:
                cont = off | rejected
                if cont.any():
                    stop = _stop(policy, i, na, ma, {}) | done
                    off = np.where(cont, ~stop, off)
            else:
                off[:] = False
                k = np.where(rejected, -(10**9), k)  # drafts past the rejection are unknown
        known = k > 0
        kk = np.where(known, k, j + 1)
        fb = RoundFeedback(accepted=j, drafted=kk, token_prob=q)
        mem[act] = np.asarray(policy.update(ma, fb)).astype(mem.dtype)
        calls[act] += 1
        acc[act] += j
        drafts[act] += np.where(known, kk, np.nan)
        time[act] += np.where(known, cst.c * kk + t_call[np.clip(kk, 1, D) - 1], np.nan)
        n[act] = np.minimum(na + j + 1, T)
    if not length_only:  # draft steps past rejections left the path: unknown everywhere
        drafts[:], time[:] = np.nan, np.nan
    out: dict[str, Any] = {}
    for name, v in (("target_calls", calls), ("accepted", acc), ("draft_tokens", drafts), ("time", time)):
        out[name] = v.reshape(N, S).mean(1)
    out["n_coins"] = S
    return out

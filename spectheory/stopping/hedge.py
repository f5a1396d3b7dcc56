r"""HedgeSpec (Liu et al., ICLR 2026, "Not-a-Bandit", arXiv 2510.20064) as a draft-length controller.

A *reading* of the paper (its algorithm listing was not available; its text, as summarised in
public reviews, was): HedgeSpec treats the choice among drafting options as a full-information
online-learning problem, not a bandit -- after each verification the verified tokens score
*every* option counterfactually, with no extra target call -- and runs NormalHedge (Chaudhuri,
Freund & Hsu, 2009) over the options. The paper's options are draft models; here, with one
draft model, they are draft lengths ``gamma`` (as :class:`~spectheory.stopping.UCBGamma`'s arms).

Counterfactual feedback of a round that drafted ``k`` and accepted ``j``: arm ``g`` would have
accepted ``min(j, g)`` when ``g <= k`` or ``j < k`` (observed), and at least ``k`` when
``g > k = j`` (censored: the paper's §B.4 notes the censoring). A censored arm is scored by
imputing its unverified positions with the run's per-token acceptance rate so far,
``rho = accepted / checked`` over earlier rounds (checked: the accepted tokens and the first
rejected one): ``a = k + rho + ... + rho^(g - k)`` (our choice; the lower bound ``k`` alone would
never let a longer arm win).
Its reward is the round's speed ``(a + 1) / (c g + t(g))`` (``a`` its accepted count) divided by
the largest possible, ``max_g (g + 1) / (c g + t(g))``; loss ``= 1 - reward`` in ``[0, 1]``.
NormalHedge: with regrets ``R_g = sum_rounds (sum_h w_h l_h - l_g)``, the weights are
``w_g ∝ ([R_g]^+ / s) exp(([R_g]^+)^2 / (2 s))`` where ``s > 0`` solves
``mean_g exp(([R_g]^+)^2 / (2 s)) = e`` (uniform while no regret is positive). The next round
drafts the heaviest arm (ties: the shortest) -- a deterministic reading of "select the drafter".
The memory is continuous (``memory_kind = "online"``): Monte Carlo on chains, and the
path-conditional prediction (:mod:`.coins_along_paths`) on the real models.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..cost.base import Cost, as_cost
from ..kinds.policy.context import RoundFeedback, StopContext
from ..kinds.policy.policies import Policy

__all__ = ["HedgeGamma", "normalhedge_weights"]


def normalhedge_weights(regret: ArrayLike, iters: int = 60) -> np.ndarray:
    r"""NormalHedge's weights per row of ``regret`` ``[R, A]`` (rows sum to 1).

    ``w_a ∝ ([R_a]^+ / s) exp(([R_a]^+)^2 / (2 s))`` with ``s`` solving
    ``mean_a exp(([R_a]^+)^2 / (2 s)) = e`` (bisection on ``log s``, ``iters`` steps); rows
    with no positive regret get uniform weights.

    Examples
    --------
    >>> normalhedge_weights([[0.0, 0.0], [1.0, -1.0]]).tolist()
    [[0.5, 0.5], [1.0, 0.0]]
    """
    r = np.atleast_2d(np.asarray(regret, dtype=np.float64))
    pos = np.maximum(r, 0.0)
    R, A = r.shape
    any_pos = pos.max(1) > 0
    sq = pos**2 / 2.0
    # mean exp(sq / s) decreases in s: bracket s in [max(sq) / log(A e), max(sq) / 1] (at most)
    top = np.maximum(sq.max(1), 1e-300)
    lo, hi = np.log(top / np.log(A * np.e)), np.log(top) + 1.0
    for _ in range(int(iters)):
        mid = (lo + hi) / 2
        s = np.exp(mid)[:, None]
        f = np.mean(np.exp(np.minimum(sq / s, 700.0)), 1)
        big = f > np.e  # s too small
        lo, hi = np.where(big, mid, lo), np.where(big, hi, mid)
    s = np.exp(hi)[:, None]
    logw = np.where(pos > 0, np.log(np.where(pos > 0, pos, 1.0) / s) + sq / s, -np.inf)
    logw = logw - np.where(any_pos, logw.max(1), 0.0)[:, None]
    w = np.exp(logw)
    w = np.where(any_pos[:, None], w, 1.0)
    return w / w.sum(1, keepdims=True)


class HedgeGamma(Policy):
    r"""HedgeSpec's full-information NormalHedge over draft lengths (module docstring: a reading).

    Parameters
    ----------
    arms : sequence of int
        Candidate draft lengths.
    cost : Cost or float, optional
        The round time ``c g + t(g)`` in the speed reward.

    Examples
    --------
    Always accepted: the longest arm takes over.

    >>> import spectheory as st
    >>> from spectheory.stopping import HedgeGamma
    >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])
    >>> res = st.simulate(chain, 60, HedgeGamma((1, 2, 4), cost=0.1), 4, rng=0, cost=0.1)
    >>> int(res.target_calls.max()) <= 60 // 5 + 3
    True
    """

    memory_kind = "online"

    def __init__(self, arms: ArrayLike = (1, 2, 3, 4, 6, 8), cost: Cost | float | None = None) -> None:
        a = np.asarray(arms)
        if a.ndim != 1 or a.size == 0 or not np.issubdtype(a.dtype, np.integer) or a.min() < 1:
            raise ValueError(f"arms: expected a non-empty 1-d list of draft lengths >= 1, got {arms!r}")
        self.arms = np.unique(a.astype(np.int64))
        self.max_depth = check_int(int(self.arms.max()), "arms", 1)
        self.cost = as_cost(cost)
        t = self.cost.call_times(self.max_depth)[self.arms - 1]
        self._time = self.cost.c * self.arms + t
        self._norm = float(np.max((self.arms + 1) / self._time))
        A = self.arms.size
        # memory row: regrets [A], accepted tokens, checked tokens, current arm (start: the shortest)
        self.initial_memory = np.zeros(A + 3)  # type: ignore[assignment]

    def stop(self, ctx: StopContext) -> np.ndarray:
        arm = np.asarray(ctx.memory)[..., -1].astype(np.int64)
        out = ctx.depth >= self.arms[arm]
        return np.broadcast_to(out, np.broadcast_shapes(np.shape(out), np.shape(ctx.state)))

    def losses(self, accepted: ArrayLike, drafted: ArrayLike, rate: ArrayLike) -> np.ndarray:
        """Counterfactual loss ``[R, A]`` of every arm after a round that drafted ``drafted`` and
        accepted ``accepted`` (per run), censored arms imputed at per-token acceptance ``rate``."""
        j = np.asarray(accepted, dtype=np.float64)[:, None]
        k = np.asarray(drafted, dtype=np.float64)[:, None]
        rho = np.clip(np.asarray(rate, dtype=np.float64), 0.0, 1.0)[:, None]
        g = self.arms[None, :].astype(np.float64)
        extra = np.maximum(g - k, 0.0)
        with np.errstate(invalid="ignore", divide="ignore"):
            geo = np.where(rho < 1.0, rho * (1.0 - rho**extra) / (1.0 - rho), extra)
        acc = np.where((j >= k) & (g > k), k + geo, np.minimum(j, g))
        return 1.0 - (acc + 1.0) / self._time[None, :] / self._norm

    def update(self, memory: np.ndarray, feedback: RoundFeedback) -> np.ndarray:
        mem = np.array(memory, dtype=np.float64)
        A = self.arms.size
        j = np.asarray(feedback.accepted, dtype=np.float64)
        k = np.asarray(feedback.drafted, dtype=np.float64)
        seen = mem[:, A + 1]
        rate = np.where(seen > 0, mem[:, A] / np.where(seen > 0, seen, 1.0), 1.0)  # optimistic start
        loss = self.losses(j, k, rate)
        mem[:, A] += j
        mem[:, A + 1] += j + (j < k)
        w = normalhedge_weights(mem[:, :A])
        mem[:, :A] += (w * loss).sum(1, keepdims=True) - loss
        w = normalhedge_weights(mem[:, :A])
        mem[:, -1] = np.argmax(w, axis=1)  # first maximum: the shortest of tied arms
        return mem

    def __repr__(self) -> str:
        return f"HedgeGamma({self.arms.tolist()}, c={self.cost.c:g})"

r"""Monte Carlo engine shared by the rejection-based, batch and biased verifiers.

For rules that act one position at a time (every emitted token is either a *check* of
one draft token or a *bonus* token from the target), :func:`simulate_positional` is a
Monte Carlo simulator vectorised over runs (the Python loop runs over positions only),
drawing the uniforms and delegating the decision to a pure rule. The exact counterpart
is :func:`spectheory.exact.expectations.phase_recursion` (``gamma=None`` here is ``gamma=T``
there).

It follows the protocol of DESIGN.md: a round at position ``n0`` drafts
``k = min(gamma, T - n0)`` tokens (``gamma=None`` means ``k = T - n0``, drafting to the
end of the horizon); a rejection ends the round; when all ``k`` are accepted and
``n0 + k < T`` a bonus token is drawn from the target if ``bonus=True``. Drafting lazily
(the next draft token is drawn when its check comes) has the same law as drafting the
``k`` tokens up front, since draft token ``i + 1`` depends only on the prefix.
Notation: p = target, q = draft.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validation import check_int
from ..montecarlo.simulator import mean_and_se
from ..laws.sampling import sample_categorical

__all__ = ["per_kernel", "round_length", "simulate_positional", "PositionalResult"]


def per_kernel(chain, build):
    """``n -> build(target_n, draft_n)``, computed once per distinct kernel and cached.

    Homogeneous chains share one kernel for every position; otherwise the value is cached
    per position index ``n``.
    """
    cache = {}

    def get(n):
        key = 0 if chain.is_homogeneous else n
        if key not in cache:
            cache[key] = build(*chain.kernels(n))
        return cache[key]
    return get


def round_length(gamma, horizon: int, n0: int) -> int:
    """Draft length ``k = min(gamma, T - n0)`` of a round at ``n0`` (``gamma=None``: ``T - n0``)."""
    return horizon - n0 if gamma is None else min(gamma, horizon - n0)


def _check_gamma(gamma):
    return None if gamma is None else check_int(gamma, "gamma", 1)


@dataclass
class PositionalResult:
    """Per-run counts from :func:`simulate_positional` (int64 arrays of shape ``[n_runs]``).

    ``position_rejections[n]`` counts the runs whose position ``n`` was a rejection;
    ``tokens`` is ``[n_runs, T]`` when requested. :meth:`mean` and :meth:`se` give the
    sample mean and its standard error of a per-run statistic.
    """

    rejections: np.ndarray
    target_calls: np.ndarray
    draft_tokens: np.ndarray
    accepted: np.ndarray
    position_rejections: np.ndarray
    tokens: np.ndarray | None = None
    extra: dict = field(default_factory=dict)

    @property
    def n_runs(self) -> int:
        return int(self.rejections.size)

    def mean(self, name: str) -> float:
        return float(np.mean(getattr(self, name)))

    def se(self, name: str) -> float:
        """Standard error of the mean (0 for a single run, as :func:`spectheory.montecarlo.mean_and_se`)."""
        return mean_and_se(getattr(self, name))[1]

    def summary(self) -> dict:
        """``{name: (mean, standard error)}`` for the per-run statistics."""
        return {k: (self.mean(k), self.se(k))
                for k in ("rejections", "target_calls", "draft_tokens", "accepted")}


def simulate_positional(chain, horizon, gamma, n_runs, rng, step, bonus=False,
                        return_tokens=False, drafts_per_token=1, progress=None):
    """Monte Carlo of a position-level rule, vectorised over runs.

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
    gamma : int or None
        Draft length per round (None: to the end of the horizon).
    n_runs : int
    rng : seed or numpy Generator
    step : callable
        ``step(n, states [R], first: bool, rng) -> (tokens [R], rejected [R] bool)``: one
        check at kernel index ``n`` for runs in ``states``; ``first`` is True for the
        round's first draft token.
    bonus : bool
    return_tokens : bool
    drafts_per_token : int
        Drafted tokens counted per draft position (``M`` for batch decoding).
    progress : bool or None
        tqdm bar over positions (None: only when ``n_runs * T`` is large).
    """
    T = chain.check_horizon(horizon)
    gamma = _check_gamma(gamma)
    R = check_int(n_runs, "n_runs", 1)
    rng = np.random.default_rng(rng)
    kern0 = chain.initial
    state = _categorical(np.broadcast_to(kern0, (R, kern0.size)), rng.random(R))
    in_round = np.zeros(R, bool)
    bonus_due = np.zeros(R, bool)
    acc_i = np.zeros(R, np.int64)
    k_run = np.zeros(R, np.int64)
    n0_run = np.zeros(R, np.int64)
    out = {name: np.zeros(R, np.int64) for name in ("rejections", "target_calls",
                                                    "draft_tokens", "accepted")}
    pos_rej = np.zeros(T, np.int64)
    toks = np.zeros((R, T), np.int64) if return_tokens else None
    it = range(T)
    if progress or (progress is None and R * T > 5_000_000):
        from tqdm.auto import tqdm
        it = tqdm(it, desc="positions", leave=False)
    for n in it:
        start = ~in_round & ~bonus_due
        if start.any():
            k_new = round_length(gamma, T, n)
            in_round[start] = True
            acc_i[start] = 0
            k_run[start] = k_new
            n0_run[start] = n
            out["target_calls"][start] += 1
            out["draft_tokens"][start] += k_new * drafts_per_token
        token = np.zeros(R, np.int64)
        if bonus_due.any():
            idx = np.flatnonzero(bonus_due)
            tk = chain.kernels(n)[0][state[idx]]
            token[idx] = _categorical(tk, rng.random(idx.size))
        rejected = np.zeros(R, bool)
        for first in (True, False):
            sel = in_round & ((acc_i == 0) if first else (acc_i > 0))
            if sel.any():
                idx = np.flatnonzero(sel)
                tk, rj = step(n, state[idx], first, rng)
                token[idx] = tk
                rejected[idx] = rj
        checked = in_round.copy()
        accepted = checked & ~rejected
        out["rejections"] += rejected
        pos_rej[n] = rejected.sum()
        out["accepted"] += accepted
        acc_i += accepted
        done = accepted & (acc_i == k_run)
        bonus_due[:] = False
        if bonus:
            bonus_due = done & (n0_run + k_run < T)
        in_round &= ~(rejected | done)
        if return_tokens:
            toks[:, n] = token
        state = chain.next_state[state, token]
    return PositionalResult(out["rejections"], out["target_calls"], out["draft_tokens"],
                            out["accepted"], pos_rej, toks)


def _categorical(probs, u):
    """Inverse-CDF sampling (:func:`spectheory.laws.sampling.sample_categorical`)."""
    return sample_categorical(probs, u)

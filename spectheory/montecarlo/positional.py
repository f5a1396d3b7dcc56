r"""Deprecated: batch decoding is ``st.simulate(chain, T, BatchRound(M, gamma), ...)``.

:func:`simulate_batch` (batch speculative decoding with ``M`` drafts, first-token reading) and
:func:`simulate_positional` (any rule that checks one draft token per position, given as a
``step`` function) stay one release. Both play rounds through the one driver
(:mod:`spectheory.rounds.driver`): the first as a :class:`~spectheory.trees.BatchRound` (a tree
round on ``M`` paths, verified by ``tree_rrs``), the second as a round that calls ``step`` once
per drafted position. Their laws are those of the old position-by-position loops, their draws
are not (a whole round of a run is played at once).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ..rounds.base import Round, RoundOutcome
from ..rounds.driver import run_rounds
from ..rounds.result import SimulationResult
from ..trees.batch_round import BatchRound
from ..verifiers._positional import _check_gamma

__all__ = ["simulate_positional", "simulate_batch"]


class _StepRound(Round):
    """A round of ``min(gamma, T - n)`` checks, each one ``step(n, states, first, rng)``."""

    def __init__(self, gamma: int | None, step: Callable, drafts_per_token: int, name: str) -> None:
        self.gamma, self.step, self.per_token, self._name = gamma, step, int(drafts_per_token), name

    @property
    def name(self) -> str:
        return self._name

    @property
    def max_depth(self) -> int | None:
        return self.gamma

    @property
    def verifier_name(self) -> str:
        return self._name

    def play(
        self,
        sampler: Any,
        horizon: int,
        n: np.ndarray,
        state: np.ndarray,
        memory: Any,
        rng: np.random.Generator,
        keep_path: bool = False,
    ) -> RoundOutcome:
        R = n.shape[0]
        k = np.minimum(self.depth(horizon), horizon - n)
        j = np.zeros(R, dtype=np.int64)
        y = np.zeros(R, dtype=np.int64)
        rejected = np.zeros(R, dtype=bool)
        s = np.array(state, dtype=np.int64)
        path = np.zeros((R, int(k.max())), dtype=np.int64)
        live = np.arange(R)
        for d in range(int(k.max())):
            for pos in np.unique(n[live] + d):
                idx = live[n[live] + d == pos]
                tok, rej = self.step(int(pos), s[idx], d == 0, rng)
                tok, rej = np.asarray(tok, dtype=np.int64), np.asarray(rej, dtype=bool)
                rejected[idx[rej]] = True
                y[idx[rej]] = tok[rej]
                ok = idx[~rej]
                path[ok, d] = tok[~rej]
                j[ok] += 1
                s[ok] = sampler.next_state[s[ok], tok[~rej]]
            live = live[~rejected[live] & (j[live] < k[live])]
            if not live.size:
                break
        done = np.flatnonzero(~rejected & (n + k < horizon))
        y[done] = sampler.sample_target(n[done] + k[done], s[done], rng.random(done.size))
        return RoundOutcome(j, y, rejected, k * self.per_token, s, path if keep_path else None)


def simulate_positional(
    chain: Any,
    horizon: int,
    gamma: int | None,
    n_runs: int,
    rng: Any,
    step: Callable,
    bonus: bool = True,
    return_tokens: bool = False,
    drafts_per_token: int = 1,
    progress: bool | None = None,
    name: str = "positional",
) -> SimulationResult:
    """Deprecated: Monte Carlo of a position-level rule given as a ``step`` function.

    ``step(n, states [R], first: bool, rng) -> (tokens [R], rejected [R] bool)``: one check at
    kernel index ``n`` for runs in ``states`` (``first``: the round's first draft token). Rounds
    draft ``min(gamma, T - n)`` tokens (``gamma=None``: to the end of the horizon); a rejection
    ends the round, a complete round is followed by a bonus token from the target if ``bonus``.
    ``drafts_per_token`` drafted tokens are counted per checked position.
    """
    warnings.warn(
        "simulate_positional is deprecated; write the rule as a Round (spectheory.rounds) and "
        "call st.simulate(chain, horizon, round, ...)",
        DeprecationWarning,
        stacklevel=2,
    )
    chain.require_deterministic("the positional simulator")
    rnd = _StepRound(_check_gamma(gamma), step, drafts_per_token, name)
    return run_rounds(
        chain, horizon, rnd, n_runs, rng, bonus=bonus, return_tokens=return_tokens, progress=progress
    )


def simulate_batch(
    chain: Any,
    horizon: int,
    gamma: int | None,
    M: int,
    n_runs: int,
    rng: Any = None,
    bonus: bool = True,
    return_tokens: bool = False,
    progress: bool | None = None,
) -> SimulationResult:
    """Deprecated: ``st.simulate(chain, horizon, BatchRound(M, gamma), n_runs, rng, bonus=...)``.

    Batch speculative decoding with ``M`` drafts of ``gamma`` tokens (``None``: to the end of
    the horizon), first-token reading: ``"tree_rrs"`` on ``DraftTree.paths(M, gamma)``;
    ``draft_tokens`` counts ``M * k`` per round. ``bonus`` defaults to True (it was False).
    """
    warnings.warn(
        "simulate_batch is deprecated; use st.simulate(chain, horizon, BatchRound(M, gamma), n_runs, rng)",
        DeprecationWarning,
        stacklevel=2,
    )
    return run_rounds(
        chain,
        horizon,
        BatchRound(M, _check_gamma(gamma)),
        n_runs,
        rng,
        bonus=bonus,
        return_tokens=return_tokens,
        progress=progress,
    )

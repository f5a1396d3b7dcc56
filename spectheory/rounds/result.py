"""The one result type of a Monte Carlo run of any round kind (:class:`SimulationResult`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .standard_error import mean_and_se

__all__ = ["SimulationResult", "STATISTICS", "TIME_STATISTICS"]

#: Per-run totals every result has.
STATISTICS = ("target_calls", "rejections", "draft_tokens", "accepted")
#: Per-run totals a result has when the run was costed (``cost=...``).
TIME_STATISTICS = ("target_time", "time")


@dataclass(repr=False)  # __repr__ below: one line, means +- SE, arrays by shape
class SimulationResult:
    r"""Per-run counters of a Monte Carlo run of the protocol, for every round kind.

    Attributes
    ----------
    horizon : int
    bonus : bool
    round : str
        The round's name (:attr:`spectheory.rounds.Round.name`).
    verifier : str
        The name of the verifier that checked the rounds.
    max_depth : int
        Longest accepted count a round could have (``gamma`` for a path round, the tree's
        depth, the policy's ``max_depth``, ``horizon`` for rounds drafting to the end).
    target_calls, rejections, draft_tokens, accepted : ndarray of int64, shape (n_runs,)
        Per-run totals over one generation of ``horizon`` tokens.
    accepted_counts : ndarray of int64, shape (n_runs, max_depth + 1)
        ``accepted_counts[r, j]``: number of rounds of run ``r`` that accepted ``j`` drafts
        (its mean over runs estimates the exact result's ``accepted_counts``).
    rejection_by_position : ndarray of int64, shape (horizon,)
        Number of runs whose token at position ``n`` was emitted by a rejection (divided by
        ``n_runs`` it estimates the exact ``rejection_by_position``).
    tokens : ndarray of int64, shape (n_runs, horizon), or None
    target_time : ndarray of float64, shape (n_runs,), or None
        With a cost: :math:`\sum_\text{rounds} t(k)` (``k`` drafted tokens per call).
    cost : Cost or None
        The cost model the runs were costed with (``simulate(..., cost=)``): the default of
        :meth:`time`, :meth:`speedup` and :meth:`time_per_token`.

    Examples
    --------
    >>> import spectheory as st
    >>> res = st.simulate(st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5]), 10, 4, 50, rng=0, cost=0.1)
    >>> s = res.summary()                      # 2 rounds of 4 drafts each: 2 + 0.1 * 8
    >>> round(s["time"]["mean"], 12), s["tokens_per_call"]["mean"], round(res.speedup(), 6)
    (2.8, 5.0, 3.571429)
    """

    horizon: int
    bonus: bool
    round: str
    verifier: str
    max_depth: int
    target_calls: np.ndarray
    rejections: np.ndarray
    draft_tokens: np.ndarray
    accepted: np.ndarray
    accepted_counts: np.ndarray
    rejection_by_position: np.ndarray
    tokens: np.ndarray | None = field(default=None, repr=False)
    target_time: np.ndarray | None = field(default=None, repr=False)
    cost: Any = None

    @property
    def n_runs(self) -> int:
        return int(self.target_calls.shape[0])

    @property
    def gamma(self) -> int:
        """:attr:`max_depth` (a path round's ``gamma``)."""
        return self.max_depth

    def time(self, cost: Any = None) -> np.ndarray:
        r"""Per-run time of the generation in units of one target call:
        :math:`c \cdot \text{draft tokens} + \sum_\text{rounds} t(k)`.

        ``cost`` defaults to the cost the runs were simulated with; another cost (a number
        ``c`` or a :class:`~spectheory.cost.Cost`) works when its target calls cost 1
        each (``t(k)`` of other shapes needs the per-call sizes: simulate with that cost).
        """
        if cost is None:
            if self.target_time is None:
                raise ValueError(
                    "cost: these runs were simulated without a cost; pass the draft step cost c "
                    "(units of one target call) or a Cost, or simulate with cost="
                )
            return self.cost.c * self.draft_tokens + self.target_time
        from ..cost.base import as_cost

        cost = as_cost(cost)
        if self.cost is not None and cost == self.cost:
            return self.time()
        if cost.target_call is not None:
            raise ValueError(
                "cost: a target-call time t(k) needs the drafted tokens of every call; "
                "simulate with this cost (simulate(..., cost=cost))"
            )
        return cost.c * self.draft_tokens + self.target_calls.astype(np.float64)

    def speedup(self, cost: Any = None) -> float:
        """Walltime speedup over plain decoding: ``horizon a / mean(time(cost))`` (pooled; ``a`` the
        cost's time per plain-decoding token, 1 target call by default)."""
        from ..cost.base import as_cost

        ref = self.cost if cost is None else as_cost(cost)
        a = 1.0 if ref is None else ref.autoregressive
        return self.horizon * a / float(np.mean(self.time(cost)))

    def time_per_token(self, cost: Any = None) -> float:
        """``mean(time(cost)) / horizon``."""
        return float(np.mean(self.time(cost))) / self.horizon

    @property
    def accepted_count_law(self) -> np.ndarray:
        """Law of a round's accepted count, pooled over all rounds: ``accepted_hist / accepted_hist.sum()``."""
        hist = self.accepted_hist.astype(np.float64)
        return hist / hist.sum()

    @property
    def statistics(self) -> tuple[str, ...]:
        """Names :meth:`mean_se` accepts: :data:`STATISTICS` (and :data:`TIME_STATISTICS` with a cost)."""
        return STATISTICS + (TIME_STATISTICS if self.target_time is not None else ())

    @property
    def accepted_hist(self) -> np.ndarray:
        """Accepted-count histogram of all rounds of all runs, shape ``[max_depth + 1]``."""
        return self.accepted_counts.sum(axis=0)

    def mean_se(self, name: str) -> tuple[float, float]:
        """Mean and standard error of a per-run statistic (one of :attr:`statistics`; SE NaN for one run)."""
        if name not in self.statistics:
            raise ValueError(f"name: expected one of {self.statistics}, got {name!r}")
        return mean_and_se(self.time() if name == "time" else getattr(self, name))

    def mean(self, name: str) -> float:
        """Mean over runs of a per-run statistic (one of :attr:`statistics`)."""
        return self.mean_se(name)[0]

    def se(self, name: str) -> float:
        """Standard error of :meth:`mean` (NaN for a single run)."""
        return self.mean_se(name)[1]

    def summary(self) -> dict:
        r"""Means and standard errors: ``{stat: {"mean": m, "se": se}}``.

        Includes the per-run statistics (:attr:`statistics`) and ``tokens_per_call`` =
        ``horizon / mean(target_calls)`` (SE by the delta method,
        :math:`T\,\mathrm{se}_c / \bar c^2`), plus ``n_runs``.
        """
        out: dict = {name: dict(zip(("mean", "se"), self.mean_se(name))) for name in self.statistics}
        c, sc = out["target_calls"]["mean"], out["target_calls"]["se"]
        out["tokens_per_call"] = {"mean": self.horizon / c, "se": self.horizon * sc / c**2}
        out["n_runs"] = self.n_runs
        return out

    def __repr__(self) -> str:
        """One line: ``n_runs``, the counters' means +- standard errors, ``tokens_per_call``, the
        speedup under the run's own cost (if any) and every array by its shape."""
        from ..exact._repr import result_repr

        s = self.summary()

        def value(name: str) -> str:
            if name == "n_runs":
                return str(self.n_runs)
            return f"{s[name]['mean']:.6g}+-{s[name]['se']:.2g}"

        counters = ("n_runs", *self.statistics, "tokens_per_call")
        return result_repr(self, counters, value, self.speedup if self.target_time is not None else None)

    def __str__(self) -> str:
        s = self.summary()
        head = (
            f"SimulationResult(horizon={self.horizon}, round={self.round}, bonus={self.bonus}, "
            f"n_runs={self.n_runs})"
        )
        rows = [
            f"  {name:<16s} {s[name]['mean']:12.5f} +- {s[name]['se']:.5f}"
            for name in (*self.statistics, "tokens_per_call")
        ]
        return "\n".join([head, f"  {'statistic':<16s} {'mean':>12s}    SE", *rows])

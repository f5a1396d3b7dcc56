r"""What an exact engine returns: one result vocabulary for path, tree, batch and policy rounds.

:class:`ExactResult` holds the members every exact result shares (``docs/architecture.md``,
"Result vocabulary"): the protocol counters ``target_calls``, ``rejections``,
``draft_tokens``, ``accepted`` (expectations over one generation of ``horizon`` tokens),
``bonus_tokens``, ``tokens_per_call = horizon / target_calls``, the law of a round's accepted
count ``accepted_count_law``, the cost members ``time(cost)`` and ``speedup(cost)`` (methods
everywhere; ``cost`` is a number ``c`` = draft step / target call, or a
:class:`~spectheory.cost.Cost`) and ``summary()`` in the shape of the Monte Carlo
summary (``{stat: {"mean", "se"}}``; exact values have ``se = 0.0``).

:class:`ProtocolResult` is the array-backed exact result of the forward engines (a path of
``gamma`` drafts, a token tree, ``M`` draft sequences): the per-position masses
``round_starts``, ``rejection_by_position`` and the per-round histogram ``accepted_counts``,
from which every counter is read. Policy values
(:class:`spectheory.stopping.PolicyValue`) come from a backward recursion that yields the
counters but not the per-position masses; they raise :class:`NotComputedError` for those.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ..cost.base import Cost, as_cost
from ..cost.round_cost import CostModel

__all__ = ["ExactResult", "ProtocolResult", "NotComputedError", "SUMMARY_STATISTICS"]

#: The per-generation counters every result's ``summary()`` reports (then ``tokens_per_call``).
SUMMARY_STATISTICS = ("target_calls", "rejections", "draft_tokens", "accepted")


class NotComputedError(NotImplementedError):
    """A member of the result vocabulary that this result's engine does not compute."""


class ExactResult:
    """The members every exact result shares; subclasses provide the counters.

    Subclasses define ``horizon``, ``bonus``, ``target_calls``, ``rejections``,
    ``draft_tokens``, ``accepted``, ``bonus_tokens`` and, where their engine computes them,
    ``accepted_counts``, ``rejection_by_position`` and ``round_starts`` (otherwise those raise
    :class:`NotComputedError`), and ``_call_time(cost)`` (the expected total target-call time).
    """

    horizon: int
    bonus: bool

    if TYPE_CHECKING:  # what every subclass provides (fields or properties; not seen at run time)

        @property
        def target_calls(self) -> float: ...
        @property
        def rejections(self) -> float: ...
        @property
        def draft_tokens(self) -> float: ...
        @property
        def accepted(self) -> float: ...
        @property
        def bonus_tokens(self) -> float: ...
        @property
        def accepted_counts(self) -> np.ndarray: ...
        @property
        def rejection_by_position(self) -> np.ndarray: ...
        @property
        def round_starts(self) -> np.ndarray: ...

    @property
    def tokens_per_call(self) -> float:
        """``horizon / target_calls``: total tokens over total rounds (pooled)."""
        return self.horizon / self.target_calls

    @property
    def accepted_count_law(self) -> np.ndarray:
        """Law of a round's accepted count, pooled over the rounds: ``accepted_counts / target_calls``."""
        counts = np.asarray(self.accepted_counts, dtype=np.float64)
        return counts / counts.sum()

    @property
    def round_start_prob(self) -> np.ndarray:
        """P(a round starts at position ``n``), shape ``[T]``."""
        return np.asarray(self.round_starts).sum(-1)

    def _default_cost(self) -> Cost:
        cost = getattr(self, "cost", None)
        if cost is None:
            raise ValueError(
                f"cost: required for a {type(self).__name__} computed under no cost: pass the "
                "draft step cost c (units of one target call), a Cost or a CostModel"
            )
        return cost

    def _resolve_cost(self, cost: Any, batch: int = 1, context: float = 0.0) -> Cost:
        """The :class:`Cost` of a round: a CostModel's at ``(batch, context)``; a Cost or a number
        as given (then ``batch`` and ``context`` must keep their defaults: a Cost has no batch)."""
        if isinstance(cost, CostModel):
            return cost.at(batch, context)
        if batch != 1 or context != 0.0:
            raise ValueError(
                "batch, context: a Cost or a number c is the cost of one round as given; pass a "
                "CostModel (spectheory.cost) to cost a round at another batch size or context"
            )
        return self._default_cost() if cost is None else as_cost(cost)

    def _call_time(self, cost: Cost) -> float:
        """Expected total target-call time ``E[sum_r t(k_r)]`` (``target_calls`` when ``t = 1``)."""
        raise NotImplementedError  # pragma: no cover - every subclass defines it

    def _draft_time(self, cost: Cost) -> float:
        """Expected total drafting time: ``c E[draft tokens]`` (one draft step per drafted token)."""
        return cost.c * self.draft_tokens if cost.c else 0.0  # 0 * inf draft tokens (M = inf) is 0

    def time(self, cost: Any = None, *, batch: int = 1, context: float = 0.0) -> float:
        r"""Expected time of the generation: :math:`E[\text{drafting time}] + E[\sum_r t(k_r)]`.

        With a number ``c`` or a :class:`~spectheory.cost.Cost`: :math:`c\,E[\text{draft
        tokens}] + E[\sum_r t(k_r)]` in the cost's unit (one target call for a number). With a
        :class:`~spectheory.cost.CostModel`: seconds of one row's generation when ``batch`` rows
        run in lockstep at context ``context`` (every round costed by ``model.at(batch,
        context)``: a batch round scores ``batch x (k + 1)`` tokens; a tree level is one draft
        forward). Exact when the rows of a batch round draft the same number of tokens (fixed
        rounds away from the horizon); a policy whose ``k`` differs per row is costed as if each
        row paid its own ``k`` (the lockstep rate, longest row, is
        :func:`spectheory.stopping.lockstep.lockstep_rate`). Derivation: ``docs/cost.md``.
        """
        cost = self._resolve_cost(cost, batch, context)
        return self._draft_time(cost) + self._call_time(cost)

    def speedup(self, cost: Any = None, *, batch: int = 1, context: float = 0.0) -> float:
        r"""Walltime speedup over plain decoding at the same batch size:
        :math:`T a / \text{time}`, ``a`` the time per token of plain decoding (1 target call
        for a number ``c``; ``model.autoregressive(batch, context)`` for a CostModel), so
        :math:`T / (E[\text{calls}] + c\,E[\text{draft tokens}])` for ``t = 1``."""
        cost = self._resolve_cost(cost, batch, context)
        return self.horizon * cost.autoregressive / (self._draft_time(cost) + self._call_time(cost))

    def time_per_token(self, cost: Any = None, *, batch: int = 1, context: float = 0.0) -> float:
        """``time(cost) / horizon``: expected time per emitted token of one row (seconds with a CostModel)."""
        return self.time(cost, batch=batch, context=context) / self.horizon

    def tokens_per_second(self, cost: Any = None, *, batch: int = 1, context: float = 0.0) -> float:
        """``horizon / time(cost)``: tokens per unit time of one sequence (row) -- per second
        under a CostModel, ``batch`` rows decoded together."""
        return self.horizon / self.time(cost, batch=batch, context=context)

    def throughput(self, cost: Any = None, *, batch: int = 1, context: float = 0.0) -> float:
        """``batch * tokens_per_second``: tokens per unit time of a batch of ``batch`` rows in
        lockstep (continuous batching: a finished row is replaced at once, so the batch stays
        full and its throughput is ``batch`` over the time per token of a row; ``docs/cost.md``)."""
        return batch * self.tokens_per_second(cost, batch=batch, context=context)

    def __repr__(self) -> str:
        """One line: the counters, ``tokens_per_call``, the speedup under the result's own
        cost (if any) and every array by its shape (``spectheory/exact/_repr.py``)."""
        from ._repr import exact_value, result_repr

        counters = (
            "target_calls",
            "rejections",
            "draft_tokens",
            "accepted",
            "bonus_tokens",
            "tokens_per_call",
        )
        return result_repr(self, counters, exact_value(self), self.speedup)

    def summary(self) -> dict[str, Any]:
        """``{stat: {"mean": value, "se": 0.0}}`` for :data:`SUMMARY_STATISTICS`, then
        ``target_time`` and ``time`` when the result carries a cost, then ``tokens_per_call``:
        the shape of :meth:`spectheory.rounds.SimulationResult.summary` (exact values: no
        standard error, no ``n_runs``)."""
        values = {name: getattr(self, name) for name in SUMMARY_STATISTICS}
        cost = getattr(self, "cost", None)
        if cost is not None:
            values["target_time"] = self._call_time(cost)
            values["time"] = self.time(cost)
        values["tokens_per_call"] = self.tokens_per_call
        return {name: {"mean": float(v), "se": 0.0} for name, v in values.items()}


@dataclass(frozen=True, repr=False)  # ExactResult.__repr__: one line, arrays by shape
class ProtocolResult(ExactResult):
    r"""Exact expectations of one generation of ``horizon`` tokens (``chain.protocol(...)``).

    Every counter of ``docs/protocol.md`` in one object, with the per-position profiles
    behind them; the result of a path round, and (subclasses) of a tree round
    (:class:`spectheory.trees.TreeProtocolResult`) and of ``M`` draft sequences
    (:class:`spectheory.trees.BatchTreeResult`). The names match
    :class:`spectheory.montecarlo.SimulationResult` (whose per-run means estimate them) and the
    decoder's ``DecodeStats``.

    Attributes
    ----------
    horizon : int
    gamma : int
        The longest draft of a round: the path's ``gamma``, the tree's depth.
    bonus : bool
    round_starts : ndarray, shape (T, S)
        ``round_starts[n, s]`` = P(a round starts at position ``n`` in state ``s``);
        its total is the expected number of rounds (of target calls, but for ``extra_calls``).
    rejection_by_position : ndarray, shape (T,)
        P(the token at kernel index ``n`` is emitted by a rejection).
    accepted_counts : ndarray, shape (gamma + 1,)
        ``E[#rounds whose accepted count is j]`` (truncated rounds included: a round
        with ``k < gamma`` that accepts everything counts at ``j = k``).
    bonus_tokens : float
        Expected number of bonus tokens.
    check_mass : ndarray, shape (T, S), or None
        ``check_mass[n, s]`` = P(position ``n`` is a draft check in state ``s``), all
        phases (:func:`phase_recursion` only; ``None`` from :func:`round_recursion`).
    round_drafts : ndarray, shape (T,), or None
        Draft tokens of a round that starts at position ``n`` (what its target call scores);
        ``None`` means a path, ``min(gamma, T - n)``.
    cost : Cost or None
        The default cost of :meth:`time` and :meth:`speedup` (``chain.protocol(..., cost=)``);
        the counters do not depend on it.
    level_widths : ndarray, shape (gamma + 1,), or None
        Drafted nodes per depth of a round's tree, ``[1, w_1, ..., w_gamma]`` (the root
        first); a round truncated at depth ``d`` drafts levels ``1..d`` with the forwards over
        levels ``0..d-1``, which a :class:`~spectheory.cost.Cost` with ``draft_call`` costs
        level by level. ``None`` means a path (one token per level).
    extra_calls : float
        Expected target calls beyond one per round, each drafting one more token (naive HSD's
        forward passes, :mod:`spectheory.verifiers.hsd_naive_chain`); counted in
        :attr:`target_calls` and :attr:`draft_tokens`. 0 for one-call rounds.

    Examples
    --------
    >>> import spectheory as st
    >>> res = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0]).protocol(10, 4)  # always accepted
    >>> res.target_calls, res.draft_tokens, res.tokens_per_call, res.speedup(0.25)
    (2.0, 8.0, 5.0, 2.5)
    >>> res.summary()["accepted"]
    {'mean': 8.0, 'se': 0.0}
    """

    horizon: int
    gamma: int
    bonus: bool
    round_starts: np.ndarray
    rejection_by_position: np.ndarray
    accepted_counts: np.ndarray
    bonus_tokens: float
    check_mass: np.ndarray | None = None
    round_drafts: np.ndarray | None = None
    cost: Cost | None = None
    level_widths: np.ndarray | None = None
    extra_calls: float = 0.0

    @property
    def max_depth(self) -> int:
        """:attr:`gamma`, the longest draft of a round (``SimulationResult.max_depth``)."""
        return self.gamma

    def with_cost(self, cost: Cost | float) -> ProtocolResult:
        """The same result with ``cost`` as the default of :meth:`time` and :meth:`speedup`."""
        return dataclasses.replace(self, cost=as_cost(cost))

    @property
    def drafts_per_round(self) -> np.ndarray:
        """Draft tokens of a round started at position ``n``, shape ``[T]`` (``round_drafts``,
        or ``min(gamma, T - n)`` for a path)."""
        if self.round_drafts is not None:
            return np.asarray(self.round_drafts)
        return np.minimum(self.gamma, self.horizon - np.arange(self.horizon))

    @property
    def target_calls(self) -> float:
        """Expected number of target calls: one per round, plus :attr:`extra_calls`."""
        return float(self.round_starts.sum()) + self.extra_calls

    @property
    def draft_tokens(self) -> float:
        """Expected draft tokens: ``sum_n P(start at n) * drafts_per_round[n]`` (+ :attr:`extra_calls`)."""
        prob, k = self.round_start_prob, self.drafts_per_round
        if self.extra_calls:  # a path (round_drafts None): one more draft token per extra call
            return float(prob @ k) + self.extra_calls
        if np.isinf(k).any():  # M = inf draft sequences: rounds that happen draft infinitely many
            return (
                float(np.inf)
                if np.any(prob[np.isinf(k)] > 0)
                else float(prob[~np.isinf(k)] @ k[~np.isinf(k)])
            )
        return float(prob @ k)

    @property
    def rejections(self) -> float:
        """Expected number of rounds ended by a rejection."""
        return float(self.rejection_by_position.sum())

    @property
    def accepted(self) -> float:
        """Expected number of accepted draft tokens."""
        return float(np.arange(len(self.accepted_counts)) @ self.accepted_counts)

    def _draft_time(self, cost: Cost) -> float:
        if cost.draft_call is None or self.level_widths is None:
            return super()._draft_time(cost)
        w = np.asarray(self.level_widths, dtype=np.float64)
        depth = np.minimum(self.gamma, self.horizon - np.arange(self.horizon))
        per_depth = np.array([cost.tree_draft_time(w[: d + 1]) for d in range(self.gamma + 1)])
        return float(self.round_start_prob @ per_depth[depth])

    def _call_time(self, cost: Cost) -> float:
        if cost.target_call is None:
            return self.target_calls
        if self.extra_calls:
            raise ValueError(
                "cost: a target-call time t(k) is not modelled for rounds with extra target calls "
                "(naive HSD's forward passes); use a number c or a Cost without target_call"
            )
        k = self.drafts_per_round
        if np.isinf(k).any():
            raise ValueError("cost: a target-call time t(k) needs a finite number of drafts per round")
        k = k.astype(np.int64)
        return float(self.round_start_prob @ cost.call_times(int(k.max()))[k - 1])

r"""Draft-length policies: after each drafted token, draft another or stop and verify.

A policy sees what a drafter can know after drafting token ``i`` of a round
(:class:`StopContext`): the depth ``i``, the round's start position and state, the state
before and after the token, the token, statistics of the draft law that proposed it (top
probability, entropy, the token's probability) and, for *oracle* policies only, the true
probability that all ``i`` drafted tokens will be accepted,
:math:`\rho_i = \prod_{j \le i} \min(1, p(x_j)/q(x_j))` (p = target, q = draft). Policies with
``n_memory > 1`` carry a state between rounds (:class:`HFSchedule`'s counter). Every policy
stops at ``max_depth`` and at the end of the horizon.

The classes are pure rules (vectorised over the entries of the context); the exact engines
(:func:`~spectheory.stopping.evaluate_policy`) and the Monte Carlo round
(:class:`~spectheory.stopping.PolicyRound`, ``st.simulate(chain, T, policy)``) call the same
``stop`` method.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import ArrayLike

from ..._guards import check_int
from .context import RoundFeedback, StopContext

if TYPE_CHECKING:
    from ..._protocols import ChainLike
    from ...cost.base import Cost

__all__ = [
    "StopContext",
    "Policy",
    "FixedGamma",
    "ConfidenceThreshold",
    "EntropyRule",
    "RejectionThreshold",
    "HFSchedule",
    "StartStatePolicy",
    "leviathan_policy",
    "require_memory",
]

#: Default cap on the draft length of the adaptive rules.
DEFAULT_MAX_DEPTH = 16


class Policy:
    """Base class: ``stop(ctx) -> bool array``; see :class:`StopContext`.

    Class attributes say what the exact engines must track: ``uses_path`` (the decision
    uses ``accept_prob``, so exact evaluation enumerates drafted paths), ``uses_start``
    (it uses the round's start state), ``position_dependent`` (it uses ``ctx.position``;
    otherwise its stop tables are computed once per depth), ``n_memory`` (memory states
    between rounds), ``length_at_start`` (the round's length is decided at its start from the
    position and the start state alone, by ``length(position, start_state)``: the engines play
    one fixed-length round per start state instead of enumerating paths) and
    ``constant_length`` (the draft length of every round, truncated at the horizon, or
    ``None``: then the verifier's own fixed-length exact engine does not apply).
    """

    uses_path = False
    position_dependent = False
    uses_start = False
    length_at_start = False
    constant_length: int | None = None
    n_memory = 1
    initial_memory = 0
    max_depth = DEFAULT_MAX_DEPTH

    def stop(self, ctx: StopContext) -> np.ndarray:  # pragma: no cover - interface
        raise NotImplementedError

    def length(self, position: ArrayLike, start_state: ArrayLike) -> np.ndarray:
        """The round's length from its position and start state (``length_at_start`` policies)."""
        raise NotImplementedError(
            f"{self.name} decides its length inside the round (length_at_start is False)"
        )

    #: How the memory moves between rounds: ``"flag"`` (an int in ``range(n_memory)``, by
    #: :meth:`next_memory` from "every drafted token was accepted"), ``"counts"`` (an int in
    #: ``range(n_memory)``, by :meth:`memory_after` from the accepted and drafted counts; the
    #: memory fixes the round's length, :meth:`round_length`) or ``"online"`` (an array of
    #: statistics, by :meth:`update`: no finite round-start chain, Monte Carlo only).
    memory_kind = "flag"

    def next_memory(self, memory: ArrayLike, all_accepted: ArrayLike) -> np.ndarray:
        """Memory after a round (``all_accepted``: every drafted token was accepted)."""
        return np.zeros_like(np.asarray(memory))

    def round_length(self, memory: int) -> int | None:
        """Draft length fixed by the memory at the round's start (``None``: decided inside the round)."""
        return None

    def memory_after(self, memory: int, accepted: int, drafted: int) -> int:
        """Memory after a round that accepted ``accepted`` of ``drafted`` tokens (finite memories)."""
        return int(self.next_memory(np.int64(memory), np.bool_(accepted == drafted)))

    def update(self, memory: np.ndarray, feedback: RoundFeedback) -> np.ndarray:
        """Memory after a round, per run (what :class:`~spectheory.stopping.PolicyRound` calls)."""
        return np.asarray(self.next_memory(memory, feedback.accepted == feedback.drafted), dtype=np.int64)

    @property
    def name(self) -> str:
        return repr(self)


def _threshold(value: float, name: str, low: float = 0.0, high: float = np.inf) -> float:
    v = float(value)
    if not (np.isfinite(v) or v == high) or not low <= v <= high:
        raise ValueError(f"{name}: must lie in [{low}, {high}], got {value!r}")
    return v


class FixedGamma(Policy):
    """Draft ``gamma`` tokens every round (Leviathan et al.; truncated at the horizon).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import FixedGamma, evaluate_policy
    >>> chain = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0])   # always accepted
    >>> evaluate_policy(chain, FixedGamma(4), 10, 0.1).target_calls
    2.0
    """

    uses_start = False

    def __init__(self, gamma: int) -> None:
        self.gamma = check_int(gamma, "gamma", 1)
        self.max_depth = self.constant_length = self.gamma

    def stop(self, ctx: StopContext) -> np.ndarray:
        return np.broadcast_to(ctx.depth >= self.gamma, np.shape(ctx.state))

    def __repr__(self) -> str:
        return f"FixedGamma({self.gamma})"


class ConfidenceThreshold(Policy):
    """HuggingFace's assistant confidence rule: stop when the draft's confidence < threshold.

    ``statistic="top"``: the top probability of the draft law that proposed the last token;
    ``"token"``: the probability of the token itself (HF's ``assistant_confidence_threshold``,
    default 0.4; equal to ``"top"`` under greedy drafting).
    """

    def __init__(
        self, threshold: float = 0.4, max_depth: int = DEFAULT_MAX_DEPTH, statistic: str = "top"
    ) -> None:
        self.threshold = _threshold(threshold, "threshold", 0.0, 1.0)
        self.max_depth = check_int(max_depth, "max_depth", 1)
        if statistic not in ("top", "token"):
            raise ValueError(f"statistic: expected 'top' or 'token', got {statistic!r}")
        self.statistic = statistic

    def stop(self, ctx: StopContext) -> np.ndarray:
        value = ctx.top if self.statistic == "top" else ctx.token_prob
        return np.asarray(value) < self.threshold

    def __repr__(self) -> str:
        return f"ConfidenceThreshold({self.threshold:g}, {self.statistic})"


class EntropyRule(Policy):
    """Stop when the entropy (nats) of the draft law that proposed the last token exceeds ``threshold`` (SVIP-like)."""

    def __init__(self, threshold: float, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.threshold = _threshold(threshold, "threshold")
        self.max_depth = check_int(max_depth, "max_depth", 1)

    def stop(self, ctx: StopContext) -> np.ndarray:
        return np.asarray(ctx.entropy) > self.threshold

    def __repr__(self) -> str:
        return f"EntropyRule({self.threshold:g})"


class RejectionThreshold(Policy):
    r"""SpecDec++ (oracle): stop when P(some drafted token is rejected) exceeds ``threshold``.

    Uses the true :math:`1 - \rho_i = 1 - \prod_{j\le i} \min(1, p(x_j)/q(x_j))`; SpecDec++
    learns a head predicting it. Exact evaluation enumerates drafted paths.
    """

    uses_path = True

    def __init__(self, threshold: float, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self.threshold = _threshold(threshold, "threshold", 0.0, 1.0)
        self.max_depth = check_int(max_depth, "max_depth", 1)

    def stop(self, ctx: StopContext) -> np.ndarray:
        if ctx.accept_prob is None:
            raise ValueError("RejectionThreshold: needs accept_prob (an oracle policy; evaluate on paths)")
        return 1.0 - np.asarray(ctx.accept_prob) > self.threshold

    def __repr__(self) -> str:
        return f"RejectionThreshold({self.threshold:g})"


class HFSchedule(Policy):
    """HuggingFace's heuristic schedule: ``num_assistant_tokens`` +2 after a fully accepted round, -1 otherwise.

    The counter starts at ``initial``, never drops below 1 and is capped at ``max_depth``; it
    carries over between rounds (memory ``counter - 1``). With ``confidence`` set, a round
    also stops early on a low top probability (HF runs both rules together).
    """

    def __init__(
        self,
        initial: int = 5,
        increase: int = 2,
        decrease: int = 1,
        max_depth: int = DEFAULT_MAX_DEPTH,
        confidence: float | None = None,
    ) -> None:
        self.max_depth = check_int(max_depth, "max_depth", 1)
        self.initial = min(check_int(initial, "initial", 1), self.max_depth)
        self.increase = check_int(increase, "increase", 0)
        self.decrease = check_int(decrease, "decrease", 0)
        self.confidence = None if confidence is None else _threshold(confidence, "confidence", 0.0, 1.0)
        self.n_memory = self.max_depth
        self.initial_memory = self.initial - 1

    def stop(self, ctx: StopContext) -> np.ndarray:
        out = ctx.depth >= np.asarray(ctx.memory) + 1
        if self.confidence is not None:
            out = out | (np.asarray(ctx.top) < self.confidence)
        return np.broadcast_to(out, np.broadcast_shapes(np.shape(out), np.shape(ctx.state)))

    def next_memory(self, memory: ArrayLike, all_accepted: ArrayLike) -> np.ndarray:
        m = np.asarray(memory)
        return np.where(
            all_accepted, np.minimum(m + self.increase, self.max_depth - 1), np.maximum(m - self.decrease, 0)
        )

    def __repr__(self) -> str:
        conf = "" if self.confidence is None else f", confidence={self.confidence:g}"
        return f"HFSchedule({self.initial}, +{self.increase}/-{self.decrease}{conf})"


class StartStatePolicy(Policy):
    """Draft ``k[position, state]`` tokens, chosen from the round's start (the state-information optimum).

    ``lengths`` has shape ``[T, S]`` (or ``[S]`` for every position).
    """

    uses_start = True
    position_dependent = True
    length_at_start = True

    def __init__(self, lengths: ArrayLike) -> None:
        k = np.asarray(lengths)
        if k.ndim not in (1, 2) or not np.issubdtype(k.dtype, np.integer) or k.size == 0 or k.min() < 1:
            raise ValueError("lengths: expected an int array [S] or [T, S] with entries >= 1")
        self.lengths = k if k.ndim == 2 else k[None]
        self.max_depth = int(k.max())

    def length(self, position: ArrayLike, start_state: ArrayLike) -> np.ndarray:
        pos = np.minimum(position, self.lengths.shape[0] - 1)
        return self.lengths[pos, np.asarray(start_state)]

    def stop(self, ctx: StopContext) -> np.ndarray:
        return ctx.depth >= self.length(np.asarray(ctx.position), np.asarray(ctx.start_state))

    def __repr__(self) -> str:
        return f"StartStatePolicy(max={self.max_depth})"


def leviathan_policy(
    chain: ChainLike, horizon: int, cost: Cost | float | None, max_depth: int = DEFAULT_MAX_DEPTH
) -> FixedGamma:
    r"""Leviathan et al.'s choice: ``FixedGamma(iid_optimal_gamma(alpha, c))`` for the chain's mean acceptance.

    ``alpha`` is the mean of ``1 - E[TV]`` over the ``horizon`` positions (the i.i.d. model
    fitted to the chain); the formula assumes ``t(k) = 1``.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import leviathan_policy
    >>> leviathan_policy(st.DecodingChain.iid([0.8, 0.2], [1.0, 0.0]), 50, 0.05)
    FixedGamma(8)
    """
    from ...cost.base import as_cost
    from ...laws.closed_form import iid_optimal_gamma

    T = chain.check_horizon(horizon)
    alpha = float(np.clip(1.0 - chain.tv_profile(T).mean(), 0.0, 1.0))
    return FixedGamma(
        iid_optimal_gamma(alpha, as_cost(cost).c, max_gamma=check_int(max_depth, "max_depth", 1))
    )


def require_memory(policy: Policy, kinds: tuple[str, ...], what: str) -> None:
    """``ValueError`` unless ``policy.memory_kind`` is one of ``kinds`` (``what`` names the engine)."""
    kind = getattr(policy, "memory_kind", "flag")
    if kind not in kinds:
        raise ValueError(
            f"policy: {what} supports memories of kind {kinds}; {policy.name} has a {kind!r} memory "
            "(score it by Monte Carlo: st.simulate(chain, T, policy), or long_run_policy for 'counts')"
        )

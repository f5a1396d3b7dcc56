r"""Verification schedules: a batch's slot features in, the verified length of each row out.

A schedule maps the :class:`~spectheory.schedules.slots.SlotFeatures` of a batch of ``B``
drafted blocks and a :class:`~spectheory.cost.staircase.StaircaseCost` to lengths
``L [B]`` (``0 <= L_b <= gamma``): row ``b``'s first ``L_b`` drafts are verified by token
verification, the step scores :math:`N = \sum_b (L_b + 1)` positions and takes
``cost.time(N)``. The ones engines ship, ranking slots by a *score* made non-increasing along
each row (a probability feature's running product, or a survival curve's running minimum), so
that admitting slots in score order keeps every row's admitted slots a prefix:

- :class:`EarlyStopGreedy` (DSpark's Algorithm 1, arXiv 2607.05147): admit slots by score,
  estimating the step's tokens as :math:`B + \sum` admitted scores, and break at the first slot
  that does not raise :math:`\Theta = \text{tokens} / \text{time}`;
- :class:`GlobalArgmax`: the same order, without the break: the prefix of the order with the
  largest :math:`\Theta` (what engines do once the cost curve is a staircase);
- :class:`TopK`: the ``K`` highest-scored slots (a fixed verify budget);
- :class:`SplitBudget`: the budget ``K`` from one feature's argmax, the slots from another's
  ranking (DSpark's serving split, section 5.2: the batch's capacity from the confidences of
  two steps before, the per-request allocation from this step's; vLLM's adaptive
  verification reads the same split);
- :func:`retrospective_argmax`: :class:`GlobalArgmax` on each slot's acceptance probability
  given its own token, :math:`\min(1, p/q)(x_i)` (read after the target's forward);
- :class:`DropByOwnProbability`: a base schedule, less a row's last verified draft when the
  draft's own probability of it is below ``delta``;
- :class:`FixedLength`: ``min(L, gamma)`` for every row.

Which of them are non-anticipating depends on the feature: ``survival``, ``conf``, ``stale``
and the draft proxies read only a slot's prefix; ``own_prob`` and ``accept_prob`` read its
own token. The greedy's break keeps a slot's admission a function of the slots scored above
it; the argmax's does not (``docs/verification_schedules.md``).

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.cost.staircase import StaircaseCost
>>> from spectheory.schedules.slots import BlockRow, slot_features
>>> cost = StaircaseCost.from_steps_per_second([1, F(1, 2), F(9, 20)])
>>> row = BlockRow.iid([F(7, 10), F(3, 10)], [F(1, 2), F(1, 2)])
>>> [retrospective_argmax().lengths(slot_features([row], [x]), cost) for x in [(0, 1), (1, 0)]]
[(2,), (0,)]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..cost.staircase import StaircaseCost
from .slots import SlotFeatures

__all__ = [
    "Schedule",
    "FixedLength",
    "EarlyStopGreedy",
    "GlobalArgmax",
    "TopK",
    "SplitBudget",
    "DropByOwnProbability",
    "retrospective_argmax",
]

#: Features whose per-slot values are probabilities of that slot alone (ranked by their
#: running product along the row); the others are survival curves (running minimum).
_PER_SLOT = ("conf", "accept_prob", "own_prob", "max_prob", "margin")
_CURVES = ("survival", "stale")


class Schedule:
    """Base of verification schedules: :meth:`lengths` maps features and a cost to ``L [B]``."""

    @property
    def name(self) -> str:
        """A short label (results, figures)."""
        raise NotImplementedError

    def lengths(self, features: SlotFeatures, cost: StaircaseCost) -> tuple[int, ...]:
        """How many drafts of each row are verified (``B`` ints in ``[0, gamma]``)."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"


def slot_scores(features: SlotFeatures, feature: str) -> list[list[Any]]:
    """Scores non-increasing along each row: the running product of a per-slot probability
    (``conf``, ``accept_prob``, ``own_prob``, ``max_prob``, ``margin``) or the running minimum
    of a survival curve (``survival``, ``stale``)."""
    vals = features.get(feature)
    if feature not in _PER_SLOT + _CURVES:
        raise ValueError(f"feature: {feature!r} is not a probability; rank by one of {_PER_SLOT + _CURVES}")
    out = []
    for row in vals:
        acc: Any = 1
        r = []
        for v in row:
            acc = acc * v if feature in _PER_SLOT else min(acc, v)
            r.append(acc)
        out.append(r)
    return out


def admission_order(scores: list[list[Any]]) -> list[tuple[int, int]]:
    """Slots ``(b, i)`` by decreasing score, ties by depth then row: every row's slots come in
    depth order (the scores are non-increasing along a row)."""
    slots = [(b, i) for b in range(len(scores)) for i in range(len(scores[b]))]
    return sorted(slots, key=lambda s: (-scores[s[0]][s[1]], s[1], s[0]))


def _lengths(B: int, admitted: list[tuple[int, int]]) -> tuple[int, ...]:
    L = [0] * B
    for b, _ in admitted:
        L[b] += 1
    return tuple(L)


@dataclass(frozen=True)
class FixedLength(Schedule):
    """Verify ``min(L, gamma)`` drafts of every row (capped so the step fits the cost)."""

    L: int

    @property
    def name(self) -> str:
        return f"fixed(L={self.L})"

    def lengths(self, features: SlotFeatures, cost: StaircaseCost) -> tuple[int, ...]:
        B, g = features.shape
        L = min(self.L, g)
        if B * (L + 1) > cost.max_tokens:
            raise ValueError(
                f"cost: a step of {B * (L + 1)} positions exceeds its largest bucket {cost.max_tokens}"
            )
        return (L,) * B


@dataclass(frozen=True)
class EarlyStopGreedy(Schedule):
    """DSpark's greedy admission with the early break, ranking by ``feature`` (default the live
    prefix survival)."""

    feature: str = "survival"

    @property
    def name(self) -> str:
        return f"greedy({self.feature})"

    def lengths(self, features: SlotFeatures, cost: StaircaseCost) -> tuple[int, ...]:
        scores = slot_scores(features, self.feature)
        B = len(scores)
        tokens: Any = B
        theta = tokens / cost.time(B)
        admitted: list[tuple[int, int]] = []
        for b, i in admission_order(scores):
            n = B + len(admitted) + 1
            if n > cost.max_tokens:
                break
            new = (tokens + scores[b][i]) / cost.time(n)
            if not new > theta:
                break
            tokens, theta = tokens + scores[b][i], new
            admitted.append((b, i))
        return _lengths(B, admitted)


@dataclass(frozen=True)
class GlobalArgmax(Schedule):
    """The prefix of the score order with the largest estimated :math:`\\Theta` (no break; the
    shortest on ties), ranking by ``feature`` (default the stale, previous-step curve)."""

    feature: str = "stale"

    @property
    def name(self) -> str:
        return f"argmax({self.feature})"

    def lengths(self, features: SlotFeatures, cost: StaircaseCost) -> tuple[int, ...]:
        scores = slot_scores(features, self.feature)
        B = len(scores)
        order = admission_order(scores)[: max(0, cost.max_tokens - B)]
        tokens: Any = B
        best, best_n = tokens / cost.time(B), 0
        for k, (b, i) in enumerate(order, start=1):
            tokens = tokens + scores[b][i]
            theta = tokens / cost.time(B + k)
            if theta > best:
                best, best_n = theta, k
        return _lengths(B, order[:best_n])


@dataclass(frozen=True)
class TopK(Schedule):
    """The ``K`` highest-scored slots (a fixed budget of verified drafts), by ``feature``."""

    K: int
    feature: str = "survival"

    @property
    def name(self) -> str:
        return f"top{self.K}({self.feature})"

    def lengths(self, features: SlotFeatures, cost: StaircaseCost) -> tuple[int, ...]:
        if self.K < 0:
            raise ValueError(f"K: expected >= 0, got {self.K}")
        scores = slot_scores(features, self.feature)
        B = len(scores)
        if B + self.K > cost.max_tokens:
            raise ValueError(f"cost: a budget of {self.K} drafts for {B} rows exceeds its largest bucket")
        return _lengths(B, admission_order(scores)[: self.K])


@dataclass(frozen=True)
class SplitBudget(Schedule):
    """Verify ``K`` slots, ``K`` the number :class:`GlobalArgmax` admits ranking by ``budget``
    (default the draw-free ``stale`` curve), chosen as the ``K`` best by ``rank`` (default the
    live survival).

    Non-anticipating when ``budget`` is draw-free and ``rank`` reads prefixes only: ``K`` does
    not depend on this step's drafts and top-``K`` by a prefix score is non-anticipating
    (``docs/verification_schedules.md``)."""

    budget: str = "stale"
    rank: str = "survival"

    @property
    def name(self) -> str:
        return f"split(K from {self.budget}, rank {self.rank})"

    def lengths(self, features: SlotFeatures, cost: StaircaseCost) -> tuple[int, ...]:
        K = sum(GlobalArgmax(self.budget).lengths(features, cost))
        return _lengths(len(features.conf), admission_order(slot_scores(features, self.rank))[:K])


@dataclass(frozen=True)
class DropByOwnProbability(Schedule):
    """``base``'s lengths, less each row's last verified draft when the draft's own probability
    of that token is below ``delta`` (the shipped shortcut)."""

    delta: Any
    base: Schedule

    @property
    def name(self) -> str:
        return f"drop(q<{self.delta})∘{self.base.name}"

    def lengths(self, features: SlotFeatures, cost: StaircaseCost) -> tuple[int, ...]:
        L = list(self.base.lengths(features, cost))
        for b, n in enumerate(L):
            if n >= 1 and features.own_prob[b][n - 1] < self.delta:
                L[b] = n - 1
        return tuple(L)


def retrospective_argmax() -> GlobalArgmax:
    """The retrospective global search: :class:`GlobalArgmax` on ``accept_prob``, each slot's
    acceptance probability given its own token (DSpark's Appendix A counterexample)."""
    return GlobalArgmax("accept_prob")

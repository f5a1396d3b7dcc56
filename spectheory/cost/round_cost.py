r"""A cost model of a round: :class:`CostModel` (a target and a draft :class:`ForwardCost`, and an overhead).

At batch ``B`` (rows decoded together, in lockstep) and context ``L`` (tokens already cached
per row), with ``f_T`` and ``f_D`` the target's and the draft's forwards (``docs/cost.md``):

* a draft step (one token per row) costs ``c(B, L) = f_D(B, 1, L)``;
* a tree level of ``w`` nodes per row is one draft forward, ``f_D(B, w, L)``;
* a target call verifying ``k`` drafted tokens scores ``k + 1`` positions per row (the ``k``
  drafts and the position after them, whose law gives the bonus or correction token):
  ``t(k; B, L) = f_T(B, k + 1, L) + overhead`` (``overhead``: seconds per speculative round
  outside the two models -- the verification rule, cache rollback);
* plain autoregressive decoding costs ``a(B, L) = f_T(B, 1, L)`` per token per row (no
  overhead: it has no round).

``k`` counts drafted tokens exactly as :attr:`spectheory.cost.Cost.target_call` does
(``t(k)``: "a call that scores ``k`` drafted tokens"), so :meth:`CostModel.at` is a
:class:`~spectheory.cost.Cost` in seconds that every engine reads unchanged;
:meth:`CostModel.relative` is the same cost in units of one plain-decoding step (what the
optimisers whose rates are speedups expect). :class:`ConstantCost` is Leviathan et al.'s model,
``Cost(c)`` at every batch size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .base import Cost
from .forward import ConstantForward, ForwardCost

__all__ = ["CostModel", "ConstantCost", "TargetCall", "DraftCall"]


def _batch(batch: Any) -> int:
    if isinstance(batch, bool) or not float(batch).is_integer() or int(batch) < 1:
        raise ValueError(f"batch: expected an integer number of rows >= 1, got {batch!r}")
    return int(batch)


def _context(context: Any) -> float:
    x = float(context)
    if not np.isfinite(x) or x < 0:
        raise ValueError(f"context: expected cached tokens >= 0, got {context!r}")
    return x


@dataclass(frozen=True)
class TargetCall:
    """``k -> target(batch, k + 1, context) * scale + overhead * scale``: the ``target_call`` of
    :meth:`CostModel.at` (a comparable, hashable callable, so equal costs compare equal)."""

    target: ForwardCost
    batch: int
    context: float
    overhead: float = 0.0
    scale: float = 1.0

    def __call__(self, k: int) -> float:
        if int(k) < 0:
            raise ValueError(f"k: drafted tokens must be >= 0, got {k!r}")
        return (float(self.target(self.batch, int(k) + 1, self.context)) + self.overhead) * self.scale


@dataclass(frozen=True)
class DraftCall:
    """``w -> draft(batch, w, context) * scale``: one draft forward over a tree level of ``w``
    nodes per row (the ``draft_call`` of :meth:`CostModel.at`)."""

    draft: ForwardCost
    batch: int
    context: float
    scale: float = 1.0

    def __call__(self, w: int) -> float:
        return float(self.draft(self.batch, int(w), self.context)) * self.scale


@dataclass(frozen=True)
class CostModel:
    r"""What a round costs at every batch size and context: target and draft forwards, plus overhead.

    Parameters
    ----------
    target, draft : ForwardCost
        Seconds of one forward of each model, ``f(batch, tokens, context)``.
    overhead : float >= 0
        Seconds per speculative round spent outside the two forwards (not paid by plain decoding).
    level_forwards : bool
        True (default): a tree level is one draft forward (``f_D(B, w, L)``, tree attention);
        False: every drafted node is one draft step of ``f_D(B, 1, L)`` (the package's
        convention before cost models; :class:`ConstantCost`).
    name, source : str
        A label and where the constants come from.

    Examples
    --------
    >>> from spectheory.cost import CostModel, LinearForward, ConstantForward
    >>> model = CostModel(LinearForward(0.010, 2e-5), ConstantForward(0.001))
    >>> cost = model.at(batch=8)
    >>> round(cost.c, 6), round(cost.target_call(4), 6), round(model.autoregressive(8), 6)
    (0.001, 0.0108, 0.01016)
    >>> rel = model.relative(batch=8)
    >>> rel.autoregressive, round(rel.target_call(4), 4)
    (1.0, 1.063)
    """

    target: ForwardCost
    draft: ForwardCost
    overhead: float = 0.0
    level_forwards: bool = True
    name: str = field(default="", compare=False)
    source: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        for role in ("target", "draft"):
            if not isinstance(getattr(self, role), ForwardCost):
                raise ValueError(f"{role}: expected a ForwardCost, got {type(getattr(self, role)).__name__}")
        x = float(self.overhead)
        if not np.isfinite(x) or x < 0:
            raise ValueError(f"overhead: expected finite seconds >= 0, got {self.overhead!r}")
        object.__setattr__(self, "overhead", x)
        object.__setattr__(self, "level_forwards", bool(self.level_forwards))

    # -- the pieces of a round, in seconds ---------------------------------------------------
    def draft_step(self, batch: int = 1, context: float = 0.0) -> float:
        """``f_D(B, 1, L)``: one draft token per row."""
        return float(self.draft(_batch(batch), 1, _context(context)))

    def draft_level(self, width: int, batch: int = 1, context: float = 0.0) -> float:
        """``f_D(B, w, L)``: one draft forward over a tree level of ``w`` nodes per row."""
        return float(self.draft(_batch(batch), int(width), _context(context)))

    def target_call(self, k: int, batch: int = 1, context: float = 0.0) -> float:
        """``f_T(B, k + 1, L) + overhead``: a target call verifying ``k`` drafted tokens per row."""
        return TargetCall(self.target, _batch(batch), _context(context), self.overhead)(k)

    def round_time(self, k: int, batch: int = 1, context: float = 0.0) -> float:
        """``k c(B, L) + t(k; B, L)``: a path round drafting ``k`` tokens."""
        return int(k) * self.draft_step(batch, context) + self.target_call(k, batch, context)

    def autoregressive(self, batch: int = 1, context: float = 0.0) -> float:
        """``f_T(B, 1, L)``: seconds per token (per row) of plain autoregressive decoding."""
        return float(self.target(_batch(batch), 1, _context(context)))

    # -- as the engines read it ---------------------------------------------------------------
    def at(self, batch: int = 1, context: float = 0.0) -> Cost:
        """The :class:`~spectheory.cost.Cost` of a round at batch ``B`` and context ``L``, in seconds.

        ``c = f_D(B, 1, L)``, ``target_call(k) = f_T(B, k + 1, L) + overhead``,
        ``draft_call(w) = f_D(B, w, L)`` (when ``level_forwards``) and
        ``autoregressive = f_T(B, 1, L)``. A target that costs 1 whatever it scores and no
        overhead gives ``target_call=None`` (every call costs 1: the numbers of ``Cost(c)``
        exactly).
        """
        return self._cost(_batch(batch), _context(context), 1.0)

    def relative(self, batch: int = 1, context: float = 0.0) -> Cost:
        """:meth:`at` in units of one plain-decoding step ``f_T(B, 1, L)`` (``autoregressive = 1``):
        tokens per unit time under it are speedups (what :func:`spectheory.stopping.long_run_optimum`
        reports)."""
        B, L = _batch(batch), _context(context)
        return self._cost(B, L, 1.0 / float(self.target(B, 1, L)))

    def _cost(self, B: int, L: float, scale: float) -> Cost:
        ar = float(self.target(B, 1, L)) * scale
        target = self.target
        unit_calls = isinstance(target, ConstantForward) and self.overhead == 0.0
        if unit_calls and isinstance(target, ConstantForward) and float(target.seconds) * scale == 1.0:
            target_call = None
        else:
            target_call = TargetCall(self.target, B, L, self.overhead, scale)
        draft_call = DraftCall(self.draft, B, L, scale) if self.level_forwards else None
        return Cost(float(self.draft(B, 1, L)) * scale, target_call, draft_call, ar)

    def describe(self) -> str:
        """The model in a few lines: its name, both forwards, the overhead and the source."""
        lines = [self.name or type(self).__name__]
        lines.append(f"  target: {self.target.describe()}")
        lines.append(f"  draft:  {self.draft.describe()}")
        if self.overhead:
            lines.append(f"  overhead per round: {self.overhead:.4g} s")
        if not self.level_forwards:
            lines.append("  trees: every drafted node is one draft step")
        if self.source:
            lines.append(f"  source: {self.source}")
        return "\n".join(lines)


class ConstantCost(CostModel):
    """Leviathan et al.'s model: a draft step costs ``c`` target calls, a target call 1, at any batch.

    ``ConstantCost(c).at(batch)`` is ``Cost(c)`` for every batch and context, so every
    ``time``, ``speedup`` and optimum computed under the number ``c`` is unchanged; trees cost
    ``c`` per drafted node (``level_forwards=False``), as ``Cost(c)`` does.

    Examples
    --------
    >>> from spectheory.cost import ConstantCost, Cost
    >>> ConstantCost(0.05).at(batch=64) == Cost(0.05)
    True
    >>> ConstantCost(0.05)
    ConstantCost(c=0.05)
    """

    def __init__(self, c: float, name: str = "", source: str = "") -> None:
        super().__init__(
            ConstantForward(1.0),
            ConstantForward(c),
            0.0,
            level_forwards=False,
            name=name or f"constant c={float(c):g}",
            source=source,
        )

    @property
    def c(self) -> float:
        """The draft step cost in units of one target call."""
        return float(self.draft.seconds)  # type: ignore[attr-defined]

    def __repr__(self) -> str:
        return f"ConstantCost(c={self.c:g})"

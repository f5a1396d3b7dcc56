r"""The cost of one round, as the engines read it: :class:`Cost` (draft step ``c``, target call ``t(k)``).

A draft forward step costs ``c``; a target call that scores ``k`` drafted tokens (it returns
the target's laws at the ``k`` drafted positions and the one after them, so it scores
``k + 1`` positions) costs ``t(k)``, by default 1 for every ``k``. A round that drafts ``k``
tokens one at a time therefore costs ``c k + t(k)``, and a generation of ``T`` tokens costs

.. math:: \text{time} = c \cdot \#\text{draft steps} + \sum_{\text{rounds}} t(k_r),

against ``T a`` for plain autoregressive decoding, ``a = autoregressive`` (default 1: Leviathan
et al.'s unit, one target call). The unit is free: a :class:`Cost` in units of one target call
(``Cost(0.05)``) and one in seconds (``CostModel.at(batch)``, :mod:`spectheory.cost.round_cost`)
are read the same way; ``speedup = T a / time`` in both.

Trees: by default every drafted node is one draft step (``c`` per node, the convention of the
package before cost models). With ``draft_call`` (``w -> time`` of one draft forward that
scores ``w`` tokens, set by :meth:`spectheory.cost.CostModel.at`) a tree is drafted level by
level: the forward over the ``w_l`` nodes at depth ``l`` proposes the nodes at depth ``l + 1``,
so a tree of depth ``d`` costs :math:`\sum_{l=0}^{d-1} \text{draft\_call}(w_l)` (``w_0 = 1``,
the root). For a path (``w_l = 1``) both conventions give ``c d``. Derivations:
``docs/cost.md``; the draft-length policies of :mod:`spectheory.stopping` are optimised under
a :class:`Cost` (``docs/stopping.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Cost", "as_cost"]


@dataclass(frozen=True)
class Cost:
    r"""Time of draft steps and target calls (units of one target call, or seconds).

    Parameters
    ----------
    c : float >= 0
        Time of one draft forward step (one token per row).
    target_call : callable ``k -> float``, optional
        Time of a target call that scores ``k`` drafted tokens (``k + 1`` positions); default 1.
        ``k = 0`` is read only for a round that drafts nothing (:meth:`empty_call_time`).
    draft_call : callable ``w -> float``, optional
        Time of one draft forward scoring ``w >= 1`` tokens (a tree level of ``w`` nodes);
        default: none, every drafted tree node costs ``c``. Must satisfy
        ``draft_call(1) == c`` (a path is drafted one token per forward).
    autoregressive : float > 0
        Time per token of plain autoregressive decoding in the same unit (default 1: one
        target call); the reference of :meth:`ExactResult.speedup
        <spectheory.exact.ExactResult.speedup>`.

    Examples
    --------
    >>> from spectheory.cost import Cost
    >>> cost = Cost(0.1, target_call=lambda k: 1 + 0.02 * k)
    >>> cost.round_time(4)
    1.48
    >>> Cost(0.05).call_times(3).tolist()
    [1.0, 1.0, 1.0]
    >>> Cost(0.1).tree_draft_time([1, 2, 4]), Cost(0.1, draft_call=lambda w: 0.1).tree_draft_time([1, 2, 4])
    (0.6000000000000001, 0.2)
    """

    c: float = 0.0
    target_call: Callable[[int], float] | None = None
    draft_call: Callable[[int], float] | None = None
    autoregressive: float = 1.0

    def __post_init__(self) -> None:
        c = float(self.c)
        if not np.isfinite(c) or c < 0:
            raise ValueError(f"c: draft step cost must be finite and >= 0, got {self.c!r}")
        object.__setattr__(self, "c", c)
        if self.target_call is not None and not callable(self.target_call):
            raise ValueError("target_call: must be a callable k -> time (or None for 1)")
        if self.draft_call is not None and not callable(self.draft_call):
            raise ValueError("draft_call: must be a callable w -> time (or None: c per drafted node)")
        a = float(self.autoregressive)
        if not np.isfinite(a) or a <= 0:
            raise ValueError(
                f"autoregressive: time per plain-decoding token must be finite and > 0, got {a!r}"
            )
        object.__setattr__(self, "autoregressive", a)

    def call_times(self, max_k: int) -> np.ndarray:
        """``[t(1), ..., t(max_k)]`` as float64, checked finite and >= 0."""
        if self.target_call is None:
            return np.ones(int(max_k))
        out = np.array([float(self.target_call(k)) for k in range(1, int(max_k) + 1)])
        if out.size and (not np.all(np.isfinite(out)) or out.min() < 0):
            raise ValueError("target_call: must return finite times >= 0 for k = 1..max_depth")
        return out

    def empty_call_time(self) -> float:
        """``t(0)``: a target call that scores no drafted token (one position), the round of a
        drafter that drafts nothing (the hindsight oracle's): ``target_call(0)``, or 1 without
        ``target_call``. Not :attr:`autoregressive` (plain decoding, the speedup's reference):
        the call belongs to the same round-cost curve as ``t(1), t(2), ...``.

        >>> Cost(0.1, target_call=lambda k: 0.5 + 0.1 * k).empty_call_time()
        0.5
        >>> Cost(0.1, autoregressive=2.0).empty_call_time()
        1.0
        """
        if self.target_call is None:
            return 1.0
        t0 = float(self.target_call(0))
        if not np.isfinite(t0) or t0 < 0:
            raise ValueError("target_call: must return a finite time >= 0 for k = 0 (a call with no draft)")
        return t0

    def round_time(self, k: int) -> float:
        """``c k + t(k)``: the time of a round that drafts ``k`` tokens one at a time."""
        return self.c * int(k) + float(self.call_times(int(k))[-1])

    def tree_draft_time(self, widths: Sequence[float] | np.ndarray) -> float:
        r"""Drafting time of a tree with ``widths[l]`` nodes at depth ``l`` (``widths[0] = 1``,
        the root; depth ``d = len(widths) - 1``): ``c * sum(widths[1:])`` without
        ``draft_call``, else :math:`\sum_{l<d} \text{draft\_call}(w_l)` (``docs/cost.md``)."""
        w = np.asarray(widths, dtype=np.float64)
        if w.ndim != 1 or w.size < 1 or np.any(w < 0):
            raise ValueError("widths: expected a 1-d array of node counts per depth, widths[0] = 1")
        if self.draft_call is None:
            return self.c * float(w[1:].sum()) if self.c else 0.0
        if np.isinf(w[:-1]).any():
            raise ValueError("widths: a level-by-level draft cost needs finite levels")
        return float(sum(float(self.draft_call(int(x))) for x in w[:-1] if x > 0))

    def weights(self) -> np.ndarray:
        """Weights of the value components ``(calls, draft steps, target time)`` giving time."""
        return np.array([0.0, self.c, 1.0])


def as_cost(cost: Any) -> Cost:
    """A :class:`Cost` from a ``Cost``, a number (the draft step cost ``c``), None (``c = 0``) or
    a :class:`~spectheory.cost.CostModel` (its cost at batch 1, context 0, in seconds)."""
    if isinstance(cost, Cost):
        return cost
    if cost is None:
        return Cost(0.0)
    at = getattr(cost, "at", None)
    if callable(at) and hasattr(cost, "autoregressive"):  # a CostModel (duck-typed: model.py imports this)
        return at()
    if np.ndim(cost) != 0:
        raise ValueError(f"cost: expected a Cost or a scalar draft step cost, got shape {np.shape(cost)}")
    return Cost(float(cost))

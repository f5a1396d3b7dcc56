"""The short ``repr`` of every result type: the key numbers on one line, arrays by their shape.

A result's default dataclass ``repr`` prints every per-position array (a ``ProtocolResult`` of
horizon 50 takes about 100 lines) and none of the numbers a reader wants. :func:`result_repr`
shows the class name, the scalar fields (``horizon``, ``gamma``, ``bonus``, ...), the counters
(exact values, or Monte Carlo means with their standard error), ``tokens_per_call``, the
``speedup`` when the result carries a cost, and each array field as ``name=<shape (T, S)>``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

__all__ = ["result_repr", "cost_repr", "exact_value"]


def _num(x: Any) -> str:
    return f"{float(x):.6g}"


def cost_repr(cost: Any) -> str:
    """``Cost(c=0.1)``; the callables of a :class:`~spectheory.cost.Cost` by name only
    (``t(k)``, ``draft_call(w)``), ``autoregressive`` when not 1; other cost objects (a
    ``CostModel``) by their own short ``repr`` when they have one, else their class name."""
    if not hasattr(cost, "c") or not hasattr(cost, "target_call"):
        text = repr(cost)
        return text if len(text) <= 80 else type(cost).__name__
    parts = [f"c={_num(cost.c)}"]
    if cost.target_call is not None:
        parts.append("t(k)")
    if getattr(cost, "draft_call", None) is not None:
        parts.append("draft_call(w)")
    if getattr(cost, "autoregressive", 1.0) != 1.0:
        parts.append(f"autoregressive={_num(cost.autoregressive)}")
    return f"{type(cost).__name__}({', '.join(parts)})"


def result_repr(
    obj: Any,
    counters: Sequence[str],
    value: Callable[[str], str],
    speedup: Callable[[], float] | None,
) -> str:
    """One-line summary of a result dataclass ``obj``.

    Parameters
    ----------
    obj : dataclass instance
        The result; its fields that are not counters are shown first (scalars as values,
        arrays as ``<shape>``; ``None`` and dicts are left out).
    counters : sequence of str
        The key numbers, in order (fields or properties of ``obj``).
    value : callable
        ``name -> text`` of one counter (an exact value, or a mean with its error).
    speedup : callable, optional
        The speedup under the result's own cost, or None when it carries none.
    """
    head, arrays = [], []
    for f in dataclasses.fields(obj):
        if f.name in counters or f.name == "cost" or not f.repr:
            continue
        v = getattr(obj, f.name)
        if v is None or isinstance(v, dict):
            continue
        if isinstance(v, np.ndarray):
            arrays.append(f"{f.name}=<shape {v.shape}>")
        elif isinstance(v, (bool, np.bool_, str)):
            head.append(f"{f.name}={v!r}" if isinstance(v, str) else f"{f.name}={bool(v)}")
        elif isinstance(v, (int, float, np.integer, np.floating)):
            head.append(f"{f.name}={v:g}" if isinstance(v, (float, np.floating)) else f"{f.name}={int(v)}")
    parts = head + [f"{name}={value(name)}" for name in counters]
    cost = getattr(obj, "cost", None)
    if cost is not None and speedup is not None:
        try:
            parts.append(f"speedup={_num(speedup())} under {cost_repr(cost)}")
        except (ValueError, TypeError, AttributeError, NotImplementedError, ZeroDivisionError):
            parts.append(f"cost={cost_repr(cost)}")
    return f"{type(obj).__name__}({', '.join(parts + arrays)})"


def exact_value(obj: Any) -> Callable[[str], str]:
    """``name -> text`` for an exact result: the value, or ``n/a`` when not computed."""

    def value(name: str) -> str:
        try:
            return _num(getattr(obj, name))
        except (NotImplementedError, ValueError, ZeroDivisionError):
            return "n/a"

    return value

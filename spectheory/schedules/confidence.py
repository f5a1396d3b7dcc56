r"""How calibrated the confidences engines schedule by are: exact ECE and AUROC on a batch.

Slot ``i`` of a row is *reached* when its drafts before it were accepted; given its prefix
:math:`x_{<i}` it is then accepted with probability exactly
:math:`\alpha(x_{<i}) = \sum_v \min(p, q)(v \mid x_{<i})`. So the exact per-state acceptance
:math:`\alpha` is the calibrated confidence of the event :math:`A_i` = "slot ``i`` accepted"
on reached slots, and every other prefix feature (the draft's largest probability, its top-2
margin, one minus its normalised entropy) is judged against it. The population is a finite
mixture: prefix :math:`x_{<i}` is reached with mass :math:`\prod_{k<i} \min(p, q)(x_k)`, scores
``s`` and carries :math:`P(A_i) = \alpha(x_{<i})`. From it, exactly:

- :func:`ece` -- :math:`\sum_g w_g |P(A \mid g) - \bar s_g|` over the groups ``g`` of equal
  score (every distinct value its own bin) or of ``bins`` equal-width bins;
- :func:`auroc` -- :math:`P(s^+ > s^-) + \tfrac12 P(s^+ = s^-)` for an accepted and a rejected
  reached slot drawn independently.

``event="survival"`` judges a chained score :math:`\prod_{k \le i} s(x_{<k})` (DSpark's
:math:`\prod c_k` for ``s = conf``; engines chain the draft proxies the same way) on every slot
against :math:`S_i` = "slots ``1..i`` all accepted", whose probability given :math:`x_{<i}` is
:math:`\prod_{k<i} \min(1, p/q)(x_k)\,\alpha(x_{<i})` (the exact prefix survival): even the
product of calibrated per-slot confidences is not a calibrated survival.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.schedules.slots import BlockRow
>>> row = BlockRow.iid([F(7, 10), F(3, 10)], [F(1, 2), F(1, 2)])
>>> ece(confidence_table([row], 2, "conf"))
Fraction(0, 1)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .slots import BlockRow

__all__ = ["PROXIES", "confidence_table", "ece", "auroc"]

#: The prefix confidences judged (``conf`` is the exact per-state acceptance).
PROXIES = ("conf", "max_prob", "margin", "entropy")


def _score(p: Sequence[Any], q: Sequence[Any], feature: str) -> Any:
    if feature == "conf":
        return sum((min(a, b) for a, b in zip(p, q, strict=True)), 0 * p[0])
    top = sorted(q, reverse=True)
    if feature == "max_prob":
        return top[0]
    if feature == "margin":
        return top[0] - (top[1] if len(top) > 1 else 0)
    if feature == "entropy":
        V = len(q)
        h = -sum(float(v) * math.log(float(v)) for v in q if v > 0)
        return 1.0 - (h / math.log(V) if V > 1 else 0.0)
    raise ValueError(f"feature: expected one of {PROXIES}, got {feature!r}")


def confidence_table(
    rows: Sequence[BlockRow], gamma: int, feature: str, *, event: str = "conditional"
) -> list[tuple[Any, Any, Any]]:
    """The exact mixture ``[(mass, score, P(event)), ...]`` over every slot prefix of every row
    (masses sum to the expected number of reached slots, or to ``B gamma`` for ``"survival"``).

    ``event="conditional"``: reached slots, event :math:`A_i`, score the prefix ``feature``;
    ``event="survival"``: every slot, event :math:`S_i`, score the running product of
    ``feature`` along the prefix (``"conf"``: the chained survival).
    """
    if event not in ("conditional", "survival"):
        raise ValueError(f"event: expected 'conditional' or 'survival', got {event!r}")
    if gamma < 1:
        raise ValueError(f"gamma: expected >= 1, got {gamma}")
    out: list[tuple[Any, Any, Any]] = []
    _score(*rows[0].laws(()), feature)  # an unknown feature fails here
    for row in rows:
        # (prefix, mass: reached (conditional) or drafted (survival), chained score, P(S_{<i}))
        layer: list[tuple[tuple[int, ...], Any, Any, Any]] = [((), 1, 1, 1)]
        for _ in range(gamma):
            nxt = []
            for pre, m, surv, ok in layer:
                p, q = row.laws(pre)
                a = _score(p, q, "conf")
                if event == "conditional":
                    out.append((m, _score(p, q, feature), a))
                else:
                    surv = surv * _score(p, q, feature)
                    out.append((m, surv, ok * a))
                for v in range(row.vocab_size):
                    if q[v] <= 0:
                        continue
                    acc = min(1, p[v] / q[v])
                    if event == "conditional" and acc * q[v] > 0:
                        nxt.append((pre + (v,), m * q[v] * acc, surv * a, ok))
                    elif event == "survival":
                        nxt.append((pre + (v,), m * q[v], surv, ok * acc))
            layer = nxt
    return out


def ece(table: Sequence[tuple[Any, Any, Any]], bins: int | None = None) -> Any:
    """Expected calibration error of a mixture table: every distinct score its own bin
    (``bins=None``, exact) or ``bins`` equal-width bins on ``[0, 1]``."""
    groups: dict[Any, list[Any]] = {}
    total: Any = 0
    for m, s, pa in table:
        key = s if bins is None else min(int(float(s) * bins), bins - 1)
        g = groups.setdefault(key, [0, 0, 0])
        g[0], g[1], g[2] = g[0] + m, g[1] + m * s, g[2] + m * pa
        total = total + m
    if not total:
        raise ValueError("table: no mass")
    return sum((abs(g[2] - g[1]) for g in groups.values() if g[0]), 0 * total) / total


def auroc(table: Sequence[tuple[Any, Any, Any]]) -> Any:
    """:math:`P(s^+ > s^-) + \\tfrac12 P(s^+ = s^-)` for an independent positive (event) and
    negative (no event) drawn from the mixture table."""
    pos: dict[Any, Any] = {}
    neg: dict[Any, Any] = {}
    for m, s, pa in table:
        pos[s] = pos.get(s, 0) + m * pa
        neg[s] = neg.get(s, 0) + m * (1 - pa)
    P, N = sum(pos.values()), sum(neg.values())
    if not P or not N:
        raise ValueError("table: needs both accepted and rejected mass")
    keys = sorted(set(pos) | set(neg))
    below: Any = 0
    win: Any = 0
    for k in keys:
        win = win + pos.get(k, 0) * (below + neg.get(k, 0) / 2)
        below = below + neg.get(k, 0)
    return win / (P * N)

r"""A batch of drafted blocks and the per-slot features a verification scheduler reads.

A batch holds ``B`` requests (rows). Row ``b`` drafts a block of ``gamma`` tokens
:math:`x_{b,1..\gamma}`, :math:`x_{b,i} \sim q(\cdot \mid x_{b,<i})`, from its own laws: a
:class:`BlockRow` gives the target :math:`p(\cdot \mid \pi)` and the draft
:math:`q(\cdot \mid \pi)` after any drafted prefix :math:`\pi` (the convention of
``RoundLawRule.round_law``; entries may be ``Fraction``). A
*schedule* (:mod:`.schedulers`) then says how many tokens :math:`L_b` of each row are verified
by token verification; the step scores :math:`N = \sum_b (L_b + 1)` positions.

Per slot ``(b, i)`` (:class:`SlotFeatures`, arrays ``[B, gamma]``, ``i`` 0-based below):

- ``conf``: :math:`\alpha(x_{<i}) = \sum_v \min(p, q)(v \mid x_{<i})`, the exact probability that
  slot ``i`` is accepted given its prefix and that the slots before it were (the calibrated
  confidence; it reads only the prefix);
- ``survival``: :math:`\prod_{k \le i} \alpha(x_{<k})`, the prefix survival a confidence head
  predicts (DSpark's :math:`\prod c_k`), live: from this step's drafts;
- ``stale``: a draw-free survival curve, by default the expected survival
  :math:`P(\text{slots } 1..i \text{ accepted})` at the row's start (what a scheduler reading the
  previous step's confidences has: nothing of this step's draws);
- ``margin``, ``max_prob``, ``entropy``: the draft's top-2 margin, largest probability and
  entropy of :math:`q(\cdot \mid x_{<i})` (the proxies engines read; prefix only);
- ``own_prob``: :math:`q(x_i \mid x_{<i})`, the draft's probability of the drafted token itself;
- ``accept_prob``: :math:`\min(1, p/q)(x_i \mid x_{<i})`, slot ``i``'s acceptance probability
  given its own token (known only after the target's forward: retrospective).

``own_prob`` and ``accept_prob`` read slot ``i``'s own draw; a schedule that lets them decide
whether slot ``i`` is verified is anticipating (``docs/verification_schedules.md``).

Examples
--------
>>> from fractions import Fraction as F
>>> row = BlockRow.iid([F(7, 10), F(3, 10)], [F(1, 2), F(1, 2)])
>>> f = slot_features([row], [(1, 0)])
>>> f.accept_prob[0], f.conf[0]
([Fraction(3, 5), Fraction(1, 1)], [Fraction(4, 5), Fraction(4, 5)])
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

__all__ = ["BlockRow", "SlotFeatures", "slot_features", "draft_blocks", "rows_from_chain"]

Laws = Callable[[tuple[int, ...]], Sequence[Any]]


@dataclass(frozen=True, eq=False)
class BlockRow:
    """One request of the batch: its target and draft laws after any drafted prefix.

    Parameters
    ----------
    target, draft : callable ``prefix (tuple of int) -> sequence of V numbers``
        :math:`p(\\cdot \\mid \\pi)` and :math:`q(\\cdot \\mid \\pi)` after the drafted prefix
        :math:`\\pi` (``()``: the row's start); ``Fraction`` entries keep every result exact.
    vocab_size : int
    stale : sequence of numbers, optional
        The row's draw-free confidences per slot (default: its expected prefix survival).
    """

    target: Laws
    draft: Laws
    vocab_size: int
    stale: tuple[Any, ...] | None = field(default=None)
    _memo: dict[int, tuple[Any, ...]] = field(default_factory=dict, repr=False)
    _features: dict[tuple[int, ...], list[list[Any]]] = field(default_factory=dict, repr=False)

    @classmethod
    def iid(cls, target: Sequence[Any], draft: Sequence[Any], stale: Sequence[Any] | None = None) -> BlockRow:
        """A row whose laws do not depend on the prefix."""
        p, q = tuple(target), tuple(draft)
        if len(p) != len(q) or len(p) < 1:
            raise ValueError(f"target, draft: expected equal lengths >= 1, got {len(p)}, {len(q)}")
        return cls(lambda _: p, lambda _: q, len(p), None if stale is None else tuple(stale))

    def as_float(self) -> BlockRow:
        """The same row with float laws, each prefix's laws computed once (for Monte Carlo)."""
        memo: dict[tuple[int, ...], tuple[tuple[float, ...], tuple[float, ...]]] = {}

        def get(prefix: tuple[int, ...]) -> tuple[tuple[float, ...], tuple[float, ...]]:
            if prefix not in memo:
                p, q = self.laws(prefix)
                memo[prefix] = (tuple(map(float, p)), tuple(map(float, q)))
            return memo[prefix]

        stale = None if self.stale is None else tuple(map(float, self.stale))
        return BlockRow(lambda pre: get(pre)[0], lambda pre: get(pre)[1], self.vocab_size, stale)

    def laws(self, prefix: tuple[int, ...]) -> tuple[Sequence[Any], Sequence[Any]]:
        """``(p, q)`` after ``prefix``, checked to have ``vocab_size`` entries."""
        p, q = self.target(prefix), self.draft(prefix)
        if len(p) != self.vocab_size or len(q) != self.vocab_size:
            raise ValueError(
                f"row laws: expected {self.vocab_size} entries after {prefix}, got {len(p)}, {len(q)}"
            )
        return p, q

    def alpha(self, prefix: tuple[int, ...]) -> Any:
        """:math:`\\sum_v \\min(p, q)` after ``prefix``: the acceptance probability of the next slot."""
        p, q = self.laws(prefix)
        return sum((min(a, b) for a, b in zip(p, q, strict=True)), 0 * p[0])

    def expected_survival(self, gamma: int) -> tuple[Any, ...]:
        """:math:`P(\\text{slots } 1..i \\text{ accepted})` for ``i = 1..gamma`` (drafts drawn
        from the row's start): the default ``stale`` curve (computed once per ``gamma``)."""
        if gamma in self._memo:
            return self._memo[gamma]
        out = []
        layer: dict[tuple[int, ...], Any] = {(): 1}  # P(prefix drafted and accepted)
        for _ in range(gamma):
            nxt: dict[tuple[int, ...], Any] = {}
            for pre, m in layer.items():
                p, q = self.laws(pre)
                for v in range(self.vocab_size):
                    acc = min(p[v], q[v])  # q(v) min(1, p/q)
                    if acc > 0:
                        nxt[pre + (v,)] = m * acc
            out.append(sum(nxt.values(), 0 * next(iter(layer.values()))))
            layer = nxt
        self._memo[gamma] = tuple(out)
        return self._memo[gamma]


@dataclass
class SlotFeatures:
    """Per-slot features of a batch, each a list of ``B`` lists of ``gamma`` numbers (see the
    module docstring); ``gamma`` is the drafted block length. ``tokens`` holds the drafted
    blocks themselves (what an oracle schedule replays its decisions on)."""

    conf: list[list[Any]]
    survival: list[list[Any]]
    stale: list[list[Any]]
    margin: list[list[float]]
    max_prob: list[list[Any]]
    entropy: list[list[float]]
    own_prob: list[list[Any]]
    accept_prob: list[list[Any]]
    tokens: list[tuple[int, ...]] = field(default_factory=list)

    @property
    def shape(self) -> tuple[int, int]:
        """``(B, gamma)``."""
        return len(self.conf), len(self.conf[0]) if self.conf else 0

    def get(self, name: str) -> list[list[Any]]:
        """The feature called ``name`` (a field of this class)."""
        if name not in FEATURES:
            raise ValueError(f"feature: expected one of {FEATURES}, got {name!r}")
        return getattr(self, name)


#: The feature names a schedule may rank by.
FEATURES = ("conf", "survival", "stale", "margin", "max_prob", "entropy", "own_prob", "accept_prob")


def _row_features(row: BlockRow, x: Sequence[int]) -> list[list[Any]]:
    """The seven drafted-block features of one row (memoised on the row: its laws are fixed)."""
    key = tuple(int(v) for v in x)
    if key not in row._features:
        row._features[key] = _compute_row_features(row, key)
    return row._features[key]


def _compute_row_features(row: BlockRow, x: Sequence[int]) -> list[list[Any]]:
    conf, surv, margin, mx, ent, own, acc = [], [], [], [], [], [], []
    s: Any = 1
    for i, xi in enumerate(x):
        pre = tuple(x[:i])
        p, q = row.laws(pre)
        if not 0 <= xi < row.vocab_size:
            raise ValueError(f"blocks: token {xi} outside [0, {row.vocab_size})")
        a = sum((min(u, v) for u, v in zip(p, q, strict=True)), 0 * p[0])
        s = s * a
        top = sorted(q, reverse=True)
        conf.append(a)
        surv.append(s)
        margin.append(float(top[0] - (top[1] if len(top) > 1 else 0)))
        mx.append(top[0])
        ent.append(-sum(float(v) * math.log(float(v)) for v in q if v > 0))
        own.append(q[xi])
        if q[xi] <= 0:
            raise ValueError(f"blocks: token {xi} has draft probability 0 after {pre}")
        acc.append(min(q[xi] / q[xi], p[xi] / q[xi]))  # min(1, p/q), in the laws' number type
    return [conf, surv, margin, mx, ent, own, acc]


def slot_features(rows: Sequence[BlockRow], blocks: Sequence[Sequence[int]]) -> SlotFeatures:
    """The :class:`SlotFeatures` of drafted ``blocks`` (``B`` sequences of ``gamma`` tokens) on
    ``rows``."""
    if len(rows) != len(blocks) or not rows:
        raise ValueError(f"rows, blocks: expected equal lengths >= 1, got {len(rows)}, {len(blocks)}")
    g = len(blocks[0])
    if g < 1 or any(len(x) != g for x in blocks):
        raise ValueError("blocks: every row drafts the same gamma >= 1 tokens")
    cols = [_row_features(r, x) for r, x in zip(rows, blocks, strict=True)]
    stale = [list(r.stale[:g]) if r.stale is not None else list(r.expected_survival(g)) for r in rows]
    if any(len(s) != g for s in stale):
        raise ValueError(f"stale: each row's stale curve needs {g} entries")
    f = [[list(c[k]) for c in cols] for k in range(7)]
    return SlotFeatures(f[0], f[1], stale, f[2], f[3], f[4], f[5], f[6], [tuple(x) for x in blocks])


def draft_blocks(row: BlockRow, gamma: int) -> Iterator[tuple[tuple[int, ...], Any]]:
    """Every block of ``gamma`` drafts of ``row`` with its probability :math:`\\prod_i q(x_i \\mid x_{<i})`
    (blocks of probability 0 left out)."""
    for x in itertools.product(range(row.vocab_size), repeat=gamma):
        w: Any = 1
        for i, xi in enumerate(x):
            w = w * row.laws(x[:i])[1][xi]
            if w == 0:
                break
        if w != 0:
            yield x, w


def rows_from_chain(chain: Any, states: Sequence[int], n: int = 0, *, exact: bool = False) -> list[BlockRow]:
    """One :class:`BlockRow` per start state of a deterministic chain at position ``n``
    (homogeneous chains ignore ``n``); ``exact=True`` reads each float as the shortest decimal
    that prints it (``Fraction(repr(x))``), so ``0.7`` is ``7/10``."""
    chain.require_deterministic("rows_from_chain")
    conv = (lambda v: Fraction(repr(float(v)))) if exact else float
    V = chain.vocab_size

    def laws(s0: int, which: int) -> Laws:
        def f(prefix: tuple[int, ...]) -> tuple[Any, ...]:
            s = s0
            for t in prefix:
                s = int(chain.next_state[s, t])
            m = n + len(prefix)
            if chain.max_horizon is not None:
                m = min(m, chain.max_horizon - 1)
            return tuple(conv(v) for v in chain.kernels(m)[which][s])

        return f

    return [BlockRow(laws(int(s), 0), laws(int(s), 1), V) for s in states]

r"""Tiny batches on which a schedule's output law is checked exactly, and the named examples.

- :func:`appendix_a` -- DSpark's Appendix A (arXiv 2607.05147): target ``(0.7, 0.3)``, draft
  ``(0.5, 0.5)``, one request, ``gamma = 2``, ``(1.0, 0.5, 0.45)`` steps per second for 1, 2, 3
  scored positions;
- :func:`token_dependent_row` -- the same first step, but the confidence after the first draft
  depends on it (first-order chain): the argmax on *live* survival without the early break
  anticipates there;
- :func:`skewed_row` -- draft ``(0.8, 0.2)``: the draft's own probability of a token tells
  about its acceptance, so dropping low-``q`` drafts is biased;
- :func:`random_batches` -- seeded random ``Fraction`` rows (laws depending on the whole prefix)
  with random staircase costs.

Examples
--------
>>> rows, gamma, cost = appendix_a()
>>> len(rows), gamma, cost.time(3)
(1, 2, Fraction(20, 9))
"""

from __future__ import annotations

import itertools
import random
from fractions import Fraction as F
from typing import Any

from ..cost.staircase import StaircaseCost
from .slots import BlockRow

__all__ = ["appendix_a", "token_dependent_row", "skewed_row", "random_row", "random_batches", "kit_instances"]

Instance = tuple[str, list[BlockRow], int, StaircaseCost]


def _dspark_cost(tokens: int) -> StaircaseCost:
    """DSpark's Appendix A curve ``(1, 1/2, 9/20)`` steps per second, extended by a step of
    ``1/20`` per further position (a staircase with one step per bucket)."""
    sps = [F(1), F(1, 2), F(9, 20)][:tokens]
    while len(sps) < tokens:
        sps.append(F(9, 20) / (1 + F(len(sps) - 2, 20)))
    return StaircaseCost.from_steps_per_second(sps)


def appendix_a() -> tuple[list[BlockRow], int, StaircaseCost]:
    """``(rows, gamma, cost)`` of DSpark's Appendix A (one request)."""
    return [BlockRow.iid([F(7, 10), F(3, 10)], [F(1, 2), F(1, 2)])], 2, _dspark_cost(3)


def token_dependent_row() -> BlockRow:
    """Start: target ``(0.7, 0.3)``, draft ``(0.5, 0.5)``; after token 0 the two agree, after
    token 1 they are far apart (``(0.9, 0.1)`` vs ``(0.1, 0.9)``)."""
    start, agree, far = [F(7, 10), F(3, 10)], [F(1, 2), F(1, 2)], ([F(9, 10), F(1, 10)], [F(1, 10), F(9, 10)])

    def target(pre: tuple[int, ...]) -> list[Any]:
        return start if not pre else (agree if pre[-1] == 0 else far[0])

    def draft(pre: tuple[int, ...]) -> list[Any]:
        return agree if not pre or pre[-1] == 0 else far[1]

    return BlockRow(target, draft, 2)


def skewed_row() -> BlockRow:
    """Target ``(0.7, 0.3)``, draft ``(0.8, 0.2)`` at every prefix."""
    return BlockRow.iid([F(7, 10), F(3, 10)], [F(4, 5), F(1, 5)])


def random_row(gen: random.Random, V: int, gamma: int) -> BlockRow:
    """Laws drawn for every prefix of length ``<= gamma`` (integer weights 1..9, normalised),
    in a fixed order from ``gen`` (reproducible)."""

    def law() -> list[Any]:
        w = [gen.randint(1, 9) for _ in range(V)]
        return [F(x, sum(w)) for x in w]

    prefixes = [pre for d in range(gamma + 1) for pre in itertools.product(range(V), repeat=d)]
    tables = ({pre: law() for pre in prefixes}, {pre: law() for pre in prefixes})

    def make(k: int) -> Any:
        def f(pre: tuple[int, ...]) -> list[Any]:
            if pre not in tables[k]:
                raise ValueError(f"random row: no law after a prefix longer than gamma = {gamma}")
            return tables[k][pre]

        return f

    return BlockRow(make(0), make(1), V)


def random_batches(n: int, batch: int, gamma: int, *, V: int = 2, seed: int = 0) -> list[Instance]:
    """``n`` random instances ``(name, rows, gamma, cost)`` of ``batch`` rows each."""
    gen = random.Random(seed)
    out = []
    for k in range(n):
        rows = [random_row(gen, V, gamma) for _ in range(batch)]
        size = batch * (gamma + 1)
        times = tuple(sorted(F(gen.randint(5, 40), 10) for _ in range(size)))
        out.append((f"random#{k}", rows, gamma, StaircaseCost(tuple(range(1, size + 1)), times)))
    return out


def kit_instances(gamma: int = 2, batch: int = 1, *, n_random: int = 40, seed: int = 0) -> list[Instance]:
    """The kit's instances: the three named rows (each repeated to ``batch`` rows) under
    DSpark's curve, the token-dependent row under a two-bucket staircase, then
    :func:`random_batches`."""
    cost = _dspark_cost(batch * (gamma + 1))
    two = StaircaseCost((batch, batch * (gamma + 1)), (F(1), F(2)))
    named = [
        ("appendix_a", [appendix_a()[0][0]] * batch, gamma, cost),
        ("token_dependent", [token_dependent_row()] * batch, gamma, cost),
        ("skewed_draft", [skewed_row()] * batch, gamma, cost),
        ("token_dependent_two_buckets", [token_dependent_row()] * batch, gamma, two),
    ]
    return named + random_batches(n_random, batch, gamma, seed=seed)

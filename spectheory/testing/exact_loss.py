r"""Exact loss of a lossy rule on a kit instance, when the rule has a round law.

The kit's instances (:class:`~spectheory.testing.Instance`) are first-order trees: the target
law at position ``j`` after token ``s`` is ``target[j, s]``, the draft's ``draft[j, s]``. For any
rule with a literal round law (:meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_law`: token
and block verification, the proposal modes, HSD, GBV, GLS, or a rule defined outside the
package) the round law ``{emitted: probability}`` comes from the rule object, enumerated branch
by branch (a registered name is resolved by
:func:`~spectheory.verifiers.round_laws.round_rule`); the kit
completes every emitted prefix to ``L`` tokens with the target, as it does with sampled rounds,
so the output law it tests is

.. math:: o(y_{1:L}) = \sum_{e \text{ prefix of } y} P(e) \prod_{i > |e|} p_i(y_i | y_{i-1}),

and the loss is :math:`\mathrm{TV}(o, p^{(L)}) = \tfrac12 \sum_y |o(y) - p^{(L)}(y)|`. With
``exact=True`` the instance's float64 laws are read as the rationals they are
(:class:`fractions.Fraction`, each row renormalised to sum to exactly 1) and the TV is exact;
otherwise the same sums run in float64.

Examples
--------
>>> from spectheory.testing.instances import make_instance
>>> from spectheory.testing.exact_loss import exact_output_tv
>>> inst = make_instance("markov", 3, 2, rng=0)
>>> exact_output_tv(inst, "token"), exact_output_tv(inst, "block")     # lossless: exactly 0
(Fraction(0, 1), Fraction(0, 1))
>>> float(exact_output_tv(inst, "argmax_soft")) > 0.01                   # greedy draft, soft law
True
"""

from __future__ import annotations

from fractions import Fraction
from itertools import product
from typing import Any

from .._guards import check_int
from ..verifiers.round_law_rule import RoundLawRule
from ..verifiers.round_laws import round_rule
from .round_instance import Instance

__all__ = ["exact_output_law", "exact_output_tv"]


def _rational(row: Any) -> list[Fraction]:
    r = [Fraction(float(v)) for v in row]
    total = sum(r)
    return [v / total for v in r]


def _laws(inst: Instance, exact: bool) -> tuple[Any, Any]:
    if not exact:
        return inst.target, inst.draft
    t = [[_rational(row) for row in m] for m in inst.target]
    d = [[_rational(row) for row in m] for m in inst.draft]
    return t, d


def exact_output_law(
    inst: Instance, rule: str | RoundLawRule, length: int | None = None, exact: bool = True
) -> dict[tuple[int, ...], Any]:
    """Law of the first ``length`` (default ``k+1``) tokens a round of ``rule`` emits on ``inst``,
    completed by the target (module docstring), ``{tokens: probability}``.

    ``rule``: a rule object with a round law or a registered name; ValueError naming a rule
    without one."""
    if not isinstance(inst, Instance):
        raise ValueError(f"inst: expected an Instance, got {type(inst).__name__}")
    r = round_rule(rule)
    k, V, s0 = inst.k, inst.vocab_size, inst.s0
    L = k + 1 if length is None else check_int(length, "length", 1)
    if L > k + 1:
        raise ValueError(f"length: at most k+1 = {k + 1}, got {L}")
    t, d = _laws(inst, exact)

    def target_fn(c: tuple[int, ...]) -> Any:
        return t[min(len(c), k)][c[-1] if c else s0]

    def draft_fn(c: tuple[int, ...]) -> Any:
        return d[min(len(c), k - 1)][c[-1] if c else s0]

    out: dict[tuple[int, ...], Any] = {}
    for e, w in r.round_law(target_fn, draft_fn, V, k).items():
        e = tuple(int(v) for v in e[:L])
        todo = {e: w}
        while todo and len(next(iter(todo))) < L:
            nxt: dict[tuple[int, ...], Any] = {}
            for s, ws in todo.items():
                p = target_fn(s)
                for y in range(V):
                    if p[y]:
                        nxt[s + (y,)] = nxt.get(s + (y,), 0) + ws * p[y]
            todo = nxt
        for s, ws in todo.items():
            out[s] = out.get(s, 0) + ws
    return out


def exact_output_tv(
    inst: Instance, rule: str | RoundLawRule, length: int | None = None, exact: bool = True
) -> Any:
    r"""TV of :func:`exact_output_law` from the target's law of the same tokens (a Fraction if ``exact``)."""
    L = inst.k + 1 if length is None else check_int(length, "length", 1)
    o = exact_output_law(inst, rule, L, exact)
    t, _ = _laws(inst, exact)
    total: Any = Fraction(0) if exact else 0.0
    for y in product(range(inst.vocab_size), repeat=L):
        w: Any = 1
        prev = inst.s0
        for j, v in enumerate(y):
            w = w * t[j][prev][v]
            prev = v
            if not w:
                break
        total += abs(o.get(y, 0) - w)
    return total / 2 if exact else float(total) / 2

r"""The exact round law of a rule that checks one draft at a time, from its step.

A draft-by-draft rule is known by its *step* (``Step``): given the target law ``p``, the draft
law ``q`` and the drafted token ``x`` at one position, accept ``x`` with probability ``b``, else
emit ``y`` with probability ``residual[y] / total`` and stop. :func:`stepwise_round_law` walks
one round of such a rule branch by branch (every drafted token, every accept/reject outcome,
every emitted token) and multiplies probabilities, so with :class:`fractions.Fraction` laws the
law is exact. :func:`ratio_step` is the ratio test against a reference law ``r`` (accept with
``min(1, p(x)/r(x))``, else emit from ``norm((p - r)_+)``): ``r = q`` is token verification's
step, ``r = 1_x`` point-mass proposals'. The single-path Verifiers' round laws
(:meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_law` of token verification and the
proposal modes) call :func:`stepwise_round_law` with their step.

``target_fn(prefix)`` and ``draft_fn(prefix)`` return the ``V`` next-token probabilities
after a context tuple.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._guards import check_int

__all__ = ["ratio_step", "stepwise_round_law"]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


def _argmax(q: Sequence[Any]) -> int:
    best = 0
    for v in range(1, len(q)):
        if q[v] > q[best]:
            best = v
    return best


#: ``step(p, q, x) -> (b, residual, total)``: accept the draft ``x`` with probability ``b``, else
#: emit ``y`` with probability ``residual[y] / total`` (:func:`stepwise_round_law`).
Step = Callable[[list[Any], list[Any], int], tuple[Any, Sequence[Any], Any]]


def ratio_step(p: Sequence[Any], r: Sequence[Any], x: int) -> tuple[Any, list[Any], Any]:
    r"""The step of the ratio test against a reference law ``r``: accept ``x`` with
    :math:`\min(1, p(x)/r(x))`, else emit from :math:`\mathrm{norm}((p - r)_+)`.

    ``r = q`` is token verification's step, ``r = 1_x`` point-mass proposals'. Returns
    ``(b, residual, total)`` (``Step``).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.stepwise import ratio_step
    >>> ratio_step([F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)], 0)
    (Fraction(1, 2), [0, Fraction(1, 3)], Fraction(1, 3))
    """
    b = min(1, p[x] / r[x])
    res = [max(p[y] - r[y], 0) for y in range(len(p))]
    return b, res, sum(res)


def stepwise_round_law(
    step: Step,
    target_fn: LawFn,
    draft_fn: LawFn,
    vocab_size: int,
    gamma: int,
    prefix: tuple[int, ...] = (),
    argmax: bool = False,
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of the tokens one round of a draft-by-draft rule emits, ``{emitted: probability}``.

    An emitted tuple holds the accepted drafts then one token (the correction, or the bonus
    token after ``gamma`` accepted drafts). Per drafted position ``i``, with ``p =
    target_fn(ctx)``, ``q = draft_fn(ctx)``: draft ``x ~ q`` (``argmax=True``: ``x = argmax
    q``, the smallest index on ties); ``b, residual, total = step(p, q, x)``; continue with
    probability ``b``, else emit ``y`` with probability ``residual[y] / total`` and stop. After
    ``gamma`` accepted drafts the bonus token ``y ~ p``.

    Parameters
    ----------
    step : callable
        ``step(p, q, x) -> (b, residual, total)`` (``Step``; e.g. :func:`ratio_step`).
    target_fn, draft_fn : callable
        ``fn(ctx) -> vocab_size`` next-token probabilities after a context tuple.
    vocab_size, gamma : int
        Vocabulary size and drafts in the round.
    prefix : tuple of int
        The context before the round.
    argmax : bool
        Greedy drafting (the rule's ``drafting == "argmax"``).

    Examples
    --------
    A lossy rule, accept with :math:`\min(1, 2 p(x)/q(x))` (lenient), is one step:

    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.stepwise import stepwise_round_law, ratio_step
    >>> p, q = (lambda c: [F(1, 4), F(3, 4)]), (lambda c: [F(1, 1), F(0, 1)])
    >>> def lenient_step(p, q, x):
    ...     _, res, tot = ratio_step(p, q, x)
    ...     return min(1, 2 * p[x] / q[x]), res, tot
    >>> sorted(stepwise_round_law(lenient_step, p, q, 2, 1).items())
    [((0, 0), Fraction(1, 8)), ((0, 1), Fraction(3, 8)), ((1,), Fraction(1, 2))]
    """
    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    out: dict[tuple[int, ...], Any] = {}

    def emit(key: tuple[int, ...], w: Any) -> None:
        if w:
            out[key] = out.get(key, 0) + w

    def walk(i: int, drafted: tuple[int, ...], prob: Any) -> None:
        p = list(target_fn(tuple(prefix) + drafted))
        if i == g:
            for y in range(V):
                emit(drafted + (y,), prob * p[y])
            return
        q = list(draft_fn(tuple(prefix) + drafted))
        proposals = [(_argmax(q), 1)] if argmax else [(x, q[x]) for x in range(V) if q[x]]
        for x, w in proposals:
            b, res, tot = step(p, q, x)
            if b:
                walk(i + 1, drafted + (x,), prob * w * b)
            if b != 1:
                for y in range(V):
                    emit(drafted + (y,), prob * w * (1 - b) * res[y] / tot)

    walk(0, (), 1)
    return out

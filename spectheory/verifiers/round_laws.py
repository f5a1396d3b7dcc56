r"""Exact laws of rounds and generations by literal enumeration (any number type; Fractions exact).

Independent of the vectorised rules and of the exact engines: a rule's round law
(:meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_law`) walks its algorithm branch by
branch and multiplies probabilities, so with :class:`fractions.Fraction` laws the results are
exact rationals -- e.g. Sun et al.'s binary example, target ``(1/3, 2/3)``, draft
``(2/3, 1/3)``, which floats cannot hold. This module composes round laws:

- :func:`exact_round_law`: one round of a rule (a registered name or a rule object):
  ``round_rule(rule).round_law(...)``; :func:`round_rule` resolves a rule and checks that it
  has a round law; :func:`proposal_round_law`: one round of a proposal mode by name
  (``"token"``, ``"point_mass"``, ``"sample_match"``, ``"argmax_onehot"``, ``"argmax_soft"``;
  :mod:`.proposal`);
- :func:`generation_law`: the law of the first tokens of a generation made of rounds of any
  rule given as ``round_law(prefix, k) -> {emitted tuple: probability}``; :func:`target_law`,
  the target's own law of the first tokens, to compare a generation law with;
- :func:`mean_accepted` and :func:`first_token_law`: a round law's expected accepted drafts
  and the law of its first token.

The round laws themselves are the rules': draft-by-draft rules through one step
(:func:`spectheory.verifiers.stepwise.stepwise_round_law`, :func:`~.stepwise.ratio_step`);
rules known by their round law only (not single-path Verifiers): GLS (:mod:`.gls`,
:data:`~.gls.GLS_K2`), GBV on ``K`` paths (:mod:`.gbv`), TLI (:mod:`.tli`, :data:`~.tli.TLI`)
and the binary-tree rules (:mod:`.spechub_rounds`).

``target_fn(prefix)`` and ``draft_fn(prefix)`` return the ``V`` next-token probabilities
after a context tuple.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.verifiers.round_laws import exact_round_law, mean_accepted, proposal_round_law
>>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
>>> [mean_accepted(proposal_round_law(m, p, q, 2, 2)) for m in ("token", "point_mass", "argmax_onehot")]
[Fraction(10, 9), Fraction(52, 81), Fraction(4, 9)]
>>> [mean_accepted(exact_round_law(v, p, q, 2, 2)) for v in ("token", "block", "hsd_listing")]
[Fraction(10, 9), Fraction(11, 9), Fraction(4, 3)]
>>> from spectheory.verifiers import get_verifier
>>> exact_round_law("block", p, q, 2, 2) == get_verifier("block").round_law(p, q, 2, 2)   # the rule's own method
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._deprecation import moved_names
from .._guards import check_int
from .base import get_verifier
from .round_law_rule import RoundLawRule

__all__ = [
    "PROPOSAL_MODES",
    "proposal_round_law",
    "exact_round_law",
    "round_rule",
    "generation_law",
    "target_law",
    "mean_accepted",
    "first_token_law",
]

#: Modes :func:`proposal_round_law` enumerates (the registered verifier names).
PROPOSAL_MODES = ("token", "point_mass", "sample_match", "argmax_onehot", "argmax_soft")

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


def proposal_round_law(
    mode: str, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of the tokens one round of the proposal mode ``mode`` emits, ``{emitted: probability}``.

    The registered rule's :meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_law`
    (:func:`~spectheory.verifiers.stepwise.stepwise_round_law` with its step), per drafted position ``i`` with
    ``p = target_fn(ctx)``, ``q = draft_fn(ctx)``:

    - draft ``x ~ q`` (``"argmax_*"``: ``x = argmax q``, smallest index on ties);
    - ``"sample_match"``: draw ``y ~ p``; ``y == x`` continues, else emit ``y`` and stop;
    - otherwise let ``r = 1_x`` (``"point_mass"``, ``"argmax_onehot"``) or ``r = q``
      (``"token"``, ``"argmax_soft"``); accept with ``min(1, p(x)/r(x))``, else emit from
      ``norm((p - r)_+)`` and stop.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.round_laws import proposal_round_law
    >>> law = proposal_round_law("argmax_soft", lambda c: [F(1, 3), F(2, 3)], lambda c: [F(2, 3), F(1, 3)], 2, 1)
    >>> sorted(law.items())
    [((0, 0), Fraction(1, 6)), ((0, 1), Fraction(1, 3)), ((1,), Fraction(1, 2))]
    """
    if mode not in PROPOSAL_MODES:
        raise ValueError(f"mode: expected one of {PROPOSAL_MODES}, got {mode!r}")
    return get_verifier(mode).round_law(target_fn, draft_fn, vocab_size, gamma, tuple(prefix))


def generation_law(
    round_law: Callable[[tuple[int, ...], int], dict[tuple[int, ...], Any]],
    gamma: int,
    length: int,
    horizon: int | None = None,
) -> dict[tuple[int, ...], Any]:
    r"""Law of the first ``length`` tokens of a generation made of rounds of one rule.

    Parameters
    ----------
    round_law : callable
        ``round_law(prefix, k) -> {emitted tuple: probability}``: one round of ``k`` drafts
        after ``prefix`` (e.g. ``lambda c, k: proposal_round_law(mode, p, q, V, k, c)``).
    gamma : int
        Draft length.
    length : int
        Tokens whose joint law is returned.
    horizon : int, optional
        ``None``: an unbounded generation (rounds of ``gamma`` drafts; the law of its first
        ``length`` tokens). An int ``T >= length``: the protocol of ``docs/protocol.md`` with
        ``k = min(gamma, T - n)`` drafts and no bonus token past ``T`` (compare with
        ``chain.sequence_law(T, gamma, verifier=...)`` at ``length = T``).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.round_laws import generation_law, proposal_round_law
    >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    >>> law = generation_law(lambda c, k: proposal_round_law("point_mass", p, q, 2, k, c), 2, 2)
    >>> law == {(0, 0): F(1, 9), (0, 1): F(2, 9), (1, 0): F(2, 9), (1, 1): F(4, 9)}   # lossless
    True
    """
    g = check_int(gamma, "gamma", 1)
    L = check_int(length, "length", 1)
    T = None if horizon is None else check_int(horizon, "horizon", L)
    out: dict[tuple[int, ...], Any] = {}
    # Prefixes shorter than L, by length: one round law per distinct prefix (a prefix is reached
    # by several splits into rounds; their probabilities are merged before it is expanded).
    level: list[dict[tuple[int, ...], Any]] = [{} for _ in range(L)]
    level[0][()] = 1
    for n in range(L):
        for prefix, prob in level[n].items():
            k = g if T is None else min(g, T - n)
            for emitted, w in round_law(prefix, k).items():
                if T is not None and n + len(emitted) > T:  # the bonus token past the horizon
                    emitted = emitted[: T - n]
                seq = prefix + emitted
                bucket = out if len(seq) >= L else level[len(seq)]
                key = seq[:L]
                bucket[key] = bucket.get(key, 0) + prob * w
    return out


def mean_accepted(law: dict[tuple[int, ...], Any]) -> Any:
    """Expected accepted drafts of one round: ``sum P(emitted) (len(emitted) - 1)``."""
    return sum((w * (len(e) - 1) for e, w in law.items()), 0)


def first_token_law(law: dict[tuple[int, ...], Any], vocab_size: int) -> list[Any]:
    """Law of the first emitted token of a round (or of a generation law)."""
    out: list[Any] = [0] * check_int(vocab_size, "vocab_size", 1)
    for e, w in law.items():
        out[e[0]] += w
    return out


def round_rule(rule: str | RoundLawRule) -> RoundLawRule:
    """The rule object of a registered name or a rule object, checked to have a round law.

    ValueError for an unknown name, an object that is not a
    :class:`~spectheory.verifiers.round_law_rule.RoundLawRule`, or a rule without a round law (naming it).

    Examples
    --------
    >>> from spectheory.verifiers.gls import GLS_K2
    >>> from spectheory.verifiers.round_laws import round_rule
    >>> round_rule("block").name, round_rule(GLS_K2) is GLS_K2
    ('block', True)
    >>> round_rule("traversal")
    Traceback (most recent call last):
    ...
    ValueError: rule 'traversal' (TraversalTree) has no literal round law: define its round_law(target_fn, draft_fn, vocab_size, gamma, prefix)
    """
    try:
        obj = get_verifier(rule) if isinstance(rule, str) else rule
    except ValueError as exc:
        raise ValueError(f"rule: {exc}") from None
    if not isinstance(obj, RoundLawRule):
        raise ValueError(f"rule: expected a registered name or a RoundLawRule, got {type(rule).__name__}")
    return obj.require_round_law()


def exact_round_law(
    rule: str | RoundLawRule,
    target_fn: LawFn,
    draft_fn: LawFn,
    vocab_size: int,
    gamma: int,
    prefix: tuple[int, ...] = (),
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of one round of ``rule`` (a registered name or a rule object), ``{emitted: probability}``.

    ``round_rule(rule).round_law(...)``: the rule's own literal enumeration
    (:meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_law`); with Fraction laws the result
    is exact (the module docstring has an example).
    """
    return round_rule(rule).round_law(target_fn, draft_fn, vocab_size, gamma, tuple(prefix))


def target_law(target_fn: LawFn, vocab_size: int, length: int) -> dict[tuple[int, ...], Any]:
    r"""The target's law of its first ``length`` tokens, ``{tokens: prod_i p(x_i | x_{<i})}``.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.round_laws import target_law
    >>> target_law(lambda c: [F(1, 3), F(2, 3)], 2, 2)[(1, 0)]
    Fraction(2, 9)
    """
    V = check_int(vocab_size, "vocab_size", 1)
    law: dict[tuple[int, ...], Any] = {(): 1}
    for _ in range(check_int(length, "length", 1)):
        nxt: dict[tuple[int, ...], Any] = {}
        for s, w in law.items():
            p = target_fn(s)
            nxt.update({s + (y,): w * p[y] for y in range(V) if p[y]})
        law = nxt
    return law


#: The rules and the step walker moved to one module each in 0.3.0; the old names warn until 0.4.0.
__getattr__ = moved_names(
    __name__,
    {
        "stepwise_round_law": ("spectheory.verifiers.stepwise", "stepwise_round_law"),
        "ratio_step": ("spectheory.verifiers.stepwise", "ratio_step"),
        "GLSDrafts": ("spectheory.verifiers.gls", "GLSDrafts"),
        "GLS_K2": ("spectheory.verifiers.gls", "GLS_K2"),
        "tli_round_law": ("spectheory.verifiers.tli", "tli_round_law"),
        "TLIRule": ("spectheory.verifiers.tli", "TLIRule"),
        "TLI": ("spectheory.verifiers.tli", "TLI"),
    },
    remove_in="0.4.0",
)

r"""Exact laws of single-path rules by literal enumeration (any number type; Fractions exact).

Independent of the vectorised rules and of the exact engines: each function walks a rule's
algorithm branch by branch (every drafted token, every accept/reject outcome, every emitted
token) and multiplies probabilities, so with :class:`fractions.Fraction` laws the results are
exact rationals -- e.g. Sun et al.'s binary example, target ``(1/3, 2/3)``, draft
``(2/3, 1/3)``, which floats cannot hold.

- :func:`stepwise_round_law`: one round of a rule that checks one draft at a time, from its
  step (:func:`ratio_step`: accept with ``min(1, p(x)/r(x))``, else emit from
  ``norm((p - r)_+)``); the single-path Verifiers' :meth:`~spectheory.verifiers.Verifier.round_law`
  of token verification and the proposal modes call it;
- :func:`proposal_round_law`: one round of a proposal mode by name (``"token"``,
  ``"point_mass"``, ``"sample_match"``, ``"argmax_onehot"``, ``"argmax_soft"``; :mod:`.proposal`);
- :func:`generation_law`: the law of the first tokens of a generation made of rounds of any
  rule given as ``round_law(prefix, k) -> {emitted tuple: probability}`` (any rule's
  :meth:`~spectheory.verifiers.base.RoundLawRule.round_law`);
- :func:`mean_accepted`: a round law's expected accepted drafts;
- :func:`exact_round_law`: one round of a rule (a registered name or a rule object):
  ``get_verifier(name).round_law(...)``; :func:`round_rule` resolves a rule and checks that it
  has a round law; :func:`target_law`, the target's own law of the first tokens, to compare a
  generation law with;
- rules known by their round law only (not single-path Verifiers): :class:`GLSDrafts`
  (:data:`GLS_K2`) and :class:`TLIRule` (:data:`TLI`); GBV on ``K`` paths and the binary-tree
  rules are in :mod:`.gbv` and :mod:`.spechub_rounds`.

``target_fn(prefix)`` and ``draft_fn(prefix)`` return the ``V`` next-token probabilities
after a context tuple.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.verifiers.round_laws import proposal_round_law, mean_accepted
>>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
>>> [mean_accepted(proposal_round_law(m, p, q, 2, 2)) for m in ("token", "point_mass", "argmax_onehot")]
[Fraction(10, 9), Fraction(52, 81), Fraction(4, 9)]
>>> from spectheory.verifiers import get_verifier
>>> mean_accepted(get_verifier("block").round_law(p, q, 2, 2))   # the rule's own method
Fraction(11, 9)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._guards import check_int
from .base import RoundLawRule, get_verifier
from .gls import gls_round_law

__all__ = [
    "PROPOSAL_MODES",
    "stepwise_round_law",
    "ratio_step",
    "proposal_round_law",
    "exact_round_law",
    "round_rule",
    "generation_law",
    "target_law",
    "mean_accepted",
    "first_token_law",
    "tli_round_law",
    "GLSDrafts",
    "GLS_K2",
    "TLIRule",
    "TLI",
]

#: Modes :func:`proposal_round_law` enumerates (the registered verifier names).
PROPOSAL_MODES = ("token", "point_mass", "sample_match", "argmax_onehot", "argmax_soft")

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
    >>> from spectheory.verifiers.round_laws import ratio_step
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
    >>> from spectheory.verifiers.round_laws import stepwise_round_law, ratio_step
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


def proposal_round_law(
    mode: str, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of the tokens one round of the proposal mode ``mode`` emits, ``{emitted: probability}``.

    The registered rule's :meth:`~spectheory.verifiers.base.RoundLawRule.round_law`
    (:func:`stepwise_round_law` with its step), per drafted position ``i`` with
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


def tli_round_law(
    target_fn: LawFn,
    draft_fn: LawFn,
    vocab_size: int,
    gamma: int,
    prefix: tuple[int, ...] = (),
    to_target: Sequence[int] | None = None,
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of one TLI round (a draft with its own vocabulary), ``{emitted: probability}``.

    ``draft_fn(prefix)`` returns the draft's ``V_d >= 1`` probabilities over its own vocabulary;
    ``to_target[v]`` is the target id of draft token ``v`` (``-1``: a draft-only token, e.g.
    a merged one); by default the first ``vocab_size`` draft tokens are the target's, in
    order, and the rest draft-only. The round, as Hugging Face's ``AssistantToTargetTranslator``
    runs it (``docs/vocabularies.md``): draft from ``q_I``, the draft restricted to the shared
    tokens and renormalised (:func:`spectheory.laws.vocabularies.tli_draft_law`), then token
    verification of ``q_I`` (:func:`proposal_round_law` ``"token"``). With one vocabulary
    (``V_d = V``) it is token verification.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.round_laws import tli_round_law, mean_accepted
    >>> p, qd = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(1, 2), F(1, 4), F(1, 4)])
    >>> mean_accepted(tli_round_law(p, qd, 2, 1))   # q_I = (2/3, 1/3): accepts 1/3 + 1/3
    Fraction(2, 3)
    """
    import numpy as np

    from ..laws.vocabularies import tli_draft_law

    V = check_int(vocab_size, "vocab_size", 1)

    def q_fn(c: tuple[int, ...]) -> list[Any]:
        d = list(draft_fn(c))
        m = list(to_target) if to_target is not None else [v if v < V else -1 for v in range(len(d))]
        return list(tli_draft_law(np.array(d, dtype=object), m, V))

    return get_verifier("token").round_law(target_fn, q_fn, V, gamma, tuple(prefix))


def round_rule(rule: str | RoundLawRule) -> RoundLawRule:
    """The rule object of a registered name or a rule object, checked to have a round law.

    ValueError for an unknown name, an object that is not a
    :class:`~spectheory.verifiers.base.RoundLawRule`, or a rule without a round law (naming it).

    Examples
    --------
    >>> from spectheory.verifiers.round_laws import GLS_K2, round_rule
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
    (:meth:`~spectheory.verifiers.base.RoundLawRule.round_law`); with Fraction laws the result
    is exact.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.round_laws import exact_round_law, mean_accepted
    >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    >>> [mean_accepted(exact_round_law(v, p, q, 2, 2)) for v in ("token", "block", "hsd_listing")]
    [Fraction(10, 9), Fraction(11, 9), Fraction(4, 3)]
    """
    return round_rule(rule).round_law(target_fn, draft_fn, vocab_size, gamma, tuple(prefix))


class GLSDrafts(RoundLawRule):
    r"""GLS (Gumbel-max list sampling, Algorithm 2 of Rowan, Phan & Khisti 2025) with ``K`` drafts
    of ``gamma`` tokens, as a rule with a round law (:func:`~spectheory.verifiers.gls.gls_round_law`).

    Not a single-path Verifier (it checks ``K`` draft sequences; its engines' round is
    ``BatchRound(K, gamma, reading="gls")``); named ``"gls_k{K}"``; lossless (Proposition 3).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.round_laws import GLS_K2, mean_accepted
    >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    >>> GLS_K2.name, mean_accepted(GLS_K2.round_law(p, q, 2, 1))
    ('gls_k2', Fraction(22, 27))
    """

    lossless = True

    def __init__(self, K: int) -> None:
        self.K = check_int(K, "K", 1)
        self.name = f"gls_k{self.K}"

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        return gls_round_law(target_fn, draft_fn, vocab_size, self.K, gamma, tuple(prefix))


class TLIRule(RoundLawRule):
    r"""TLI (Token-Level Intersection, a draft with its own vocabulary) as a rule with a round law
    (:func:`tli_round_law`): ``draft_fn`` may return more than ``vocab_size`` values, the
    draft-only tokens; ``to_target`` maps draft ids to target ids (default: the first
    ``vocab_size`` draft tokens are the target's). Named ``"tli"``; lossless.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.round_laws import TLI, mean_accepted
    >>> p, qd = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(1, 2), F(1, 4), F(1, 4)])
    >>> mean_accepted(TLI.round_law(p, qd, 2, 1))
    Fraction(2, 3)
    """

    name = "tli"
    lossless = True

    def __init__(self, to_target: Sequence[int] | None = None) -> None:
        self.to_target = None if to_target is None else [int(v) for v in to_target]

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        return tli_round_law(target_fn, draft_fn, vocab_size, gamma, tuple(prefix), self.to_target)


#: GLS with two drafts (the claimed-vs-exact table's ``"gls_k2"``).
GLS_K2 = GLSDrafts(2)
#: TLI with the default vocabulary map (the table's ``"tli"``).
TLI = TLIRule()


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

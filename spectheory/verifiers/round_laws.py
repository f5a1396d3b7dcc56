r"""Exact laws of single-path rules by literal enumeration (any number type; Fractions exact).

Independent of the vectorised rules and of the exact engines: each function walks a rule's
algorithm branch by branch (every drafted token, every accept/reject outcome, every emitted
token) and multiplies probabilities, so with :class:`fractions.Fraction` laws the results are
exact rationals -- e.g. Sun et al.'s binary example, target ``(1/3, 2/3)``, draft
``(2/3, 1/3)``, which floats cannot hold.

- :func:`proposal_round_law`: one round of a proposal mode (``"token"``, ``"point_mass"``,
  ``"sample_match"``, ``"argmax_onehot"``, ``"argmax_soft"``; :mod:`.proposal`);
- :func:`generation_law`: the law of the first tokens of a generation made of rounds of any
  rule given as ``round_law(prefix, k) -> {emitted tuple: probability}`` (this module's
  laws, :func:`spectheory.verifiers.block_exact.block_emission_law`, the HSD law of :mod:`.hsd`);
- :func:`mean_accepted`: a round law's expected accepted drafts;
- :func:`exact_round_law`: one round of a registered rule by name (:data:`ROUND_LAWS`: the
  proposal modes, ``"block"``, ``"hsd"``, ``"hsd_listing"``, ``"hsd_naive"``, ...), and :func:`target_law`, the
  target's own law of the first tokens, to compare a generation law with.

``target_fn(prefix)`` and ``draft_fn(prefix)`` return the ``V`` next-token probabilities
after a context tuple.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.verifiers.round_laws import proposal_round_law, mean_accepted
>>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
>>> [mean_accepted(proposal_round_law(m, p, q, 2, 2)) for m in ("token", "point_mass", "argmax_onehot")]
[Fraction(10, 9), Fraction(52, 81), Fraction(4, 9)]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._guards import check_int
from .block_exact import block_emission_law
from .gbv import gbv_round_law
from .gls import gls_round_law
from .hsd import hsd_round_law
from .hsd_naive import naive_hsd_round_law
from .spechub_rounds import rrs_binary_round_law, spechub_round_law

__all__ = [
    "PROPOSAL_MODES",
    "ROUND_LAWS",
    "proposal_round_law",
    "exact_round_law",
    "generation_law",
    "target_law",
    "mean_accepted",
    "first_token_law",
    "tli_round_law",
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


def proposal_round_law(
    mode: str, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of the tokens one round of ``mode`` emits, ``{emitted: probability}``.

    An emitted tuple holds the accepted drafts then one token (the correction, or the bonus
    token after ``gamma`` accepted drafts). The algorithm, per drafted position ``i`` with
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
        proposals = [(_argmax(q), 1)] if mode.startswith("argmax") else [(x, q[x]) for x in range(V) if q[x]]
        for x, w in proposals:
            if mode == "sample_match":
                for y in range(V):
                    if y == x:
                        if p[y]:
                            walk(i + 1, drafted + (x,), prob * w * p[y])
                    else:
                        emit(drafted + (y,), prob * w * p[y])
                continue
            r = [1 if v == x else 0 for v in range(V)] if mode in ("point_mass", "argmax_onehot") else q
            b = min(1, p[x] / r[x])
            if b:
                walk(i + 1, drafted + (x,), prob * w * b)
            if b != 1:
                res = [max(p[y] - r[y], 0) for y in range(V)]
                tot = sum(res)
                for y in range(V):
                    emit(drafted + (y,), prob * w * (1 - b) * res[y] / tot)

    walk(0, (), 1)
    return out


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

    return proposal_round_law("token", target_fn, q_fn, V, gamma, prefix)


RoundLawFn = Callable[[LawFn, LawFn, int, int, tuple[int, ...]], dict[tuple[int, ...], Any]]


def _proposal(mode: str) -> RoundLawFn:
    return lambda t, d, V, g, c: proposal_round_law(mode, t, d, V, g, c)


#: ``{name: fn(target_fn, draft_fn, vocab_size, gamma, prefix) -> round law}``: the rules with a
#: literal enumeration (each implemented once, in its own module): registered verifiers, and the
#: naive HSD (``"hsd_naive"``: :func:`~spectheory.verifiers.hsd_naive.naive_hsd_round_law`, several
#: target calls per round), the multi-draft rules at two drafts (``"gbv_k2"``: :func:`~spectheory.verifiers.gbv.gbv_round_law`,
#: ``"gls_k2"``: :func:`~spectheory.verifiers.gls.gls_round_law`), SpecHub and recursive rejection on
#: the depth-``gamma`` binary tree (``"spechub_binary"``, ``"rrs_binary"``:
#: :mod:`~spectheory.verifiers.spechub_rounds`), and ``"tli"``
#: (:func:`tli_round_law`: ``draft_fn`` may return more than ``V`` values, the draft-only tokens).
ROUND_LAWS: dict[str, RoundLawFn] = {
    **{mode: _proposal(mode) for mode in PROPOSAL_MODES},
    "block": block_emission_law,
    "hsd": lambda t, d, V, g, c: hsd_round_law(t, d, V, g, c, "paper"),
    "hsd_listing": lambda t, d, V, g, c: hsd_round_law(t, d, V, g, c, "listing"),
    "hsd_naive": naive_hsd_round_law,
    "gbv_k2": lambda t, d, V, g, c: gbv_round_law(t, d, V, 2, g, c),
    "gls_k2": lambda t, d, V, g, c: gls_round_law(t, d, V, 2, g, c),
    "spechub_binary": spechub_round_law,
    "rrs_binary": rrs_binary_round_law,
    "tli": lambda t, d, V, g, c: tli_round_law(t, d, V, g, c),
}


def exact_round_law(
    name: str, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of one round of the registered rule ``name``, ``{emitted: probability}``.

    Dispatches through :data:`ROUND_LAWS` to the rule's literal enumeration
    (:func:`proposal_round_law`, :func:`~spectheory.verifiers.block_exact.block_emission_law`,
    :func:`~spectheory.verifiers.hsd.hsd_round_law`); with Fraction laws the result is exact.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.round_laws import exact_round_law, mean_accepted
    >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    >>> [mean_accepted(exact_round_law(v, p, q, 2, 2)) for v in ("token", "block", "hsd_listing")]
    [Fraction(10, 9), Fraction(11, 9), Fraction(4, 3)]
    """
    if name not in ROUND_LAWS:
        raise ValueError(f"name: expected one of {sorted(ROUND_LAWS)}, got {name!r}")
    return ROUND_LAWS[name](target_fn, draft_fn, vocab_size, gamma, tuple(prefix))


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

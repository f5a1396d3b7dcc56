r"""TLI (Token-Level Intersection): a draft with its own vocabulary, as a rule with a round law.

The round, as Hugging Face's ``AssistantToTargetTranslator`` runs it (``docs/vocabularies.md``):
draft from ``q_I``, the draft restricted to the tokens it shares with the target and
renormalised (:func:`spectheory.laws.vocabularies.tli_draft_law`), then token verification of
``q_I``. :func:`tli_round_law` is the exact law of one round (Fractions: exact);
:class:`TLIRule` the rule (:data:`TLI`, the claimed-vs-exact table's ``"tli"``). With one
vocabulary it is token verification.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.verifiers.round_laws import mean_accepted
>>> from spectheory.verifiers.tli import TLI, tli_round_law
>>> p, qd = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(1, 2), F(1, 4), F(1, 4)])
>>> mean_accepted(tli_round_law(p, qd, 2, 1))   # q_I = (2/3, 1/3): accepts 1/3 + 1/3
Fraction(2, 3)
>>> TLI.round_law(p, qd, 2, 1) == tli_round_law(p, qd, 2, 1)
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._guards import check_int
from .base import get_verifier
from .round_law_rule import RoundLawRule

__all__ = ["tli_round_law", "TLIRule", "TLI"]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


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
    order, and the rest draft-only. The round (module docstring): token verification (the
    registered ``"token"`` rule's round law) of ``q_I``, the draft restricted to the shared
    tokens and renormalised.
    """
    import numpy as np

    from ..laws.vocabularies import tli_draft_law

    V = check_int(vocab_size, "vocab_size", 1)

    def q_fn(c: tuple[int, ...]) -> list[Any]:
        d = list(draft_fn(c))
        m = list(to_target) if to_target is not None else [v if v < V else -1 for v in range(len(d))]
        return list(tli_draft_law(np.array(d, dtype=object), m, V))

    return get_verifier("token").round_law(target_fn, q_fn, V, gamma, tuple(prefix))


class TLIRule(RoundLawRule):
    r"""TLI (Token-Level Intersection, a draft with its own vocabulary) as a rule with a round law
    (:func:`tli_round_law`): ``draft_fn`` may return more than ``vocab_size`` values, the
    draft-only tokens; ``to_target`` maps draft ids to target ids (default: the first
    ``vocab_size`` draft tokens are the target's). Named ``"tli"``; lossless (module docstring).
    """

    name = "tli"
    lossless = True

    def __init__(self, to_target: Sequence[int] | None = None) -> None:
        self.to_target = None if to_target is None else [int(v) for v in to_target]

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        return tli_round_law(target_fn, draft_fn, vocab_size, gamma, tuple(prefix), self.to_target)


#: TLI with the default vocabulary map (the table's ``"tli"``).
TLI = TLIRule()

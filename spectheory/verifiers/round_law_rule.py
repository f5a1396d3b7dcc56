r"""What the exact-law machinery asks of a rule, below the single-path :class:`~spectheory.verifiers.base.Verifier`:
:class:`RoundLawRule` (a name, ``lossless``, the literal law of one round, its statistics) and
:class:`KDraftsRule` (a lossless rule on ``K`` drafts known by its round-law function: GLS, GBV
on ``K`` paths). :class:`~spectheory.verifiers.base.Verifier` inherits :class:`RoundLawRule`.

Examples
--------
>>> from spectheory.verifiers.gls import GLSDrafts
>>> rule = GLSDrafts(2)
>>> isinstance(rule, KDraftsRule), rule.name, rule.lossless
(True, 'gls_k2', True)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._guards import check_int

__all__ = ["RoundLawRule", "KDraftsRule", "LawFn"]

LawFn = Callable[[tuple[int, ...]], Any]


class RoundLawRule:
    r"""What the exact-law machinery asks of a rule: its name, whether it is lossless, and the
    literal law of one round (:meth:`round_law`).

    :class:`Verifier` inherits it; a rule that is not a single-path Verifier (a multi-draft rule
    on a fixed draft shape, e.g. :data:`spectheory.verifiers.gbv.GBV_K2`) subclasses it directly.
    The claimed-vs-exact table (:mod:`spectheory.analysis.verdicts`) and the conformance kit's
    exact loss (:mod:`spectheory.testing.exact_loss`) call these methods on the object; a rule
    without a round law says so through ``has_round_law``, and :meth:`require_round_law`
    raises a ValueError naming it.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers import get_verifier
    >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    >>> law = get_verifier("token").round_law(p, q, 2, 1)   # {accepted drafts + one token: P}
    >>> law[(1,)], law[(0, 1)]      # draft 0 rejected (w.p. 2/3 * 1/2), then token 1; accepted, then 1
    (Fraction(1, 3), Fraction(2, 9))
    >>> get_verifier("tree_rrs").has_round_law
    False
    """

    #: Registry key and the label results carry.
    name: str = "rule"
    #: Whether the emitted tokens follow the target's law exactly.
    lossless: bool = True
    #: Whether one round may call the target more than once (naive HSD's forward passes): its
    #: round law is then not a round of the one-call protocol (``docs/protocol.md``), and
    #: :meth:`round_stats` counts its calls.
    multi_call: bool = False

    @property
    def has_round_law(self) -> bool:
        """Whether the rule enumerates one round's law (it overrides :meth:`round_law`)."""
        return type(self).round_law is not RoundLawRule.round_law

    def require_round_law(self) -> RoundLawRule:
        """``self`` if it has a round law, else a ValueError naming the rule.

        Examples
        --------
        >>> from spectheory.verifiers import get_verifier
        >>> get_verifier("tree_rrs").require_round_law()
        Traceback (most recent call last):
        ...
        ValueError: rule 'tree_rrs' (RecursiveRejectionTree) has no literal round law: define its round_law(target_fn, draft_fn, vocab_size, gamma, prefix)
        """
        if not self.has_round_law:
            raise ValueError(self._no_round_law())
        return self

    def _no_round_law(self) -> str:
        return (
            f"rule {self.name!r} ({type(self).__name__}) has no literal round law: "
            "define its round_law(target_fn, draft_fn, vocab_size, gamma, prefix)"
        )

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        r"""Exact law of the tokens one round of ``gamma`` drafts after ``prefix`` emits.

        ``{emitted tuple: probability}``: the accepted drafts then one token (the correction,
        or the bonus token after ``gamma`` accepted drafts). ``target_fn(ctx)`` and
        ``draft_fn(ctx)`` return the ``vocab_size`` next-token probabilities after a context
        tuple; with :class:`fractions.Fraction` laws the result is exact. The enumeration walks
        the rule's algorithm branch by branch, independently of its vectorised rule and of the
        exact engines (:func:`spectheory.verifiers.stepwise.stepwise_round_law` walks a rule that
        checks one draft at a time from its step).
        The default raises the ValueError of :meth:`require_round_law`.
        """
        raise ValueError(self._no_round_law())

    def round_stats(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[str, Any]:
        r"""Expected ``accepted`` drafts, ``tokens`` emitted and ``target_calls`` of one round.

        For a one-call rule (the default) from :meth:`round_law`: ``accepted`` :math:`=
        \sum_e P(e) (|e| - 1)`, ``tokens = accepted + 1``, ``target_calls = 1``. A
        ``multi_call`` rule overrides it (naive HSD counts its forward passes).

        Examples
        --------
        >>> from fractions import Fraction as F
        >>> from spectheory.verifiers import get_verifier
        >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
        >>> get_verifier("token").round_stats(p, q, 2, 2)
        {'accepted': Fraction(10, 9), 'tokens': Fraction(19, 9), 'target_calls': 1}
        """
        if self.multi_call:
            raise NotImplementedError(
                f"rule {self.name!r} calls the target more than once a round: define its round_stats"
            )
        law = self.round_law(target_fn, draft_fn, vocab_size, gamma, prefix)
        acc = sum((w * (len(e) - 1) for e, w in law.items()), 0)
        return {"accepted": acc, "tokens": acc + 1, "target_calls": 1}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, lossless={self.lossless})"


class KDraftsRule(RoundLawRule):
    r"""A lossless rule on ``K`` drafts of ``gamma`` tokens, known by its round-law function.

    Not a single-path Verifier: a subclass sets ``law``, ``law(target_fn, draft_fn, vocab_size,
    K, gamma, prefix) -> {emitted: probability}``, and the name's ``stem``; an instance is named
    ``f"{stem}{K}"``. GLS (:class:`spectheory.verifiers.gls.GLSDrafts`) and GBV on ``K`` paths
    (:class:`spectheory.verifiers.gbv.GBVPaths`) are two.

    Parameters
    ----------
    K : int
        The number of drafts, ``>= 1``.
    """

    lossless = True
    #: The name before ``K`` (``"gls_k"``: ``"gls_k2"``).
    stem: str = "k"
    #: ``law(target_fn, draft_fn, vocab_size, K, gamma, prefix)``, the exact round law.
    law: Callable[..., dict[tuple[int, ...], Any]]

    def __init__(self, K: int) -> None:
        self.K = check_int(K, "K", 1)
        self.name = f"{self.stem}{self.K}"

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        """``law`` with this rule's ``K`` (:meth:`RoundLawRule.round_law`)."""
        return type(self).law(target_fn, draft_fn, vocab_size, self.K, gamma, tuple(prefix))

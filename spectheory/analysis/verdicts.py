r"""Claimed vs exact: each rule's published or shipped claim against its exact law.

Notation: p = target, q = draft. For a rule with a literal enumeration (its
:meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_law`: a registered Verifier, or a rule object
such as :data:`~spectheory.verifiers.gbv.GBV_K2`) and an instance ``(p, q, V, gamma)`` given as
context functions over Fractions, the exact quantities are

- ``mean_accepted``: the expected accepted drafts of the first round (after the empty
  context), :math:`\sum_e P(e) (|e| - 1)` -- for a rule that calls the target more than once
  per round (its ``multi_call`` flag: naive HSD), the drafted tokens it emits (its
  :meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_stats`);
- ``tokens`` and ``target_calls``: the expected tokens the first round emits and the target
  calls it makes (1 for every single-call rule), so ``tokens / target_calls`` compares
  multi-call rules with the others;
- ``tv``: the total variation between the law of the first ``L`` output tokens of a
  generation made of the rule's rounds
  (``generation_law`` of :mod:`spectheory.verifiers.round_laws`) and the target's law of ``L``
  tokens, :math:`\tfrac12 \sum_{x_{1:L}} |P_{\text{rule}}(x_{1:L}) - p(x_{1:L})|`; ``L = gamma + 1``
  by default (every token one round can emit). ``tv = 0`` exactly for a lossless rule.

:data:`RULE_CLAIMS` records what each rule's paper or engine claims: lossless or not, and
optionally an efficiency claim against another rule (``accepts more than block verification``).
:func:`settle_claims` computes the exact values on every instance and the verdict; the proofs
of the verdicts are in ``docs/sequence_rules.md`` and ``docs/proposal_modes.md``.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.analysis.verdicts import RULE_CLAIMS, RuleClaim, settle_claims
>>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
>>> rows = settle_claims([("sun", p, q, 2, 2)], [RuleClaim("block", "Sun et al.", True), RULE_CLAIMS[3]])
>>> [(r["rule"], str(r["instances"][0]["mean_accepted"]), str(r["instances"][0]["tv"])) for r in rows]
[('block', '11/9', '0'), ('hsd_listing', '4/3', '1/9')]
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from .._guards import check_int
from ..verifiers.block import BLOCK
from ..verifiers.gbv import GBV_K2
from ..verifiers.gls import GLS_K2
from ..verifiers.hsd import HSD, HSD_LISTING
from ..verifiers.hsd_naive_chain import HSD_NAIVE
from ..verifiers.proposal import ARGMAX_ONEHOT, ARGMAX_SOFT, POINT_MASS, SAMPLE_MATCH
from ..verifiers.round_law_rule import RoundLawRule
from ..verifiers.round_laws import generation_law, round_rule, target_law
from ..verifiers.spechub_rounds import RRS_BINARY, SPECHUB_BINARY
from ..verifiers.tli import TLI
from ..verifiers.token import TOKEN

__all__ = [
    "RuleClaim",
    "RULE_CLAIMS",
    "law_total_variation",
    "rule_exact",
    "protocol_accepted",
    "settle_claims",
    "random_fraction_table",
    "table_law_fn",
]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]
#: ``(label, target_fn, draft_fn, vocab_size, gamma)``.
Instance = tuple[str, LawFn, LawFn, int, int]
#: A rule object with a round law, or a registered verifier's name.
Rule = RoundLawRule | str


@dataclass(frozen=True)
class RuleClaim:
    """What a rule's paper or engine claims.

    Attributes
    ----------
    rule : RoundLawRule or str
        The rule: an object with a round law (a Verifier, or a multi-draft rule at two drafts:
        :data:`~spectheory.verifiers.gbv.GBV_K2`, :data:`~spectheory.verifiers.gls.GLS_K2`)
        or a registered verifier's name; ``name`` is its name.
    source : str
        Where the rule and the claim come from.
    claimed_lossless : bool
        Whether the source presents the rule as reproducing the target's law.
    versus : RoundLawRule, str or None
        The rule an efficiency claim compares with (``None``: no efficiency claim).
    relation : str
        ``">="``: accepts at least as many drafts as ``versus`` (first-round expectation) on
        every instance; ``">"``: that, and strictly more on at least one instance.
    """

    rule: Rule
    source: str
    claimed_lossless: bool
    versus: Rule | None = None
    relation: str = ">="

    def __post_init__(self) -> None:
        if self.relation not in (">", ">="):
            raise ValueError(f"relation: expected '>' or '>=', got {self.relation!r}")

    @property
    def name(self) -> str:
        """The rule's name (the label of its row)."""
        return _name(self.rule)

    def claim_text(self) -> str:
        """The claim in words, e.g. ``'lossless; accepts > block'``."""
        text = "lossless" if self.claimed_lossless else "not lossless"
        return text + (f"; accepts {self.relation} {_name(self.versus)}" if self.versus is not None else "")


def _name(rule: Rule) -> str:
    return rule if isinstance(rule, str) else rule.name


#: The claims, one per rule with a literal enumeration (rule objects: each computes its own round law).
RULE_CLAIMS: tuple[RuleClaim, ...] = (
    RuleClaim(
        TOKEN,
        "Leviathan et al., ICML 2023, arXiv 2211.17192: Algorithm 1; Chen et al. 2023, arXiv 2302.01318: "
        "Algorithm 2 (speculative sampling)",
        True,
    ),
    RuleClaim(
        BLOCK,
        "Sun et al. 2024, arXiv 2403.10444: Algorithm 2 (block verification; lossless, Theorem 1; optimal)",
        True,
        TOKEN,
    ),
    RuleClaim(
        HSD,
        "Zhou et al., ICLR 2026, arXiv 2601.05724: Algorithm 2, Eqs. 16-20 as read here (reported above block)",
        True,
        BLOCK,
        ">",
    ),
    RuleClaim(
        HSD_LISTING,
        "Zhou et al., ICLR 2026: Listing 2 (Appendix F); the authors' repository "
        "ZhouYuxuanYX/Hierarchical-Speculative-Decoding, algorithm.py, _speculative_sampling",
        True,
        BLOCK,
        ">",
    ),
    RuleClaim(
        HSD_NAIVE,
        "Zhou et al., ICLR 2026: naive HSD as the authors' code runs it (ZhouYuxuanYX/Hierarchical-"
        "Speculative-Decoding @ b8575e2, transformers/generation/utils.py: _speculative_sampling with "
        "backward=True, clever=False, then _forward_sampling; several target calls per round)",
        True,
    ),
    RuleClaim(POINT_MASS, "engines that do not pass the draft's probabilities (q := 1_x)", True),
    RuleClaim(SAMPLE_MATCH, "engines' exact-match verification (accept iff y ~ p equals x)", True),
    RuleClaim(
        ARGMAX_ONEHOT,
        "greedy drafting, one-hot q; code comments: 'maximises exact-match acceptance'",
        True,
        SAMPLE_MATCH,
        ">=",
    ),
    RuleClaim(ARGMAX_SOFT, "greedy drafting verified with the draft model's soft q", True),
    RuleClaim(
        GBV_K2,
        "Thomas & Pal 2026, arXiv 2602.16961: GBV on K = 2 i.i.d. paths (authors' verifier.py, "
        "gbv_verify; reported +30% block efficiency over block)",
        True,
        BLOCK,
        ">",
    ),
    RuleClaim(
        GLS_K2,
        "Rowan, Phan & Khisti, NeurIPS 2025, arXiv 2506.05632: Algorithm 2 (GLS), K = 2 drafts; Prop. 3",
        True,
    ),
    RuleClaim(
        SPECHUB_BINARY,
        "Sun, Zhou, Chen & Sun, EMNLP 2024, arXiv 2411.05289: SpecHub on the depth-gamma binary tree "
        "(authors' MasterGodzilla/Speculative_decoding_OT @ 7d592b7, EAGLE cnets.py sample and utils.py "
        "evaluate_posterior, mode 'spechub'; reported 0.05-0.27 more tokens per step than RRS)",
        True,
        RRS_BINARY,
        ">",
    ),
    RuleClaim(
        TLI,
        "Timor et al., ICML 2025, arXiv 2502.05202: Token-Level Intersection as shipped in HF "
        "transformers (AssistantToTargetTranslator; the paper's listing not available here)",
        True,
    ),
)


def law_total_variation(a: dict[tuple[int, ...], Any], b: dict[tuple[int, ...], Any]) -> Any:
    r"""Total variation :math:`\tfrac12 \sum_s |a(s) - b(s)|` of two laws given as dicts.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.analysis.verdicts import law_total_variation
    >>> law_total_variation({(0,): F(1, 3), (1,): F(2, 3)}, {(0,): F(1, 2), (1,): F(1, 2)})
    Fraction(1, 6)
    """
    keys = set(a) | set(b)
    return sum((abs(a.get(s, 0) - b.get(s, 0)) for s in keys), 0) / 2


def rule_exact(
    rule: Rule, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, length: int | None = None
) -> dict[str, Any]:
    r"""The exact ``mean_accepted``, ``tokens``, ``target_calls`` (first round) and ``tv`` (first ``length`` tokens) of one rule.

    ``rule``: a rule object or a registered name (:func:`~spectheory.verifiers.round_laws.round_rule`).
    ``length`` defaults to ``gamma + 1``. With Fraction laws all are exact rationals.
    ``mean_accepted``, ``tokens`` and ``target_calls`` are the rule's
    :meth:`~spectheory.verifiers.round_law_rule.RoundLawRule.round_stats` (a one-call rule: ``tokens =
    mean_accepted + 1``, ``target_calls = 1``; naive HSD: the drafted tokens it emits and its
    forward passes).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.analysis.verdicts import rule_exact
    >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    >>> rule_exact("argmax_soft", p, q, 2, 1, length=1)["tv"]   # the first token is a fair coin: TV 1/6
    Fraction(1, 6)
    >>> r = rule_exact("hsd_naive", p, q, 2, 3)
    >>> r["tokens"], r["target_calls"], r["tv"] > 0
    (Fraction(2686, 729), Fraction(47, 27), True)
    """
    g = check_int(gamma, "gamma", 1)
    L = g + 1 if length is None else check_int(length, "length", 1)
    V = check_int(vocab_size, "vocab_size", 1)
    r = round_rule(rule)
    law = generation_law(lambda c, k: r.round_law(target_fn, draft_fn, V, k, c), g, L)
    stats = r.round_stats(target_fn, draft_fn, V, g, ())
    return {
        "mean_accepted": stats["accepted"],
        "tokens": stats["tokens"],
        "target_calls": stats["target_calls"],
        "tv": law_total_variation(law, target_law(target_fn, V, L)),
    }


def protocol_accepted(
    rule: Rule, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, horizon: int
) -> Any:
    r"""Exact expected accepted drafts of a ``horizon``-token generation of ``rule`` (an object or a name).

    The protocol of ``docs/protocol.md`` (``k = min(gamma, T - n)`` drafts per round, no token
    past ``T``), by enumerating every round's outcomes; the exact engine's
    ``chain.protocol(T, gamma, verifier=rule).accepted`` computes the same number in floats. A
    rule whose round calls the target more than once (``multi_call``) is refused.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.analysis.verdicts import protocol_accepted
    >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    >>> protocol_accepted("token", p, q, 2, 1, 2)   # two rounds, the second one only when the first rejected
    Fraction(8, 9)
    """
    r = round_rule(rule)
    if r.multi_call:
        raise ValueError(
            f"rule: {r.name!r} calls the target more than once per round, not a round of the protocol"
        )
    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    T = check_int(horizon, "horizon", 1)
    total: Any = 0
    # Prefixes by length, merged: one round law per distinct prefix (reached by several splits).
    level: list[dict[tuple[int, ...], Any]] = [{} for _ in range(T)]
    level[0][()] = 1
    for n in range(T):
        for prefix, prob in level[n].items():
            for emitted, w in r.round_law(target_fn, draft_fn, V, min(g, T - n), prefix).items():
                total += prob * w * (len(emitted) - 1)
                m = n + len(emitted)
                if m < T:
                    level[m][prefix + emitted] = level[m].get(prefix + emitted, 0) + prob * w
    return total


def _verdict(claim: RuleClaim, cells: list[dict[str, Any]], versus: list[dict[str, Any]] | None) -> dict:
    lossless = all(c["tv"] == 0 for c in cells)
    if claim.claimed_lossless:
        text = "lossless, as claimed" if lossless else "biased (claimed lossless)"
    else:
        text = "biased, as declared" if not lossless else "lossless (not claimed)"
    out: dict[str, Any] = {"lossless": lossless, "lossless_claim_holds": lossless == claim.claimed_lossless}
    if claim.versus is not None and versus is not None:
        ours = [c["mean_accepted"] for c in cells]
        theirs = [c["mean_accepted"] for c in versus]
        holds = all(a >= b for a, b in zip(ours, theirs)) and (
            claim.relation == ">=" or any(a > b for a, b in zip(ours, theirs))
        )
        if holds:
            text += f"; accepts {claim.relation} {_name(claim.versus)}: holds"
        elif ours == theirs:
            text += f"; accepts exactly as {_name(claim.versus)} (claimed {claim.relation})"
        else:
            n_bad = sum(a < b for a, b in zip(ours, theirs))
            text += f"; accepts {claim.relation} {_name(claim.versus)}: false (less on {n_bad} of {len(ours)} instances)"
        out["efficiency_claim_holds"] = holds
    out["verdict"] = text
    return out


def settle_claims(
    instances: Iterable[Instance], claims: Iterable[RuleClaim] = RULE_CLAIMS
) -> list[dict[str, Any]]:
    r"""Every claim against the exact values on every instance, with the verdict.

    Parameters
    ----------
    instances : iterable of (label, target_fn, draft_fn, vocab_size, gamma)
        Context functions ``fn(prefix) -> V probabilities`` (Fractions for exact values).
    claims : iterable of RuleClaim
        Default :data:`RULE_CLAIMS`. An efficiency claim compares, on every instance, the
        rule's ``mean_accepted`` with that of its ``versus`` rule (any rule with a round law).

    Returns
    -------
    list of dict
        Per claim: ``rule``, ``source``, ``claim`` (text), ``claimed_lossless``, ``instances``
        (per instance ``label``, ``gamma``, ``mean_accepted``, ``tv``), ``lossless``,
        ``lossless_claim_holds``, ``efficiency_claim_holds`` (when there is an efficiency
        claim) and ``verdict`` (text).
    """
    insts = list(instances)
    claims = list(claims)
    cache: dict[RoundLawRule, list[dict[str, Any]]] = {}

    def cells(rule: Rule) -> list[dict[str, Any]]:
        r = round_rule(rule)
        if r not in cache:
            cache[r] = [{"label": lab, "gamma": g, **rule_exact(r, t, d, V, g)} for lab, t, d, V, g in insts]
        return cache[r]

    rows = []
    for claim in claims:
        mine = cells(claim.rule)
        versus = cells(claim.versus) if claim.versus is not None else None
        rows.append(
            {
                "rule": claim.name,
                "source": claim.source,
                "claim": claim.claim_text(),
                "claimed_lossless": claim.claimed_lossless,
                "instances": mine,
                **_verdict(claim, mine, versus),
            }
        )
    return rows


def random_fraction_table(
    rng: np.random.Generator | int | None, vocab_size: int, max_weight: int = 4
) -> list[list[Fraction]]:
    r"""A random ``V x V`` row-stochastic table of small rationals (a first-order chain's kernel).

    Row ``s`` is the law of the next token after token ``s``: integer weights in
    ``0..max_weight`` (some exact zeros), each row normalised; a zero row becomes ``1_0``.

    Examples
    --------
    >>> from spectheory.analysis.verdicts import random_fraction_table
    >>> tab = random_fraction_table(0, 3)
    >>> [sum(row) for row in tab]
    [Fraction(1, 1), Fraction(1, 1), Fraction(1, 1)]
    """
    gen = np.random.default_rng(rng)
    V = check_int(vocab_size, "vocab_size", 1)
    w = gen.integers(0, check_int(max_weight, "max_weight", 1) + 1, size=(V, V))
    w[w.sum(1) == 0, 0] = 1
    return [[Fraction(int(x), int(r.sum())) for x in r] for r in w]


def table_law_fn(table: Sequence[Sequence[Any]]) -> LawFn:
    """Context function of a first-order chain: the row of the last token (row 0 at the start).

    Matches ``DecodingChain(target, draft, initial=1_0)`` (states are the last token).

    Examples
    --------
    >>> from spectheory.analysis.verdicts import table_law_fn
    >>> fn = table_law_fn([[1, 0], [0.5, 0.5]])
    >>> fn(()), fn((0, 1))
    ([1, 0], [0.5, 0.5])
    """
    rows = [list(r) for r in table]
    return lambda c: rows[c[-1]] if c else rows[0]

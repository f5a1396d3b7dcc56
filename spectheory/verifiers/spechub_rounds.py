r"""Literal round laws on the full binary draft tree: SpecHub, and recursive rejection beside it.

Notation: p = target, q = draft. The authors of SpecHub (Sun, Zhou, Chen & Sun, EMNLP 2024,
arXiv 2411.05289; MasterGodzilla/Speculative_decoding_OT @ 7d592b7) run it and recursive
rejection (``RRS``, i.i.d. children) on full binary trees (``binary2`` ... ``binary5`` of
``EAGLE/eagle/model/choices.py``), and claim more accepted tokens per step than RRS. Both rules
are node-local: at a node the rule emits ``y`` and either continues below the child holding
``y`` (accepted) or ends the round with it (a correction), and the subtree under an accepted
child is drafted afresh from its token. So one round on the depth-``gamma`` binary tree is the
walk: at depth ``< gamma`` a node's law ``(accept [V], correction [V])``, ``accept + correction
= p``; at depth ``gamma`` a bonus token ``y ~ p``.

- SpecHub's node law is its transport plan (:func:`~spectheory.verifiers.spechub.spechub_plan`):
  ``accept(y) = sum_pairs pi(pair, y) [y in pair]``;
- RRS with two i.i.d. children: ``accept = min(p, q) + (1 - beta) min(r, q)``, with ``beta =
  sum min(p, q)`` and ``r = norm((p - q)_+)``.

These enumerations are independent of the vectorised tree rule
(:mod:`spectheory.verifiers.spechub_tree`) and of the tree engines (tested against both), and
with Fractions they are exact. :class:`BinaryTreeRule` is such a rule (a node law) as an object
with that round law: :data:`SPECHUB_BINARY` and :data:`RRS_BINARY` (``"spechub_binary"``,
``"rrs_binary"`` of the claimed-vs-exact table, :mod:`spectheory.analysis.verdicts`).

Examples
--------
Sun et al.'s binary example: each rule's ``(accept, correction)`` at one node, then the
accepted drafts of one round on the depth-2 binary tree.

>>> from fractions import Fraction as F
>>> from spectheory.verifiers.round_laws import mean_accepted
>>> from spectheory.verifiers.spechub_rounds import RRS_BINARY, SPECHUB_BINARY, spechub_round_law
>>> p, q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]
>>> [[[str(v) for v in law] for law in r.node_law(p, q)] for r in (SPECHUB_BINARY, RRS_BINARY)]
[[['1/3', '2/3'], ['0', '0']], [['1/3', '4/9'], ['0', '2/9']]]
>>> p_fn, q_fn = (lambda c: p), (lambda c: q)
>>> [str(mean_accepted(r.round_law(p_fn, q_fn, 2, 2))) for r in (SPECHUB_BINARY, RRS_BINARY)]
['2', '112/81']
>>> spechub_round_law(p_fn, q_fn, 2, 2) == SPECHUB_BINARY.round_law(p_fn, q_fn, 2, 2)
True
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._guards import check_int
from .round_law_rule import RoundLawRule
from .spechub import spechub_plan

__all__ = [
    "spechub_node_law",
    "rrs_node_law",
    "spechub_round_law",
    "rrs_binary_round_law",
    "BinaryTreeRule",
    "SPECHUB_BINARY",
    "RRS_BINARY",
]

NodeLaw = Callable[[Sequence[Any], Sequence[Any]], tuple[list, list]]


def spechub_node_law(target: Sequence[Any], draft: Sequence[Any]) -> tuple[list, list]:
    """``(accept [V], correction [V])`` of SpecHub at one node, from its plan (Fractions exact;
    the module docstring has an example)."""
    tup, _, plan = spechub_plan(list(target), list(draft))
    V = plan.shape[1]
    zero = 0 * plan[0, 0]
    acc, cor = [zero] * V, [zero] * V
    for n in range(tup.shape[0]):
        for y in range(V):
            if y in (int(tup[n, 0]), int(tup[n, 1])):
                acc[y] += plan[n, y]
            else:
                cor[y] += plan[n, y]
    return acc, cor


def rrs_node_law(target: Sequence[Any], draft: Sequence[Any]) -> tuple[list, list]:
    """``(accept [V], correction [V])`` of recursive rejection with two i.i.d. children (the
    module docstring has an example)."""
    p, q = list(target), list(draft)
    V = len(p)
    zero = 0 * p[0]
    acc, r = [zero] * V, list(p)
    reach = zero + 1
    for _ in range(2):
        m = [min(r[y], q[y]) for y in range(V)]
        beta = sum(m, zero)
        acc = [acc[y] + reach * m[y] for y in range(V)]
        ex = [max(r[y] - q[y], zero) for y in range(V)]
        z = sum(ex, zero)
        if z != 0:
            r = [v / z for v in ex]
        reach = reach * (1 - beta)
    cor = [reach * r[y] for y in range(V)]
    return acc, cor


def _binary_round_law(
    node_law: NodeLaw, target_fn: Any, draft_fn: Any, vocab_size: int, gamma: int, prefix: tuple[int, ...]
) -> dict[tuple[int, ...], Any]:
    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    out: dict[tuple[int, ...], Any] = {}

    def walk(s: tuple[int, ...], pr: Any) -> None:
        ctx = prefix + s
        p = list(target_fn(ctx))
        if len(p) != V:
            raise ValueError(f"target_fn: expected {V} probabilities, got {len(p)}")
        if len(s) == g:  # a leaf: the bonus token
            for y in range(V):
                if p[y] != 0:
                    out[s + (y,)] = out.get(s + (y,), 0) + pr * p[y]
            return
        acc, cor = node_law(p, list(draft_fn(ctx))[:V])
        for y in range(V):
            if cor[y] != 0:
                out[s + (y,)] = out.get(s + (y,), 0) + pr * cor[y]
            if acc[y] != 0:
                walk(s + (y,), pr * acc[y])

    walk((), 1)
    return out


def spechub_round_law(
    target_fn: Any, draft_fn: Any, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of the tokens one SpecHub round on the depth-``gamma`` binary tree emits.

    ``{emitted: probability}``, the shape of
    :func:`spectheory.verifiers.round_laws.proposal_round_law` (``target_fn(ctx)``,
    ``draft_fn(ctx)``: next-token laws after a context tuple; Fractions: exact). The tree is
    ``DraftTree.from_branching([2] * gamma)`` (``2 + 4 + ... + 2^gamma`` drafted tokens), the
    authors' ``binary{gamma + 1}``.
    """
    return _binary_round_law(spechub_node_law, target_fn, draft_fn, vocab_size, gamma, tuple(prefix))


def rrs_binary_round_law(
    target_fn: Any, draft_fn: Any, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of one round of recursive rejection (i.i.d. children, ``tree_rrs``) on the
    depth-``gamma`` binary tree; as :func:`spechub_round_law`."""
    return _binary_round_law(rrs_node_law, target_fn, draft_fn, vocab_size, gamma, tuple(prefix))


class BinaryTreeRule(RoundLawRule):
    r"""A node-local rule on the depth-``gamma`` binary draft tree as a rule with a round law.

    Parameters
    ----------
    name : str
        Its label (``"spechub_binary"``, ``"rrs_binary"``).
    node_law : callable
        ``node_law(p, q) -> (accept [V], correction [V])`` (:func:`spechub_node_law`,
        :func:`rrs_node_law`); the round law walks it (module docstring).

    Not a single-path Verifier: its engines' round is
    ``TreeRound(DraftTree.from_branching([2] * gamma), verifier)``. Lossless (the module
    docstring has an example).
    """

    lossless = True

    def __init__(self, name: str, node_law: NodeLaw) -> None:
        self.name = name
        self.node_law = node_law

    def round_law(
        self, target_fn: Any, draft_fn: Any, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        return _binary_round_law(self.node_law, target_fn, draft_fn, vocab_size, gamma, tuple(prefix))


#: SpecHub on the binary tree (the claimed-vs-exact table's ``"spechub_binary"``).
SPECHUB_BINARY = BinaryTreeRule("spechub_binary", spechub_node_law)
#: Recursive rejection (i.i.d. children) on the binary tree (``"rrs_binary"``).
RRS_BINARY = BinaryTreeRule("rrs_binary", rrs_node_law)

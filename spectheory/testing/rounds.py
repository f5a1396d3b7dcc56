"""The conformance kit on a round object: the one ``st.simulate`` and the decoder take.

:func:`check_round` turns its argument into a :class:`~spectheory.rounds.Round`
(:func:`~spectheory.rounds.as_round`) and runs the kit that checks the round's verifier:

- :class:`~spectheory.rounds.PathRound` -> :func:`~spectheory.testing.check_verifier` on its
  verifier with ``gammas=(gamma,)``;
- :class:`~spectheory.stopping.PolicyRound` -> :func:`~spectheory.testing.check_verifier` on token
  verification with ``gammas=(policy.max_depth,)`` (a policy only shortens the draft; the
  verifier it runs is token verification);
- :class:`~spectheory.trees.TreeRound` -> :func:`~spectheory.testing.check_tree_verifier` on its
  verifier's rule and child policy, drafting the round's own tree on the kit's chains;
- :class:`~spectheory.trees.BatchRound` (first-token or GLS reading, finite ``gamma``) -> the
  same on its ``M``-path tree (GLS through its kit callable);
- a :class:`~spectheory.trees.DynamicTreeRound` -> the same with ``tree_topk`` on the trees the
  rule drafts at the first position of each kit chain.

>>> import spectheory as st
>>> from spectheory.testing import check_round
>>> check_round(st.PathRound(2), n_samples=300).passed
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..rounds import PathRound
from ..rounds.normalize import round_handler
from ..stopping import PolicyRound
from ..trees import BatchRound, DynamicTreeRound, TreeRound
from .kit import Report, check_verifier
from .trees import TreeReport, check_tree_verifier, reference_tree_verify, tree_instances

__all__ = ["check_round"]


def _path(rnd: PathRound, options: dict[str, Any]) -> Report:
    return check_verifier(rnd.verifier, gammas=(rnd.gamma,), **options)


def _policy(rnd: PolicyRound, options: dict[str, Any]) -> Report:
    return check_verifier("token", gammas=(rnd.max_depth,), **options)


def _tree(rnd: TreeRound, options: dict[str, Any], verify: Any = None) -> TreeReport:
    if "instances" not in options:
        chains = {id(chain): (name.split(",")[0], chain) for name, chain, _ in tree_instances()}
        options = {**options, "instances": [(f"{n}, {rnd.tree!r}", c, rnd.tree) for n, c in chains.values()]}
    v = rnd.verifier
    return check_tree_verifier(verify or reference_tree_verify(v), children=v.children, **options)


def _batch(rnd: BatchRound, options: dict[str, Any]) -> TreeReport:
    if rnd.reading == "gls" and rnd.tree is not None:  # GLS's kit callable resamples its exponentials
        from ..trees.gls_tree import GLS

        return _tree(rnd, options, GLS.kit_verify)
    if rnd.all_agreeing or rnd.tree is None:
        raise ValueError(
            f"round: the tree kit checks the first-token reading with a finite gamma, got {rnd.name}"
        )
    return _tree(rnd, options)


def _dynamic(rnd: DynamicTreeRound, options: dict[str, Any]) -> TreeReport:
    """``tree_topk`` on the trees the rule drafts at the first position of each kit chain."""
    if "instances" not in options:
        chains = {id(chain): (name.split(",")[0], chain) for name, chain, _ in tree_instances()}
        insts = []
        for n, c in chains.values():
            tab = rnd.table(c, rnd.depth(1) + 1)
            insts += [
                (f"{n}, {rnd.name}, {t!r}", c, t)
                for t in dict.fromkeys(tab.trees[int(i)] for i in tab.index[0])
            ]
        options = {**options, "instances": insts}
    return check_tree_verifier(reference_tree_verify(rnd.verifier), children=rnd.verifier.children, **options)


#: round class -> its check (looked up along the round's MRO, so subclasses come first).
_CHECKS: dict[type, Callable[[Any, dict[str, Any]], Report | TreeReport]] = {
    PathRound: _path,
    PolicyRound: _policy,
    BatchRound: _batch,
    TreeRound: _tree,
    DynamicTreeRound: _dynamic,
}

_ROUND_ARGS = ("gammas", "children", "policy")


def check_round(round: Any, **options: Any) -> Report | TreeReport:
    """Run the conformance kit on the verifier of ``round``.

    Parameters
    ----------
    round : Round, int, DraftTree or Policy
        Anything :func:`~spectheory.rounds.as_round` accepts.
    **options
        Passed to :func:`~spectheory.testing.check_verifier` (path and policy rounds:
        ``n_samples``, ``seed``, ``vocab_sizes``, ...) or
        :func:`~spectheory.testing.check_tree_verifier` (tree and batch rounds: ``n_samples``,
        ``rng``, ``alpha``, ``instances``); not what the round fixes (``gammas``, ``children``).

    Returns
    -------
    Report or TreeReport
        ``.passed`` says whether the round's verifier passed.

    Raises
    ------
    ValueError
        ``round`` is not a round the kit can check, or ``options`` repeat what it fixes.

    Examples
    --------
    >>> from spectheory.trees import DraftTree, TreeRound
    >>> check_round(TreeRound(DraftTree.from_branching([2]), "tree_rrs"), n_samples=2000, rng=0).passed
    True
    """
    rnd, check = round_handler(round, _CHECKS, options, _ROUND_ARGS, "check_round", "the kit checks")
    return check(rnd, options)

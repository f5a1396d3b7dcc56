"""The conformance kit on a round object: the one ``st.simulate`` and the decoder take.

:func:`check_round` turns its argument into a :class:`~spectheory.rounds.Round`
(:func:`~spectheory.kinds.as_round`), asks it whether the kit checks it (:meth:`Round.require
<spectheory.rounds.Round.require>`, which names the round and the reason when not) and hands it
the kit's checks (:data:`KIT`, a visitor): the round's
:meth:`~spectheory.rounds.Round.check_plan` calls the check that fits its verifier with its own
data, e.g. a :class:`~spectheory.kinds.PathRound` ``kit.verifier(verifier, gammas=(gamma,))``
and a :class:`~spectheory.trees.TreeRound` ``kit.tree_verifier(...)`` on its own tree over the
kit's chains (:meth:`Kit.chains`). No table of round classes: a round kind defined in a user's
file is checked as soon as it defines ``check_plan``.

>>> import spectheory as st
>>> from spectheory.testing import check_round
>>> check_round(st.PathRound(2), n_samples=300).passed
True
"""

from __future__ import annotations

from typing import Any

from ..kinds.normalize import round_for
from .kit import Report, check_verifier
from .schedules import check_schedule
from .trees import TreeReport, check_tree_verifier, reference_tree_verify, tree_instances

__all__ = ["check_round", "KIT", "Kit"]


class Kit:
    """The kit's checks, handed to :meth:`Round.check_plan <spectheory.rounds.Round.check_plan>`
    (the visitor of the conformance kit; frozen: no attribute can be set).

    Attributes
    ----------
    verifier : callable
        :func:`~spectheory.testing.check_verifier` ``(verifier, gammas=(g,), **options)``: a
        path verifier's checks.
    tree_verifier : callable
        :func:`~spectheory.testing.check_tree_verifier` ``(verify, children=..., **options)``: a
        tree rule's checks on ``instances`` of ``(name, chain, tree)``.
    tree_instances : callable
        ``() -> [(name, chain, tree), ...]``: the tree kit's default instances.
    reference_tree_verify : callable
        ``(verifier) -> verify``: a tree verifier of :mod:`spectheory.trees` as a kit callable.
    schedule : callable
        :func:`~spectheory.testing.schedules.check_schedule` ``(schedule, gamma=, batch=,
        **options)``: a verification schedule's exact output-law check.

    Examples
    --------
    >>> [name for name, _ in KIT.chains()]
    ['far', 'V=5', 'near']
    """

    __slots__ = ()

    verifier = staticmethod(check_verifier)
    tree_verifier = staticmethod(check_tree_verifier)
    tree_instances = staticmethod(tree_instances)
    reference_tree_verify = staticmethod(reference_tree_verify)
    schedule = staticmethod(check_schedule)

    @staticmethod
    def chains() -> list[tuple[str, Any]]:
        """``[(name, chain), ...]``: the distinct chains of :attr:`tree_instances`, for a round
        to draft its own trees on (``name`` without the instance's tree)."""
        chains = {id(chain): (name.split(",")[0], chain) for name, chain, _ in tree_instances()}
        return list(chains.values())

    def __repr__(self) -> str:
        return "Kit(verifier, tree_verifier, tree_instances, reference_tree_verify, schedule, chains)"


#: The one :class:`Kit` every round's ``check_plan`` is handed.
KIT = Kit()

_ROUND_ARGS = ("gammas", "children", "policy")


def check_round(round: Any, **options: Any) -> Report | TreeReport:
    """Run the conformance kit on the verifier of ``round``.

    Parameters
    ----------
    round : Round, int, DraftTree or Policy
        Anything :func:`~spectheory.kinds.as_round` accepts whose kind defines ``check_plan``.
    **options
        Passed to :func:`~spectheory.testing.check_verifier` (path and policy rounds:
        ``n_samples``, ``rng``, ``vocab_sizes``, ...) or
        :func:`~spectheory.testing.check_tree_verifier` (tree and batch rounds: ``n_samples``,
        ``rng``, ``alpha``, ``instances``); ``n_samples``, ``rng``, ``efficiency`` and ``lossy``
        mean the same in both; not what the round fixes (``gammas``, ``children``).

    Returns
    -------
    Report or TreeReport
        ``.passed`` says whether the round's verifier passed.

    Raises
    ------
    ValueError
        As :func:`~spectheory.kinds.normalize.round_for` (engine ``"kit"``): ``round`` is not
        a round, ``options`` repeat what it fixes, or the round declares that the kit
        cannot run it (:class:`~spectheory.rounds.UnsupportedRoundError`, naming the reason).

    Examples
    --------
    >>> from spectheory.trees import DraftTree, TreeRound
    >>> check_round(TreeRound(DraftTree.from_branching([2]), "tree_rrs"), n_samples=2000, rng=0).passed
    True
    """
    rnd = round_for("kit", round, options, _ROUND_ARGS, "check_round")
    report: Report | TreeReport = rnd.check_plan(KIT, dict(options))
    return report

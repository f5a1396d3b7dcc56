r"""Batch decoding's readings as objects: how :class:`~spectheory.trees.BatchRound` reads ``M`` drafts.

Notation: p = target, q = draft. ``M`` drafts of ``gamma`` tokens are drawn i.i.d. from ``q``;
a *reading* says which of them the target checks after the first position, and so which tree
verifier the round is on ``DraftTree.paths(M, gamma)``:

====================  ==============  =======================  =====================================
reading               tree verifier   after the first token    real decoder / kit
====================  ==============  =======================  =====================================
:class:`FirstToken`   ``"tree_rrs"``  the accepted draft only  ``tree_generate`` / the tree kit
:class:`TreeReading`  ``BATCH_TREE``  every agreeing draft     neither (why: ``why_not``)
:class:`GLSReading`   ``GLS``         every agreeing draft     ``gls_generate`` / GLS's kit callable
====================  ==============  =======================  =====================================

A reading carries everything an engine needs from it, so no engine compares reading names:
its tree verifier (:attr:`Reading.verifier`), whether every agreeing draft goes on
(:attr:`Reading.all_agreeing`) and the coupling of its exact engine
(:attr:`Reading.coupling`, for :func:`~spectheory.kinds.batch.exact.batch_tree_expected`), its
Monte Carlo loop (:meth:`Reading.play`), its decoder loop (:meth:`Reading.decode`, through the
decoder's visitor), its kit callable (:meth:`Reading.kit_verify`) and what it cannot run
(:meth:`Reading.why_not`). ``BatchRound(M, gamma, reading="gls")`` maps the name once to the
object (:data:`READINGS`); ``str(reading)`` is the name ``BatchRound.name`` carries.

Examples
--------
>>> from spectheory.trees import BatchRound
>>> rnd = BatchRound(2, 3, reading="gls")
>>> type(rnd.reading).__name__, str(rnd.reading), rnd.reading.all_agreeing
('GLSReading', 'gls', True)
>>> sorted(READINGS)
['first_token', 'gls', 'tree']
"""

from __future__ import annotations

from typing import Any

from ...rounds.base import RoundRuns
from ...verifiers.base import get_verifier
from .gls_tree import GLS
from .verifier import BATCH_TREE

__all__ = ["Reading", "FirstToken", "TreeReading", "GLSReading", "READINGS", "as_reading"]


class Reading:
    """Base class of batch readings (module docstring); the base reads like :class:`FirstToken`.

    A subclass sets :attr:`name`, :attr:`all_agreeing`, :attr:`coupling` and the tree verifier
    (:meth:`tree_verifier`) and overrides what it does differently.
    """

    #: The name ``BatchRound(reading=...)`` takes and ``BatchRound.name`` shows.
    name = "first_token"
    #: Whether every draft that agrees with the accepted prefix goes on (else the accepted one).
    all_agreeing = False
    #: ``batch_tree_expected``'s coupling of the agreeing drafts (``None``: the exact values are
    #: the tree round's on the ``M`` paths, :meth:`TreeRound.exact <spectheory.trees.TreeRound.exact>`).
    coupling: str | None = None

    def tree_verifier(self) -> Any:
        """The tree verifier (a name or a :class:`~spectheory.verifiers.TreeVerifier`) of the reading."""
        return "tree_rrs"

    @property
    def verifier(self) -> Any:
        """The reading's :class:`~spectheory.verifiers.TreeVerifier` (resolved)."""
        return get_verifier(self.tree_verifier()).for_tree()

    def why_not(self) -> dict[str, str]:
        """``{engine: reason}`` for the engines the reading cannot run (``RoundTags.why_not``)."""
        return {}

    def play(self, rnd: Any, sampler: Any, runs: RoundRuns, rng: Any) -> Any:
        """One Monte Carlo round of ``rnd`` (a ``BatchRound``): recursive rejection over the agreeing drafts."""
        return rnd._play_rrs(sampler, runs.horizon, runs.n, runs.state, rng, runs.keep_path)

    def decode(
        self, rnd: Any, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict
    ) -> Any:
        """The real decoder on ``rnd``: ``loops.tree`` on its ``M``-path tree with its verifier."""
        return loops.tree(target, draft, prompts, max_new_tokens, rnd.tree, verifier=rnd.verifier, **options)

    def kit_verify(self, kit: Any, verifier: Any) -> Any:
        """The conformance kit's callable for the reading's ``verifier``: the kit's reference form."""
        return kit.reference_tree_verify(verifier)

    def __str__(self) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self)

    def __hash__(self) -> int:
        return hash(type(self))


class FirstToken(Reading):
    """The first-token reading (Yin et al.): ``tree_rrs`` over the ``M`` first tokens, then the
    accepted draft alone."""


class TreeReading(Reading):
    """The tree reading: recursive rejection at every position over all agreeing drafts
    (:data:`~spectheory.kinds.batch.verifier.BATCH_TREE`); Monte Carlo and exact values only."""

    name = "tree"
    all_agreeing = True
    coupling = "rrs"

    def tree_verifier(self) -> Any:
        return BATCH_TREE

    def why_not(self) -> dict[str, str]:
        return {
            "decoder": "the tree reading has no decoder loop; use BatchRound(M, gamma) (first-token "
            "reading) or reading='gls'",
            "kit": "the tree kit checks node-local rules and GLS; the tree reading's exact values are "
            "batch_tree_expected's",
        }


class GLSReading(Reading):
    """Gumbel-max list sampling over the agreeing drafts (:mod:`spectheory.kinds.batch.gls_tree`):
    its own Monte Carlo loop (shared exponentials), decoder loop (``loops.gls``) and kit callable
    (:meth:`GumbelListTree.kit_verify <spectheory.kinds.batch.gls_tree.GumbelListTree.kit_verify>`)."""

    name = "gls"
    all_agreeing = True
    coupling = "gls"

    def tree_verifier(self) -> Any:
        return GLS

    def play(self, rnd: Any, sampler: Any, runs: RoundRuns, rng: Any) -> Any:
        return rnd._play_gls(sampler, runs.horizon, runs.n, runs.state, rng, runs.keep_path)

    def decode(
        self, rnd: Any, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict
    ) -> Any:
        return loops.gls(target, draft, prompts, max_new_tokens, rnd.M, rnd.gamma, **options)

    def kit_verify(self, kit: Any, verifier: Any) -> Any:
        return verifier.kit_verify  # resamples the exponentials given the drafted tokens


#: The readings ``BatchRound(reading=name)`` accepts, by name.
READINGS: dict[str, Reading] = {r.name: r for r in (FirstToken(), TreeReading(), GLSReading())}


def as_reading(reading: Any) -> Reading:
    """A :class:`Reading` from a reading or its name (``ValueError`` naming the choices)."""
    if isinstance(reading, Reading):
        return reading
    if isinstance(reading, str) and reading in READINGS:
        return READINGS[reading]
    raise ValueError(f"reading: expected one of {sorted(READINGS)} or a Reading, got {reading!r}")

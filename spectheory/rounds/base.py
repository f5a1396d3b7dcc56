r"""The round as one object: what a round drafts and which verifier checks it.

A speculative *round* (``docs/protocol.md``) starts with ``n < T`` tokens generated in chain
state ``s``, drafts some tokens, scores them with the target in one call, keeps an accepted
prefix of ``j`` of them and then one final token (the correction after a rejection, or the
bonus token). A :class:`Round` says *what* is drafted -- a path of ``gamma`` tokens
(:class:`~spectheory.rounds.PathRound`), a draft tree (:class:`~spectheory.trees.TreeRound`,
batch decoding's ``M`` paths among them), or as many tokens as a draft-length policy decides
(:class:`~spectheory.stopping.PolicyRound`) -- and *which verifier* checks it. One method,
:meth:`Round.play`, plays one round for a batch of runs and returns a :class:`RoundOutcome`;
the one Monte Carlo driver (:func:`spectheory.rounds.driver.run_rounds`) does everything else
(initial states, chunks, counters, the bonus token, the state advance, tokens, progress).

Shorthands (an ``int`` for a path, a ``DraftTree``, a policy) are turned into rounds by
:func:`spectheory.rounds.as_round`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Round", "RoundOutcome"]


@dataclass
class RoundOutcome:
    """What one round did, per run of a batch of ``R`` runs (int64 arrays unless stated).

    Attributes
    ----------
    accepted : ndarray, shape (R,)
        ``j``: drafted tokens kept (the accepted path's length).
    final : ndarray, shape (R,)
        The token after the accepted prefix: the correction when ``rejected``, else the bonus
        candidate (drawn from the target; the driver emits it only with ``bonus`` and tokens
        left). Any valid token where neither applies.
    rejected : ndarray of bool, shape (R,)
        Whether the round ended with a rejection (``final`` is then always emitted).
    drafted : ndarray, shape (R,)
        Draft tokens the round proposed (``k`` for a path, the drafted nodes of a tree).
    end_state : ndarray, shape (R,)
        The chain state after the accepted prefix, before the final token.
    path : ndarray, shape (R, P), or None
        The accepted tokens (row ``r`` holds ``accepted[r]`` valid entries); only when the
        driver asks for them (``return_tokens``).
    memory : ndarray, shape (R,), or None
        The round kind's memory for the next round (``None``: unchanged).
    extra_calls : ndarray, shape (R,), or None
        Target calls beyond the round's first, each drafting one more token (naive HSD's
        forward passes); ``None``: none.
    """

    accepted: np.ndarray
    final: np.ndarray
    rejected: np.ndarray
    drafted: np.ndarray
    end_state: np.ndarray
    path: np.ndarray | None = None
    memory: np.ndarray | None = None
    extra_calls: np.ndarray | None = None


class Round:
    """Base class of round kinds (see the module docstring).

    A subclass sets :attr:`name`, :attr:`max_depth` and :attr:`verifier_name` and implements
    :meth:`play` (Monte Carlo) and :meth:`exact` (its exact engine); it may override :meth:`check` (refuse a chain), :meth:`chunk_size`
    (memory bound per batch of runs) and :attr:`initial_memory` (state carried between rounds).
    """

    #: Memory a run starts with (read by :meth:`play` as ``memory``).
    initial_memory: int = 0

    @property
    def name(self) -> str:
        """Short label carried by results (``SimulationResult.round``)."""
        raise NotImplementedError

    @property
    def max_depth(self) -> int | None:
        """The longest drafted path (``None``: to the end of the horizon)."""
        raise NotImplementedError

    @property
    def verifier_name(self) -> str:
        """Name of the verifier that checks the round."""
        raise NotImplementedError

    def depth(self, horizon: int) -> int:
        """Longest accepted count at this horizon: :attr:`max_depth`, or ``horizon`` when None
        (the width of ``accepted_counts`` minus one)."""
        return int(horizon) if self.max_depth is None else int(self.max_depth)

    def describe(self) -> str:
        """One line saying what the round drafts and how it is verified."""
        return self.name

    def check(self, chain: Any, horizon: int) -> None:
        """Raise ``ValueError`` if the round cannot run on ``chain`` (default: it needs a
        deterministic ``next_state``)."""
        chain.require_deterministic(f"the {type(self).__name__} simulator")

    def chunk_size(self, chain: Any, horizon: int) -> int | None:
        """Most runs the driver plays together (``None``: no limit)."""
        return None

    def play(
        self,
        sampler: Any,
        horizon: int,
        n: np.ndarray,
        state: np.ndarray,
        memory: np.ndarray,
        rng: np.random.Generator,
        keep_path: bool = False,
    ) -> RoundOutcome:
        """Play one round for ``R`` runs at positions ``n [R]`` (``< horizon``) in states
        ``state [R]`` with round memory ``memory [R]``, drawing from ``rng``.

        ``sampler`` is a :class:`~spectheory.rounds.ChainSampler` of the chain; ``keep_path``
        asks for :attr:`RoundOutcome.path`.
        """
        raise NotImplementedError(f"{type(self).__name__}: define play")

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """The round's exact expectations over one generation of ``horizon`` tokens: an
        :class:`~spectheory.exact.ExactResult` from the round kind's exact engine (what
        ``chain.protocol(horizon, round)`` returns; ``docs/architecture.md``).

        ``cost`` (a number ``c`` or a :class:`~spectheory.exact.Cost`) is the default cost of
        the result's ``time()`` and ``speedup()`` (and what a draft-length policy is evaluated
        under); ``options`` go to the engine.
        """
        raise NotImplementedError(f"{type(self).__name__}: no exact engine (define exact)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

r"""The round as one object: what a round drafts and which verifier checks it.

A speculative *round* (``docs/protocol.md``) starts with ``n < T`` tokens generated in chain
state ``s``, drafts some tokens, scores them with the target in one call, keeps an accepted
prefix of ``j`` of them and then one final token (the correction after a rejection, or the
bonus token). A :class:`Round` says *what* is drafted -- a path of ``gamma`` tokens
(:class:`~spectheory.kinds.PathRound`), a draft tree (:class:`~spectheory.trees.TreeRound`,
batch decoding's ``M`` paths among them), or as many tokens as a draft-length policy decides
(:class:`~spectheory.stopping.PolicyRound`) -- and *which verifier* checks it. One method,
:meth:`Round.play`, plays one round for a batch of runs and returns a :class:`RoundOutcome`;
the one Monte Carlo driver (:func:`spectheory.rounds.driver.run_rounds`) does everything else
(initial states, chunks, counters, the bonus token, the state advance, tokens, progress).

Shorthands (an ``int`` for a path, a ``DraftTree``, a policy) are turned into rounds by
:func:`spectheory.kinds.as_round`.

**The contract.** Every engine drives a round through its methods, never by naming its class or
a kind string (``docs/architecture.md``):

=================  ==================================  ======================================
engine             method of the round                 what the engine hands it
=================  ==================================  ======================================
Monte Carlo        :meth:`Round.play`                  a sampler, the runs, an rng
exact              :meth:`Round.exact`                 the chain and the horizon
real decoder       :meth:`Round.decode`                the decoder's loops (plain data in)
conformance kit    :meth:`Round.check_plan`            the kit's checks (plain data in)
along-path         :meth:`Round.along_path`            the along-path visitor (plain data in)
=================  ==================================  ======================================

The runs are one :class:`RoundRuns`. The engine objects handed to :meth:`Round.decode`,
:meth:`Round.check_plan` and :meth:`Round.along_path` are *visitors*: the round calls the
engine's generic loops with its own data (a ``gamma``, a tree, a verifier), so a round kind defined in a user's file runs through every engine without the
engine importing it, and no engine keeps a table of round classes. What a round supports is
declared by :meth:`Round.tags` (as scikit-learn's estimator tags): an engine asks
:meth:`Round.require` first and raises :class:`UnsupportedRoundError` naming the round and the
reason.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

__all__ = ["Round", "RoundRuns", "RoundOutcome", "RoundTags", "UnsupportedRoundError", "ENGINES"]

#: The engines a round may support: the fields of :class:`RoundTags`, in this order.
ENGINES = ("monte_carlo", "exact", "decoder", "kit", "along_path")

#: The method each engine calls (a round supports an engine by default iff it overrides it).
_ENGINE_METHODS = {
    "monte_carlo": "play",
    "exact": "exact",
    "decoder": "decode",
    "kit": "check_plan",
    "along_path": "along_path",
}

#: What the engines are called in error messages.
_ENGINE_LABELS = {
    "monte_carlo": "the Monte Carlo driver (st.simulate)",
    "exact": "the exact engine (chain.protocol)",
    "decoder": "the real decoder (spectheory.decoder.generate)",
    "kit": "the conformance kit (spectheory.testing.check_round)",
    "along_path": "along-path prediction (spectheory tune)",
}


class UnsupportedRoundError(ValueError):
    """An engine was asked to run a round that declares (:meth:`Round.tags`) it cannot run it.

    A ``ValueError``, so callers that caught the old errors keep working.
    """


@dataclass(frozen=True)
class RoundTags:
    """What a round declares it supports, one flag per engine (:data:`ENGINES`).

    Attributes
    ----------
    monte_carlo, exact, decoder, kit, along_path : bool
        Whether :meth:`Round.play`, :meth:`Round.exact`, :meth:`Round.decode`,
        :meth:`Round.check_plan` and :meth:`Round.along_path` run for this round.
    why_not : dict
        ``{engine: reason}`` for the engines it does not support (shown in the error).

    Examples
    --------
    >>> from spectheory.kinds import PathRound
    >>> PathRound(3).tags().monte_carlo
    True
    """

    monte_carlo: bool = True
    exact: bool = True
    decoder: bool = True
    kit: bool = True
    along_path: bool = True
    why_not: dict[str, str] = field(default_factory=dict, compare=False, hash=False)

    def refuse(self, why: dict[str, str]) -> RoundTags:
        """A copy with the engines of ``why`` (``{engine: reason}``) unsupported, each with its
        reason (replacing a reason already there); ``self`` when ``why`` is empty.

        Examples
        --------
        >>> t = RoundTags().refuse({"decoder": "drafts greedily"})
        >>> t.decoder, t.exact, t.why_not
        (False, True, {'decoder': 'drafts greedily'})
        """
        for engine in why:
            if engine not in ENGINES:
                raise ValueError(f"engine: expected one of {ENGINES}, got {engine!r}")
        if not why:
            return self
        return replace(self, **dict.fromkeys(why, False), why_not={**self.why_not, **why})

    def supports(self, engine: str) -> bool:
        """Whether ``engine`` (one of :data:`ENGINES`) runs the round."""
        if engine not in ENGINES:
            raise ValueError(f"engine: expected one of {ENGINES}, got {engine!r}")
        return bool(getattr(self, engine))


@dataclass(frozen=True)
class RoundRuns:
    """The ``R`` runs one round is played for: what the driver hands :meth:`Round.play`.

    Attributes
    ----------
    horizon : int
        ``T``, the tokens of one generation.
    n : ndarray of int64, shape (R,)
        Tokens generated so far, ``< horizon``.
    state : ndarray of int64, shape (R,)
        The chain state each run is in.
    memory : ndarray, shape (R,) or (R, m)
        The round kind's memory (:attr:`Round.initial_memory`, then what the last round left).
    keep_path : bool
        Whether the round must return its accepted tokens (:attr:`RoundOutcome.path`).
    bonus : bool
        Whether the driver emits the bonus token after a fully accepted round with tokens left
        (read by the hindsight oracle, which turns a last accepted draft into that bonus).

    Examples
    --------
    >>> import numpy as np
    >>> runs = RoundRuns(8, np.array([0, 3, 5]), np.array([1, 0, 2]), np.zeros(3, dtype=np.int64))
    >>> runs.size, runs.take(np.array([2])).n
    (3, array([5]))
    """

    horizon: int
    n: np.ndarray
    state: np.ndarray
    memory: np.ndarray
    keep_path: bool = False
    bonus: bool = True

    @property
    def size(self) -> int:
        """``R``, the number of runs."""
        return int(self.n.shape[0])

    def take(self, rows: np.ndarray) -> RoundRuns:
        """The runs at ``rows`` (an index array), e.g. those drafting the same tree."""
        return RoundRuns(
            self.horizon, self.n[rows], self.state[rows], self.memory[rows], self.keep_path, self.bonus
        )


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

    A subclass sets :attr:`name`, :attr:`max_depth` and :attr:`verifier_name` (or keeps its
    rule as ``verifier``) and implements the engine methods it supports: :meth:`play` (Monte
    Carlo), :meth:`exact` (its exact engine), :meth:`decode` (the real decoder),
    :meth:`check_plan` (the conformance kit), :meth:`along_path` (along-path prediction). :meth:`tags` declares which; by default an
    engine is supported iff its method is overridden. A subclass may also override
    :meth:`check` (refuse a chain), :meth:`chunk_size` (memory bound per batch of runs) and
    :attr:`initial_memory` (state carried between rounds).
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
        """Name of the verifier that checks the round: by default the ``name`` of the round's
        ``verifier`` attribute (the rule it keeps); a round without one overrides this."""
        verifier = getattr(self, "verifier", None)
        if verifier is None:
            raise NotImplementedError(f"{type(self).__name__}: define verifier_name")
        return verifier.name

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

    def tags(self) -> RoundTags:
        """What the round supports (:class:`RoundTags`): by default an engine is supported iff
        the round's class overrides that engine's method. Override to refuse an engine for
        some configurations (with a reason in ``why_not``)."""
        flags = {
            engine: getattr(type(self), method) is not getattr(Round, method)
            for engine, method in _ENGINE_METHODS.items()
        }
        missing = {
            e: f"{type(self).__name__} does not define {_ENGINE_METHODS[e]}"
            for e, ok in flags.items()
            if not ok
        }
        return RoundTags(**flags, why_not=missing)

    def require(self, engine: str) -> None:
        """Raise :class:`UnsupportedRoundError` naming the round and the reason unless the round
        supports ``engine`` (one of :data:`ENGINES`); every engine calls this first."""
        tags = self.tags()
        if not tags.supports(engine):
            why = tags.why_not.get(engine, "")
            raise UnsupportedRoundError(
                f"round: {_ENGINE_LABELS[engine]} cannot run {self.name}" + (f" ({why})" if why else "")
            )

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        """Play one round for the ``R`` runs of ``runs`` (:class:`RoundRuns`: positions
        ``n [R]`` below the horizon, states ``state [R]``, round memory ``memory [R]``), drawing
        from ``rng``.

        ``sampler`` is a :class:`~spectheory.rounds.ChainSampler` of the chain;
        ``runs.keep_path`` asks for :attr:`RoundOutcome.path`.
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

    def decode(
        self, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict[str, Any]
    ) -> Any:
        """Play the round with real models: call one of the decoder's loops (``loops``, the
        visitor :mod:`spectheory.decoder` hands over) with the round's own data and the caller's
        sampling ``options``; return its :class:`~spectheory.decoder.GenerationResult`."""
        raise NotImplementedError(f"{type(self).__name__}: no decoder step (define decode)")

    def check_plan(self, kit: Any, options: dict[str, Any]) -> Any:
        """Run the conformance kit on the round: call the kit's checks (``kit``, the visitor
        :mod:`spectheory.testing` hands over) with the round's verifier and shapes; return the
        report."""
        raise NotImplementedError(f"{type(self).__name__}: no kit check (define check_plan)")

    def along_path(self, predictor: Any) -> Any:
        """Along-path prediction: hand the predictor (the visitor of
        :mod:`spectheory.tuning.along_path`) the round's jump kernel; return what it computes."""
        raise NotImplementedError(f"{type(self).__name__}: no along-path kernel (define along_path)")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

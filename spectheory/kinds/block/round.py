r"""A round drafted by a block drafter (parallel or Markov head), verified token by token.

The k-th token is drawn from the drafter's depth law :math:`Q_k(\cdot \mid s[, x_{k-1}])`
(:class:`~spectheory.kinds.block.drafter.BlockDrafter`), not along the draft model's own path,
and is verified by token verification with **that** law in the ratio:
accept with probability :math:`\min(1, p(x_k \mid s_{k-1}) / Q_k(x_k))`, else emit a token of
:math:`\mathrm{norm}(\max(p - Q_k, 0))`. So the output law is the target's (the lemma of
speculative sampling, per position), whatever the drafter.

Exact engine: with :math:`g_i(\sigma, y)` the probability that the first i drafts are accepted,
the state is :math:`\sigma` and the last accepted token is y, the accepted mass at depth i is
:math:`M_i(\sigma, y, x) = \min(p(x \mid \sigma), Q_i(x \mid s, y))` and the round ends with a
correction from :math:`(p - M_i)`; :func:`block_drafter_transition` gives the round-start
transition :math:`Q[s, j, s']` that :func:`spectheory.exact.round_recursion` reads (every
counter of ``chain.protocol``), and :func:`block_long_run` the long-run tokens per call and
the per-depth conditional acceptance.

Examples
--------
>>> import spectheory as st
>>> from spectheory.kinds.block import BlockDrafter, BlockRound
>>> chain = st.DecodingChain.random(3, concentration=0.5, rng=1)
>>> rnd = BlockRound(BlockDrafter.marginals(chain, 3))
>>> exact = chain.protocol(20, rnd).tokens_per_call
>>> sim = st.simulate(chain, 20, rnd, 4000, rng=0).summary()["tokens_per_call"]["mean"]
>>> bool(abs(exact - sim) < 0.05)
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._guards import check_int
from ...exact.round_recursion import round_recursion
from ...laws.sampling import categorical
from ...rounds.base import Round, RoundOutcome, RoundRuns, RoundTags
from ...verifiers.base import get_verifier
from .drafter import BlockDrafter
from .exact import block_drafter_transition

__all__ = ["BlockRound"]


class BlockRound(Round):
    """Draft ``gamma`` tokens from a :class:`BlockDrafter`'s depth laws; token verification.

    Parameters
    ----------
    drafter : BlockDrafter
    gamma : int, optional
        Tokens drafted per round (default: the drafter's depth; at most it).
    verifier : str or Verifier, optional
        A single-path rule (default ``"token"``). The exact engine is token verification's
        (a rule that declares ``inline_token_round``); Monte Carlo plays any path rule.
    """

    def __init__(self, drafter: BlockDrafter, gamma: int | None = None, verifier: Any = "token") -> None:
        if not isinstance(drafter, BlockDrafter):
            raise TypeError(f"drafter: a BlockDrafter, got {type(drafter).__name__}")
        self.drafter = drafter
        self.gamma = drafter.depth if gamma is None else check_int(gamma, "gamma", 1)
        if self.gamma > drafter.depth:
            raise ValueError(f"gamma: at most the drafter's depth {drafter.depth}, got {self.gamma}")
        self.verifier = get_verifier(verifier).require_path()

    @property
    def name(self) -> str:
        return f"block(gamma={self.gamma}, drafter={self.drafter.name})"

    @property
    def max_depth(self) -> int:
        return self.gamma

    def describe(self) -> str:
        head = "a Markov head" if self.drafter.markov else "a parallel head"
        return f"{self.gamma} tokens drafted by {head} ({self.drafter.name}), verified token by token"

    def check(self, chain: Any, horizon: int) -> None:
        """The drafter's laws must be for the chain's states and tokens."""
        if chain.vocab_size != self.drafter.vocab_size or chain.n_states != self.drafter.first.shape[0]:
            raise ValueError(
                f"drafter: laws for {self.drafter.first.shape[0]} states and {self.drafter.vocab_size} "
                f"tokens, the chain has {chain.n_states} and {chain.vocab_size}"
            )

    def tags(self) -> RoundTags:
        """As :meth:`Round.tags`; the exact engine is token verification's (a rule declaring
        ``inline_token_round``)."""
        why: dict[str, str] = {}
        if not self.verifier.inline_token_round:
            why["exact"] = f"its exact engine is token verification's, not {self.verifier.name!r}"
        return super().tags().refuse(why)

    def check_plan(self, kit: Any, options: dict[str, Any]) -> Any:
        """The conformance kit: ``kit.verifier`` (:func:`~spectheory.testing.check_verifier`)
        on the round's rule with ``gammas=(gamma,)``. The kit's instances give every position
        its own draft law and draw each drafted token from the law of its position, which is
        a parallel head's round: the check fails a rule whose ratio uses another law than the
        one the token was drawn from (the per-position sampling bug class)."""
        return kit.verifier(self.verifier, gammas=(self.gamma,), **options)

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        T, g, V, n = runs.horizon, self.gamma, sampler.V, runs.n
        R = runs.size
        k = np.minimum(g, T - n)
        start = runs.state
        states = np.empty((R, g + 1), dtype=np.int64)
        states[:, 0] = start
        x = np.empty((R, g), dtype=np.int64)
        u = rng.random((R, g))
        tl = np.empty((R, g + 1, V))
        dl = np.empty((R, g, V))
        for i in range(g + 1):
            m = np.minimum(n + i, T - 1)
            tl[:, i] = sampler.rows(sampler.target, m, states[:, i])
            if i == g:
                break
            dl[:, i] = self.drafter.law(start, i, x[:, i - 1] if i else None)
            x[:, i] = categorical(dl[:, i], u[:, i])
            states[:, i + 1] = sampler.next_states(states[:, i], x[:, i], rng)
        j, y = self.verifier.verify_round(tl, dl, x, k, rng)
        j, y = np.asarray(j, dtype=np.int64), np.asarray(y, dtype=np.int64)
        return RoundOutcome(
            accepted=j,
            final=y,
            rejected=j < k,
            drafted=k,
            end_state=states[np.arange(R), j],
            path=x if runs.keep_path else None,
        )

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """Every counter of ``chain.protocol`` by :func:`~spectheory.exact.round_recursion` on
        :func:`block_drafter_transition`."""
        if options:
            raise ValueError(f"options: a block round's exact engine takes none, got {sorted(options)}")
        self.require("exact")
        res = round_recursion(
            chain,
            horizon,
            self.gamma,
            bonus,
            block_drafter_transition(chain, self.drafter),
            position_dependent=False,
        )
        return res if cost is None else res.with_cost(cost)

    def __repr__(self) -> str:
        return f"BlockRound({self.drafter.name}, gamma={self.gamma})"

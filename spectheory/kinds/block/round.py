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

    def __init__(
        self, drafter: BlockDrafter | None = None, gamma: int | None = None, verifier: Any = "token"
    ) -> None:
        if drafter is not None and not isinstance(drafter, BlockDrafter):
            raise TypeError(f"drafter: a BlockDrafter or None, got {type(drafter).__name__}")
        if drafter is None and gamma is None:
            raise ValueError("gamma: a block round without a BlockDrafter needs gamma (the decoder's heads)")
        self.drafter = drafter
        if gamma is not None:
            self.gamma = check_int(gamma, "gamma", 1)
        elif drafter is not None:
            self.gamma = drafter.depth
        if drafter is not None and self.gamma > drafter.depth:
            raise ValueError(f"gamma: at most the drafter's depth {drafter.depth}, got {self.gamma}")
        self.verifier = get_verifier(verifier).require_path()

    @property
    def name(self) -> str:
        return f"block(gamma={self.gamma}, drafter={self._drafter_name})"

    @property
    def _drafter_name(self) -> str:
        return "the decoder's heads" if self.drafter is None else self.drafter.name

    @property
    def max_depth(self) -> int:
        return self.gamma

    def describe(self) -> str:
        if self.drafter is None:
            return f"{self.gamma} tokens drafted by the decoder's heads, verified token by token"
        head = "a Markov head" if self.drafter.markov else "a parallel head"
        return (
            f"{self.gamma} tokens drafted by {head} ({self.drafter.name}), verified by {self.verifier.name!r}"
        )

    def check(self, chain: Any, horizon: int) -> None:
        """The drafter's laws must be for the chain's states and tokens."""
        self.require("monte_carlo")  # refused without a BlockDrafter, naming why
        self._require_drafter().require_chain(chain)

    def tags(self) -> RoundTags:
        """As :meth:`Round.tags`, and: the exact engine and the decoder's Medusa loop are token
        verification's (a rule declaring ``inline_token_round``); the engines on chains need
        the drafter's laws (a :class:`BlockDrafter`)."""
        why: dict[str, str] = {}
        if not self.verifier.inline_token_round:
            for engine in ("exact", "decoder"):
                why[engine] = f"its {engine} engine is token verification's, not {self.verifier.name!r}"
        if self.drafter is None:
            for engine in ("exact", "monte_carlo"):
                why[engine] = "no depth laws on a chain: pass a BlockDrafter"
        return super().tags().refuse(why)

    def decode(
        self, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict[str, Any]
    ) -> Any:
        """The real decoder: ``draft`` is a block drafter of the target (Medusa heads,
        :class:`~spectheory.decoder.medusa.MedusaHeads`); ``loops.medusa`` drafts one path of
        ``gamma`` tokens, token ``k`` sampled from head ``k``'s law at the round start, and
        checks it by token verification against that law (a path-shaped tree with sampled
        children, on which recursive rejection sampling is token verification)."""
        from ..tree import DraftTree

        path = DraftTree.from_branching([1] * self.gamma)
        return loops.medusa(target, draft, prompts, max_new_tokens, path, "tree_rrs", **options)

    def _require_drafter(self) -> BlockDrafter:
        if self.drafter is None:
            raise ValueError("drafter: this block round has no BlockDrafter (it runs in the decoder only)")
        return self.drafter

    def check_plan(self, kit: Any, options: dict[str, Any]) -> Any:
        """The conformance kit: ``kit.verifier`` (:func:`~spectheory.testing.check_verifier`)
        on the round's rule with ``gammas=(gamma,)``. The kit's instances give every position
        its own draft law and draw each drafted token from the law of its position, which is
        a parallel head's round: the check fails a rule whose ratio uses another law than the
        one the token was drawn from (the per-position sampling bug class)."""
        return kit.verifier(self.verifier, gammas=(self.gamma,), **options)

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        drafter = self._require_drafter()
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
            dl[:, i] = drafter.law(start, i, x[:, i - 1] if i else None)
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
            block_drafter_transition(chain, self._require_drafter()),
            position_dependent=False,
        )
        return res if cost is None else res.with_cost(cost)

    def __repr__(self) -> str:
        return f"BlockRound({self._drafter_name}, gamma={self.gamma})"

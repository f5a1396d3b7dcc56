r"""A round that drafts one path of ``gamma`` tokens, checked by a single-path verifier.

Notation: p = target, q = draft. At position ``n`` and state ``s`` the round drafts
``k = min(gamma, T - n)`` tokens along the draft's own path (``x_i ~ q_{n+i}(. | s_i)``,
``s_{i+1} = next_state[s_i, x_i]``, drawn from ``next_state[s_i, x_i, :]`` for stochastic
transitions) and hands them to a :class:`~spectheory.verifiers.Verifier`: its
:meth:`~spectheory.verifiers.Verifier.fused_round` fast path when it has one (and the
transitions are deterministic), else :meth:`~spectheory.verifiers.Verifier.verify_round` on
the laws gathered along each path. Uniforms: ``rng.random((R, gamma))`` for the drafts, then
the next-state draws (stochastic chains), then the verifier's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._guards import check_int
from ...exact.expectations import protocol_result
from ...rounds.base import Round, RoundOutcome, RoundRuns, RoundTags
from ...rounds.sampler import ChainSampler
from ...verifiers.base import Verifier, get_verifier
from ...verifiers.inputs import FusedRoundInputs
from ...verifiers.token import TokenVerifier

__all__ = ["PathRound", "CHUNK_ELEMS"]

#: Upper bound on the number of float64 entries of the per-round law arrays of one chunk.
CHUNK_ELEMS = 1 << 22


class PathRound(Round):
    """Draft a path of ``gamma`` tokens; verify it with a single-path verifier.

    Parameters
    ----------
    gamma : int >= 1
        Draft length (``min(gamma, T - n)`` near the end of the horizon).
    verifier : str or Verifier
        A registered name (``"token"``, ``"block"``, ...) or a
        :class:`~spectheory.verifiers.Verifier`.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])   # draft == target
    >>> res = st.simulate(chain, 10, st.PathRound(4, "block"), 100, rng=0)
    >>> res.round, int(res.target_calls.max())                 # 5 tokens per round
    ('path(gamma=4, verifier=block)', 2)
    """

    def __init__(self, gamma: int, verifier: Any = "token") -> None:
        self.gamma = check_int(gamma, "gamma", 1)
        self.verifier = get_verifier(verifier).require_path()

    @property
    def name(self) -> str:
        return f"path(gamma={self.gamma}, verifier={self.verifier.name})"

    def along_path(self, predictor: Any) -> Any:
        """Along-path prediction: a path of ``gamma`` drafted tokens (``predictor.path``)."""
        return predictor.path(self.gamma, self.verifier)

    @property
    def max_depth(self) -> int:
        return self.gamma

    def describe(self) -> str:
        return f"a path of {self.gamma} draft tokens, verified by {self.verifier.name!r}"

    def check(self, chain: Any, horizon: int) -> None:
        """Every chain works (stochastic transitions take the generic path)."""

    def _fused(self, chain: Any) -> bool:
        return type(self.verifier).fused_round is not Verifier.fused_round and not getattr(
            chain, "is_stochastic", False
        )

    def chunk_size(self, chain: Any, horizon: int) -> int:
        """Runs per chunk so that one round's law arrays hold at most :data:`CHUNK_ELEMS` entries."""
        g, V = self.gamma, chain.vocab_size
        if not self._fused(chain):
            per_run = (2 * g + 1) * V  # gathered law arrays of the generic path
        elif ChainSampler.uses_tables(chain):
            per_run = 8 * (g + 1)  # fused path on CDF tables: O(gamma) per run
        else:
            per_run = 4 * V  # fused path gathering rows
        return max(1, CHUNK_ELEMS // per_run)

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        T, g, V, n = runs.horizon, self.gamma, sampler.V, runs.n
        R = runs.size
        k = np.minimum(g, T - n)
        states = np.empty((R, g + 1), dtype=np.int64)
        states[:, 0] = runs.state
        x = np.empty((R, g), dtype=np.int64)
        u = rng.random((R, g))
        fused = NotImplemented
        extra = None
        if not sampler.stochastic:
            fused = self.verifier.fused_round(FusedRoundInputs(sampler, T, g, n, k, states, x, u), rng)
        if fused is not NotImplemented:
            j, y = fused[:2]
            if len(fused) == 3:  # a whole-round player's extra target calls (naive HSD)
                extra = fused[2]
        else:
            tl = np.empty((R, g + 1, V))
            dl = np.empty((R, g, V))
            for i in range(g + 1):
                m = np.minimum(n + i, T - 1)  # padding rows (i > k) reuse the last kernel
                s = states[:, i]
                tl[:, i] = sampler.rows(sampler.target, m, s)
                if i == g:
                    break
                dl[:, i] = sampler.rows(sampler.draft, m, s)
                if self.verifier.drafting == "sample":
                    x[:, i] = sampler.sample_draft(m, s, u[:, i])
                else:  # a proposal mode's own drafting law (greedy drafting)
                    x[:, i] = self.verifier.draft(dl[:, i], u[:, i])
                states[:, i + 1] = sampler.next_states(s, x[:, i], rng)
            j, y = self.verifier.verify_round(tl, dl, x, k, rng)
            j = np.asarray(j, dtype=np.int64)
            y = np.asarray(y, dtype=np.int64)
            if j.shape != (R,) or y.shape != (R,):
                raise ValueError(
                    f"verifier: must return two arrays of shape ({R},), got {j.shape}, {y.shape}"
                )
            if np.any((j < 0) | (j > k)) or np.any((y < 0) | (y >= V)):
                raise ValueError(
                    "verifier: returned an accepted count outside [0, k] or a token outside [0, V)"
                )
        return RoundOutcome(
            accepted=j,
            final=y,
            rejected=j < k,
            drafted=k,
            end_state=states[np.arange(R), j],
            path=x if runs.keep_path else None,
            extra_calls=extra,
        )

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """Exact :class:`~spectheory.exact.ProtocolResult` by the verifier's engine
        (:func:`spectheory.exact.expectations.protocol_result`, cached per chain)."""
        if options:
            raise ValueError(f"options: a path round's exact engine takes none, got {sorted(options)}")
        res = protocol_result(chain, horizon, self.gamma, bonus, self.verifier)
        return res if cost is None else res.with_cost(cost)

    def decode(
        self, loops: Any, target: Any, draft: Any, prompts: Any, max_new_tokens: int, options: dict[str, Any]
    ) -> Any:
        """The real decoder: ``loops.path`` (:func:`~spectheory.decoder.speculative_generate`)
        with ``gamma`` and the verifier."""
        return loops.path(
            target, draft, prompts, max_new_tokens, self.gamma, verifier=self.verifier, **options
        )

    def check_plan(self, kit: Any, options: dict[str, Any]) -> Any:
        """The conformance kit: ``kit.verifier`` (:func:`~spectheory.testing.check_verifier`) on
        the verifier with ``gammas=(gamma,)``."""
        return kit.verifier(self.verifier, gammas=(self.gamma,), **options)

    def tags(self) -> RoundTags:
        """The defaults, less what the verifier keeps an engine from running:

        - the real decoder samples its drafts (a rule with its own drafting law, ``drafting =
          "argmax"``, is refused) and scores them in one target call (a ``multi_call`` rule, as
          naive HSD, runs in :func:`~spectheory.decoder.hsd_decode.naive_hsd_generate`);
        - the kit's path plan plays one target call per round (a ``multi_call`` rule is checked
          as a whole sampler, :func:`~spectheory.testing.check_sampler`);
        - along-path prediction checks each draft by token verification (its kernel reads
          ``max(0, 1 - q/p)`` along the path).
        """
        tags = super().tags()
        v = self.verifier
        why: dict[str, str] = {}
        if v.drafting != "sample":
            why["decoder"] = f"verifier {v.name!r} drafts by {v.drafting}; the decoder samples its drafts"
        elif v.multi_call:
            why["decoder"] = (
                f"verifier {v.name!r} calls the target more than once per round; run it with "
                "spectheory.decoder.hsd_decode.naive_hsd_generate"
            )
        if v.multi_call:
            why["kit"] = (
                f"verifier {v.name!r} calls the target more than once per round, which the kit's "
                "one-call instances cannot give; check it as a whole sampler "
                "(spectheory.testing.check_sampler, its multi-call protocol)"
            )
        if type(v) is not TokenVerifier:
            why["along_path"] = (
                f"along-path prediction checks each draft by token verification, not {v.name!r}"
            )
        return tags.refuse(why)

    def __repr__(self) -> str:
        return f"PathRound(gamma={self.gamma}, verifier={self.verifier.name!r})"

r"""Naive HSD as a whole-round :class:`~spectheory.verifiers.Verifier` (``"hsd_naive"``) on a chain.

The algorithm (Zhou et al., ICLR 2026, as the authors' code runs it) and its literal
enumeration are in :mod:`spectheory.verifiers.hsd_naive`: a first pass (the listing rule,
``"hsd_listing"``) and then forward passes that read the target at contexts *off* the drafted
path, after tokens they resampled, one target call each. A per-path rule (``_rule`` on the
laws along the drafts) cannot express that; a whole-round rule can, because on a
:class:`~spectheory.chain.DecodingChain` the laws after *any* context are rows of the chain:
after the round's tokens ``c`` from state ``s`` at position ``n0``, ``p(. | c) =
target[n0 + len(c)][s_c]`` with ``s_c`` the state ``next_state`` reaches along ``c`` (the
draft likewise). So:

- **exact** (``chain.protocol(T, gamma, verifier="hsd_naive")``): :meth:`~NaiveHSDVerifier.round_transition`
  is :func:`~spectheory.verifiers.hsd_naive.naive_hsd_round_law` on the chain's rows
  (:func:`chain_round_fns`), per start state. A naive round of ``k`` drafts emits ``k`` or
  ``k + 1`` tokens; in the protocol's terms (``docs/protocol.md``) ``k`` tokens are the
  accepted count ``j = k - 1`` then a correction, ``k + 1`` tokens are ``j = k`` and the bonus
  token (dropped at the horizon). So ``accepted`` counts the tokens a round emits beyond its
  last (not the drafts that survive, ``naive_hsd_round_stats(...)["accepted"]``) and
  ``rejections`` the rounds that emit exactly ``k``. Its ``1 + max(0, k - 1 - tau)`` target
  calls are counted: :meth:`~NaiveHSDVerifier.round_extra_calls` gives the expected forward
  passes per start state, summed into ``ProtocolResult.extra_calls`` (in ``target_calls`` and
  ``draft_tokens``; a target-call time ``t(k)`` is refused).
- **Monte Carlo** (``st.simulate``): :meth:`~NaiveHSDVerifier.fused_round` plays each run's
  round with :func:`~spectheory.verifiers.hsd_naive_round.play_naive_hsd_round` (the kit's and
  the decoder's player) against the chain's rows and returns the emitted tokens as the kept
  path, with the forward passes as extra calls. Deterministic transitions only.

Its ``_rule`` and ``torch_rule`` raise: the drafted path's laws do not determine a round (the
real decoder runs :func:`~spectheory.decoder.hsd_decode.naive_hsd_generate`).

Examples
--------
>>> import spectheory as st
>>> chain = st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3])
>>> res = chain.protocol(3, 3, verifier="hsd_naive")   # one round: 47/27 target calls
>>> round(res.target_calls * 27, 9), round(res.draft_tokens * 27, 9)
(47.0, 101.0)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from .._guards import check_int
from .base import Verifier, register_verifier
from .hsd_naive import naive_hsd_round_law, naive_hsd_round_stats
from .hsd_naive_round import play_naive_hsd_round

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from .inputs import FusedRoundInputs

__all__ = ["NaiveHSDVerifier", "HSD_NAIVE", "chain_round_fns", "MAX_NAIVE_ELEMENTS"]

#: Largest ``S * V**(k + 1)`` the exact enumeration of :class:`NaiveHSDVerifier` takes.
MAX_NAIVE_ELEMENTS = 200_000

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


def _state_after(chain: ChainLike, s: int, tokens: tuple[int, ...]) -> int:
    for t in tokens:
        s = int(chain.next_state[s, t])
    return s


def _kernel(chain: ChainLike, n: int, which: int) -> np.ndarray:
    if chain.max_horizon is not None:  # the bonus law past the horizon is never emitted
        n = min(n, chain.max_horizon - 1)
    return chain.kernels(n)[which]


def chain_round_fns(chain: ChainLike, n0: int, state: int) -> tuple[LawFn, LawFn]:
    r"""``(target_fn, draft_fn)`` of a round that starts at position ``n0`` in ``state``.

    ``fn(c)`` is the chain's row after the round's tokens ``c``: ``kernel[n0 + len(c)]`` at the
    state ``next_state`` reaches from ``state`` along ``c`` -- the laws
    :func:`~spectheory.verifiers.hsd_naive.naive_hsd_round_law` reads at any context.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.verifiers.hsd_naive_chain import chain_round_fns
    >>> chain = st.DecodingChain([[0.9, 0.1], [0.2, 0.8]], [[0.5, 0.5], [0.5, 0.5]], [1.0, 0.0])
    >>> p, q = chain_round_fns(chain, 0, 0)
    >>> p(()).tolist(), p((1,)).tolist(), p((1, 0)).tolist()
    ([0.9, 0.1], [0.2, 0.8], [0.9, 0.1])
    """
    chain.require_deterministic("naive HSD on a chain")
    n0 = check_int(n0, "n0", 0)

    def fn(which: int) -> LawFn:
        return lambda c: _kernel(chain, n0 + len(c), which)[_state_after(chain, state, tuple(c))]

    return fn(0), fn(1)


class NaiveHSDVerifier(Verifier):
    r"""Naive HSD (the authors' loop) as a whole-round rule on chains (module docstring).

    Examples
    --------
    >>> import spectheory as st
    >>> res = st.simulate(st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3]), 6, 3, 50, verifier="hsd_naive", rng=0)
    >>> bool((res.target_calls >= 2).all())   # two rounds or more, 1 to 3 calls each
    True
    """

    name = "hsd_naive"
    lossless = False
    multi_call = True

    def _rule(self, t, d, x, kk, u_accept, u_final):
        raise NotImplementedError(
            "verifier 'hsd_naive': its forward passes read the target off the drafted path, so "
            "the path's laws do not determine a round; run it on a deterministic chain "
            "(chain.protocol, st.simulate) or with spectheory.decoder.hsd_decode.naive_hsd_generate"
        )

    def round_law(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[tuple[int, ...], Any]:
        """Exact law of one naive round by enumeration
        (:func:`~spectheory.verifiers.hsd_naive.naive_hsd_round_law`; ``gamma`` or ``gamma + 1``
        tokens, several target calls)."""
        return naive_hsd_round_law(target_fn, draft_fn, vocab_size, gamma, tuple(prefix))

    def round_stats(
        self, target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
    ) -> dict[str, Any]:
        """Expected ``accepted`` (drafted tokens emitted), ``tokens`` and ``target_calls`` of one
        naive round (:func:`~spectheory.verifiers.hsd_naive.naive_hsd_round_stats`)."""
        return naive_hsd_round_stats(target_fn, draft_fn, vocab_size, gamma, tuple(prefix))

    def chain_round_law(self, chain: ChainLike, n0: int, k: int, state: int) -> dict[tuple[int, ...], Any]:
        """The law of the tokens a round of ``k`` drafts emits from ``state`` at ``n0``
        (:meth:`round_law` on :func:`chain_round_fns`)."""
        k = check_int(k, "k", 1)
        S, V = chain.n_states, chain.vocab_size
        if S * V ** (k + 1) > MAX_NAIVE_ELEMENTS:
            raise ValueError(
                f"k: exact naive HSD needs S * V**(k+1) = {S * V ** (k + 1)} > {MAX_NAIVE_ELEMENTS} "
                "enumerated outcomes; use Monte Carlo (st.simulate(..., verifier='hsd_naive'))"
            )
        return self.round_law(*chain_round_fns(chain, n0, state), V, k)

    def round_transition(self, chain: ChainLike) -> Callable[[int, int, bool], np.ndarray]:
        chain.require_deterministic("naive HSD's exact round law (Monte Carlo supports deterministic chains)")

        def transition(n0: int, k: int, emit_bonus: bool) -> np.ndarray:
            S = chain.n_states
            Q = np.zeros((S, k + 1, S))
            for s in range(S):
                for e, w in self.chain_round_law(chain, n0, k, s).items():
                    j = min(len(e) - 1, k)  # k tokens: j = k - 1 and a correction; k + 1: j = k, bonus
                    kept = e if j < k or emit_bonus else e[:k]
                    Q[s, j, _state_after(chain, s, kept)] += float(w)
            return Q

        return transition

    def round_extra_calls(self, chain: ChainLike) -> Callable[[int, int], np.ndarray]:
        chain.require_deterministic("naive HSD's exact target calls")

        def extra(n0: int, k: int) -> np.ndarray:
            V = chain.vocab_size
            stats = [
                naive_hsd_round_stats(*chain_round_fns(chain, n0, s), V, k) for s in range(chain.n_states)
            ]
            return np.array([float(st["target_calls"]) - 1.0 for st in stats])

        return extra

    def fused_round(self, inputs: FusedRoundInputs, rng: np.random.Generator) -> Any:
        """Each run's round played by :func:`~spectheory.verifiers.hsd_naive_round.play_naive_hsd_round`
        on the chain's rows (``inputs.u`` unused: the player draws its own drafts from ``rng``);
        returns ``(j, y, extra_calls)`` with the emitted tokens written into ``inputs.x`` as the
        kept path."""
        chain, T = inputs.sampler.chain, inputs.horizon
        n, k, states, x = inputs.n, inputs.k, inputs.states, inputs.x
        R = inputs.size
        j = np.zeros(R, dtype=np.int64)
        y = np.zeros(R, dtype=np.int64)
        extra = np.zeros(R, dtype=np.int64)

        def laws(n0: int, s: int, which: int) -> Callable[[tuple[int, ...]], np.ndarray]:
            def call(toks: tuple[int, ...]) -> np.ndarray:
                out, st = [], s
                for i in range(len(toks) + 1):
                    out.append(chain.kernels(min(n0 + i, T - 1))[which][st])
                    if i < len(toks):
                        st = int(chain.next_state[st, toks[i]])
                return np.array(out)

            return call

        for r in range(R):
            n0, s0 = int(n[r]), int(states[r, 0])
            played = play_naive_hsd_round(laws(n0, s0, 0), laws(n0, s0, 1), int(k[r]), rng.random)
            e = played.emitted
            j[r] = min(len(e) - 1, int(k[r]))
            y[r] = e[j[r]] if j[r] < len(e) else 0
            x[r, : j[r]] = e[: j[r]]
            for i in range(j[r]):
                states[r, i + 1] = chain.next_state[states[r, i], e[i]]
            extra[r] = played.target_calls - 1
        return j, y, extra


#: The registered instance.
HSD_NAIVE = register_verifier(NaiveHSDVerifier())

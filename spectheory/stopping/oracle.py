r"""The hindsight oracle: it knows a round's accepted length before drafting, and drafts exactly that.

Notation: p = target, q = draft, ``A = min(p, q)``, ``R = max(p - q, 0)`` (``docs/stopping.md``).
A round at position ``n`` in state ``s`` may draft at most ``kmax = min(D, T - n)`` tokens. Let
``J`` be its *accepted length*: the number of consecutive drafted tokens the verifier would
accept if the round drafted ``kmax`` (``P(J >= j | s) = (A_n ... A_{n+j-1} 1)(s)``). The oracle
drafts ``min(J, D, T - n - 1)`` tokens and emits the same tokens as the ``kmax`` round: the
accepted ones, then the correction (``J < kmax``) or the bonus token. When the ``kmax`` round
would draft to the end and keep every token (``J = kmax = T - n``) the oracle drafts
``T - n - 1`` and the last token is its bonus (issue 41: drafting it too costs one draft more
for no token). ``J = 0`` (or ``T - n = 1``): no draft, one target call that scores no drafted
token, ``t(0)`` (:meth:`~spectheory.cost.Cost.empty_call_time`: ``target_call(0)``, 1 by
default). A round drafting ``k`` costs ``f(k) = c k + t(k)``. It reads the verifier's coins, so
no drafter can run it; it is the bound every drafter is measured against (``docs/stopping.md``
§10, Theorem 5: a lower bound on every drafter's time, at every horizon and in the long run,
when ``f(k) = a + beta k`` for ``k = 0..D`` with ``0 <= beta <= a``, e.g. ``t = 1``, ``c <= 1``;
tested in ``tests/stopping/test_oracle.py``).

* :class:`OracleRound`: the oracle as a round kind (``st.simulate(chain, T, OracleRound(D))``,
  ``chain.protocol(T, OracleRound(D))``);
* :func:`oracle_value`: its exact finite-horizon value, a backward recursion ``O(T D S V)``;
* :func:`long_run_oracle`: its exact long-run rate on a homogeneous chain (renewal-reward).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from .._guards import check_int
from ..cost.base import as_cost
from ..kinds.policy._kernels import BONUS, CALLS, DRAFTS, N_COMP, TTIME, Kernels, single_thread
from ..kinds.policy.forward_counters import forward_counters
from ..kinds.policy.policies import DEFAULT_MAX_DEPTH, FixedGamma
from ..kinds.policy.round import PolicyRound
from ..kinds.policy.value import PolicyValue, _value, backward_positions, reject_value
from ..rounds.base import Round, RoundOutcome, RoundRuns, RoundTags
from .longrun import LongRunValue
from .optimal import _gain, _round_start_tables

if TYPE_CHECKING:
    from .._protocols import ChainLike
    from ..cost.base import Cost

__all__ = ["OracleRound", "oracle_value", "long_run_oracle"]

_E = np.eye(N_COMP)


def _increments(cost: Cost, D: int) -> tuple[float, np.ndarray]:
    """``t(0)`` and, per drafted depth ``j = 1..D``, ``e_draft + (t(j) - t(j-1)) e_time``."""
    t = np.r_[cost.empty_call_time(), cost.call_times(D)]
    inc = np.zeros((D + 1, N_COMP))
    inc[1:, DRAFTS] = 1.0
    inc[1:, TTIME] = np.diff(t)
    return float(t[0]), inc


class OracleRound(Round):
    """The hindsight oracle as a round: draft exactly the tokens the verifier will accept.

    It plays the round of :class:`~spectheory.stopping.FixedGamma` ``(max_depth)`` (same draws,
    same emitted tokens) and reports ``drafted = accepted``, except that a round that drafted to
    the end and kept every token keeps one fewer and emits the last as its bonus (with
    ``bonus=True``); the driver charges ``t(0)`` (:meth:`~spectheory.cost.Cost.empty_call_time`)
    for a round that drafts nothing.

    Parameters
    ----------
    max_depth : int
        Longest draft ``D`` (the cap of the policies it is compared with).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping.oracle import OracleRound
    >>> chain = st.DecodingChain.random(3, concentration=1.0, rng=0)
    >>> exact = chain.protocol(12, OracleRound(4), cost=0.1)
    >>> bool(abs(exact.draft_tokens - exact.accepted) < 1e-12)
    True
    >>> sim = st.simulate(chain, 12, OracleRound(4), 200, rng=0, cost=0.1)
    >>> bool((sim.draft_tokens == sim.accepted).all())
    True
    """

    def __init__(self, max_depth: int = DEFAULT_MAX_DEPTH) -> None:
        self._depth = check_int(max_depth, "max_depth", 1)
        self._inner = PolicyRound(FixedGamma(self._depth))

    @property
    def name(self) -> str:
        return f"oracle(max_depth={self._depth})"

    @property
    def max_depth(self) -> int:
        return self._depth

    @property
    def verifier_name(self) -> str:
        return "token"

    def describe(self) -> str:
        return f"hindsight oracle: drafts exactly the tokens that will be accepted (at most {self._depth})"

    def check(self, chain: Any, horizon: int) -> None:
        self._inner.check(chain, horizon)

    def tags(self) -> RoundTags:
        """Monte Carlo and exact values only: the oracle reads the verifier's coins before it
        drafts, so no real drafter can play it (decoder), its emitted tokens are
        ``FixedGamma(max_depth)``'s (the kit checks that round), and there is no drafted
        path to predict along (along-path)."""
        coins = "the hindsight oracle reads the verifier's coins before drafting"
        return (
            super()
            .tags()
            .refuse(
                {
                    "decoder": f"{coins}: no real drafter can play it",
                    "kit": f"{coins}; its emitted tokens are those of PolicyRound(FixedGamma({self._depth})), check that round",
                    "along_path": f"{coins}: a bound for Monte Carlo and exact values, not a runnable rule",
                }
            )
        )

    def play(self, sampler: Any, runs: RoundRuns, rng: np.random.Generator) -> RoundOutcome:
        out = self._inner.play(sampler, runs, rng)
        j = np.asarray(out.accepted, dtype=np.int64).copy()
        final = np.asarray(out.final, dtype=np.int64).copy()
        # drafted to the end and all accepted: the last token becomes the bonus (one draft fewer)
        end = np.flatnonzero(~np.asarray(out.rejected, dtype=bool) & (runs.n + j >= runs.horizon) & (j > 0))
        if not runs.bonus:
            end = end[:0]
        j[end] -= 1
        if out.path is not None and end.size:
            final[end] = np.asarray(out.path)[end, j[end]]
        # the run ends with this token, so end_state (the state after it) is never read again
        return replace(out, accepted=j, final=final, drafted=j.copy(), memory=None)

    def exact(self, chain: Any, horizon: int, *, bonus: bool = True, cost: Any = None, **options: Any) -> Any:
        """Exact :class:`~spectheory.stopping.PolicyValue` (:func:`oracle_value`; ``options``: ``progress``)."""
        if not bonus:
            raise ValueError("bonus: only bonus=True is supported by the stopping engines")
        return oracle_value(chain, horizon, cost, self._depth, **options)

    def __repr__(self) -> str:
        return f"OracleRound({self._depth})"


def oracle_value(
    chain: ChainLike,
    horizon: int,
    cost: Cost | float | None = None,
    max_depth: int = DEFAULT_MAX_DEPTH,
    *,
    progress: bool | None = None,
) -> PolicyValue:
    r"""Exact expectations of the hindsight oracle over ``horizon`` tokens (backward recursion).

    With ``H_m^{(0)} = B(m)`` (``H_T^{(0)} = e_bonus``: a round alive at the end turns its last
    accepted token into the bonus) and ``H_m^{(r)} = R_m W_{m+1} + A_m H_{m+1}^{(r-1)}`` (the
    alive side of the ``kmax`` round, as in the state DP) and the drafting side
    ``Z_n = t(0) e_time + sum_{j=1}^{top} P(J >= j) (e_draft + (t(j) - t(j-1)) e_time)``, where
    ``top = kmax`` or ``kmax - 1`` when ``n + kmax = T`` (the oracle drafts
    ``min(J, D, T - n - 1)``; Horner: ``u_top = inc_top``, ``u_j = inc_j + A_{n+j} u_{j+1}``,
    ``Z_n = t(0) e_time + A_n u_1``), ``W_n = e_calls + Z_n + H_n^{(kmax)}``. Cost ``O(T D S V)``.

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
    cost : Cost or float
        A round with no draft costs ``t(0)`` (:meth:`~spectheory.cost.Cost.empty_call_time`:
        ``target_call(0)``, 1 by default), not the ``autoregressive`` reference.
    max_depth : int
        Longest draft ``D``.

    Returns
    -------
    PolicyValue
        ``draft_tokens == accepted`` (the oracle drafts exactly the accepted tokens).

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import oracle_value
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])   # always accepted
    >>> v = oracle_value(chain, 10, 0.1, max_depth=4)
    >>> v.target_calls, v.draft_tokens, round(v.time(), 12)
    (2.0, 8.0, 2.8)
    >>> v = oracle_value(chain, 9, 0.1, max_depth=4)   # the second round reaches the end
    >>> v.target_calls, v.draft_tokens, v.bonus_tokens, round(v.time(), 12)
    (2.0, 7.0, 2.0, 2.7)
    """
    T = chain.check_horizon(horizon)
    cost = as_cost(cost)
    D = check_int(max_depth, "max_depth", 1)
    K = Kernels(chain)
    t0, inc = _increments(cost, D)
    S = K.S
    W_next = np.zeros((S, N_COMP))
    H_next = np.zeros((S, D + 1, N_COMP))
    # alive at the end of a round that drafted to the end: its last accepted token is the bonus
    H_next[:, 0] = _E[BONUS]
    zcache: dict[int, np.ndarray] = {}
    head = _E[CALLS] + t0 * _E[TTIME]
    with single_thread(S):
        for n in backward_positions(T, "oracle", progress, T * D * S * K.V):
            laws = K.at(n)
            kmax = min(D, T - n)
            H = np.empty((S, D + 1, N_COMP))
            H[:, 0] = K.apply(laws.target, W_next) + _E[BONUS]
            H[:, 1 : kmax + 1] = reject_value(K, laws.rej, W_next)[:, None] + K.apply(
                laws.acc, H_next[:, :kmax]
            )
            top = kmax - 1 if n + kmax == T else kmax  # drafts paid: min(J, top)
            if K.hom and top in zcache:
                Z = zcache[top]
            else:
                Z = np.zeros((S, N_COMP))
                if top:
                    u = np.broadcast_to(inc[top], (S, N_COMP))
                    for j in range(top - 1, 0, -1):
                        u = inc[j] + K.apply(K.at(n + j).acc, u)
                    Z = K.apply(laws.acc, u)
                if K.hom:
                    zcache[top] = Z
            W_next = head + Z + H[:, kmax]
            H_next = H
    # the oracle emits the tokens of the D-token round: its rounds start where FixedGamma(D)'s do
    return _value(
        T,
        cost,
        chain.initial @ W_next,
        f"oracle (hindsight, max_depth={D})",
        {"information": "hindsight"},
        counters=forward_counters(chain, FixedGamma(D), T),
    )


def long_run_oracle(
    chain: ChainLike, cost: Cost | float | None = None, max_depth: int = DEFAULT_MAX_DEPTH
) -> LongRunValue:
    r"""Exact long-run tokens per unit time of the hindsight oracle on a homogeneous chain.

    The oracle's round starts follow the ``D``-token round's kernel
    ``P_D = sum_{j<D} A^j R + A^D P``; per round it emits ``e_D(s) = 1 + sum_{j=1}^D (A^j 1)(s)``
    tokens and costs ``t(0) + sum_{j=1}^D (A^j 1)(s) (c + t(j) - t(j-1))``; the rate is the ratio of
    their averages under the stationary law of round starts (renewal-reward, Theorem 3). The
    last round's bonus at a finite horizon (:func:`oracle_value`) changes the time by ``O(1)``,
    not the rate.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.stopping import long_run_oracle
    >>> alpha, c, D = 0.8, 0.1, 6
    >>> r = long_run_oracle(st.DecodingChain.iid([0.8, 0.2], [1.0, 0.0]), c, D)
    >>> closed = (1 - alpha ** (D + 1)) / (1 - alpha) / (1 + c * alpha * (1 - alpha ** D) / (1 - alpha))
    >>> bool(abs(r.rate - closed) < 1e-12)
    True
    """
    cost = as_cost(cost)
    D = check_int(max_depth, "max_depth", 1)
    trans, tokens, _ = _round_start_tables(chain, cost, D)
    t0, inc = _increments(cost, D)
    A = Kernels(chain).at(0).acc
    Aop = chain.transition_operator(A)
    alive = np.ones(chain.n_states)
    time = np.full(chain.n_states, t0)
    for j in range(1, D + 1):
        alive = np.asarray(Aop @ alive).ravel()
        time = time + alive * (cost.c * inc[j, DRAFTS] + inc[j, TTIME])
    P = trans[D - 1]
    ge, _ = _gain(P, tokens[D - 1])
    gt, _ = _gain(P, time)
    return LongRunValue(float(ge / gt), float(ge), float(gt), f"oracle (hindsight, max_depth={D})")

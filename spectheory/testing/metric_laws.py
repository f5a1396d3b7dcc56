r"""Exact laws of a request's speculative-decoding metrics, and alarm thresholds with a stated false-alarm rate.

An engine that reports one acceptance number per request (vLLM PR #44487's per-request
acceptance histogram, meant to flag garbled output by a very low acceptance and stuck loops by a
very high one) needs to know how often a *healthy* request crosses the alarm line. On a chain
(:class:`~spectheory.DecodingChain`: a toy model's target and draft) that is exact:

* a request of ``T`` tokens (``horizon=T``) makes ``N`` target calls (steps) and accepts ``A``
  drafts; :func:`request_law` computes the joint law of ``(N, A)`` by a forward recursion over
  round starts with the rule's *round kernel* ``Q[s, j, s']`` (the law of a round's accepted
  count ``j`` and end state ``s'`` from start state ``s``; a round at position ``n0`` drafts
  ``k = min(gamma, T - n0)``, emits ``j + 1`` tokens when ``j < k`` and ``k`` plus the bonus
  token when ``j = k``):

  .. math:: R_{n_0 + \ell(j)}[s', c + 1, a + j] \mathrel{+}= \sum_s R_{n_0}[s, c, a]\, Q_{n_0,k}[s, j, s'],

  started from ``R_0[s, 0, 0] = initial(s)``; the law is ``R_T`` summed over states. Cost
  ``T (gamma + 1) S^2 (T + 1)^2``.
* a request of ``n`` rounds (``rounds=n``, a homogeneous chain, rounds never truncated): the
  law of ``A`` over ``n`` rounds, ``n`` steps of the same recursion on ``[S, A]``.

Any per-request statistic of ``(N, A)`` then has an exact law (:meth:`RequestLaw.law`):
``"acceptance_length"`` ``1 + A/N`` (vLLM's per-request ``mean_acceptance_length``),
``"tokens_per_step"`` ``emitted/N``, ``"acceptance_rate"`` ``A/(gamma N)`` (vLLM's per-request
``draft_acceptance_rate``, ``num_draft_tokens = gamma`` per step) and ``"mean_accepted"``
``A/N``. :func:`alarm_threshold` gives the threshold whose exact false-alarm rate is the largest
not above a target, :func:`false_alarm_rate` the exact rate of a given threshold (the statistic
is discrete: a target rate is met from below, and the rate met is stated).

Examples
--------
>>> import spectheory as st
>>> from spectheory.testing.metric_laws import alarm_threshold, request_law
>>> chain = st.DecodingChain.iid([0.6, 0.4], [0.5, 0.5])         # acceptance 0.9 a draft
>>> law = request_law(chain, 3, horizon=24)
>>> round(law.mean("acceptance_length"), 4), round(law.mean("tokens_per_step"), 4)
(3.4002, 3.3137)
>>> alarm = alarm_threshold(law, 0.01, side="low")              # alarm when AL <= threshold
>>> round(alarm.threshold, 4), round(alarm.false_alarm_rate, 5)
(2.4, 0.00354)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._guards import check_bool, check_int, check_prob

__all__ = [
    "RequestLaw",
    "Alarm",
    "STATISTICS",
    "request_law",
    "round_kernel",
    "alarm_threshold",
    "false_alarm_rate",
]

#: Per-request statistics of ``(N, A)`` (steps, accepted drafts) :meth:`RequestLaw.law` knows.
STATISTICS = ("acceptance_length", "tokens_per_step", "acceptance_rate", "mean_accepted")
#: Largest ``S (T + 1)^2`` (or ``S (n gamma + 1)``) the recursion allocates per position.
MAX_ELEMENTS = 2**24


def round_kernel(chain: Any, verifier: Any = "token") -> Callable[[int, int, bool], np.ndarray]:
    """The rule's round kernel ``(n0, k, emit_bonus) -> Q [S, k + 1, S]`` on ``chain``.

    ``Q[s, j, s']``: probability that a round started at position ``n0`` in state ``s`` with
    ``k`` drafts accepts ``j`` of them and ends in state ``s'`` (after its last emitted token).
    A whole-round rule's ``round_transition`` (block verification, HSD), else built from a
    token-by-token rule's ``phase_masses`` (accept, reject) as ``A_{n0} ... A_{n0+j-1} R_{n0+j}``.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])     # acceptance 1/2
    >>> round_kernel(chain)(0, 2, True).sum(-1).tolist()         # P(J = 0, 1, 2)
    [[0.5, 0.25, 0.25]]
    """
    from ..exact.parts import _MassOps
    from ..verifiers import get_verifier

    rule = get_verifier(verifier).require_path()
    transition = rule.round_transition(chain)
    if transition is not None:
        return transition
    masses = rule.phase_masses(chain)
    if masses is None:
        raise ValueError(
            f"verifier: {rule.name!r} has neither a round_transition nor phase_masses (no exact round law)"
        )
    acc, rej, phase_dependent = masses
    A = _MassOps(chain, acc, "accept_mass", None, phase_dependent)
    R = _MassOps(chain, rej, "reject_mass", None, phase_dependent)

    def dense(op: Any) -> np.ndarray:
        return op.toarray() if hasattr(op, "toarray") else np.asarray(op)

    def kernel(n0: int, k: int, emit_bonus: bool) -> np.ndarray:
        S = chain.n_states
        E = np.eye(S)
        Q = np.zeros((S, k + 1, S))
        for i in range(k):
            Q[:, i] = E @ dense(R.get(n0 + i, i)[0])
            E = E @ dense(A.get(n0 + i, i)[0])
        Q[:, k] = E @ dense(chain.target_operator(n0 + k)) if emit_bonus else E
        return Q

    return kernel


@dataclass(frozen=True)
class RequestLaw:
    """Exact joint law of one request's steps ``N`` and accepted drafts ``A``.

    Attributes
    ----------
    prob : ndarray, shape (N_max + 1, A_max + 1)
        ``prob[c, a] = P(N = c, A = a)``.
    gamma : int
    emitted : int or None
        Tokens the request emits (its horizon ``T``); None for a request of ``rounds`` rounds,
        which emits ``A + N`` tokens (bonus on).
    rounds : int or None
        The fixed number of rounds of a ``rounds=`` request.
    """

    prob: np.ndarray
    gamma: int
    emitted: int | None
    rounds: int | None

    def values(self, statistic: str = "acceptance_length") -> np.ndarray:
        """The statistic on the ``(N, A)`` grid (NaN where ``N = 0``), shape of :attr:`prob`."""
        N = np.arange(self.prob.shape[0], dtype=np.float64)[:, None]
        A = np.arange(self.prob.shape[1], dtype=np.float64)[None, :]
        emitted = A + N if self.emitted is None else np.full_like(A + N, float(self.emitted))
        safe = np.where(N > 0, N, np.nan)
        table = {
            "acceptance_length": 1.0 + A / safe,
            "tokens_per_step": emitted / safe,
            "acceptance_rate": A / (self.gamma * safe),
            "mean_accepted": A / safe,
        }
        if statistic not in table:
            raise ValueError(f"statistic: expected one of {STATISTICS}, got {statistic!r}")
        return np.broadcast_to(table[statistic], self.prob.shape)

    def law(self, statistic: str = "acceptance_length") -> tuple[np.ndarray, np.ndarray]:
        """``(values, probs)``: the statistic's support, ascending, and its exact law.

        Values equal to 12 significant digits are merged (``1 + 2/4`` and ``1 + 1/2``)."""
        v, p = self.values(statistic), self.prob
        live = p > 0
        keys = np.round(v[live], 12)
        support, inverse = np.unique(keys, return_inverse=True)
        probs = np.bincount(inverse.ravel(), weights=p[live], minlength=support.size)
        return support, probs

    def mean(self, statistic: str = "acceptance_length") -> float:
        """``E[statistic]`` (e.g. the exact mean of per-request means)."""
        v, p = self.law(statistic)
        return float(v @ p)


def request_law(
    chain: Any,
    gamma: int,
    *,
    horizon: int | None = None,
    rounds: int | None = None,
    verifier: Any = "token",
    bonus: bool = True,
) -> RequestLaw:
    """Exact joint law of a request's steps and accepted drafts (module docstring).

    Parameters
    ----------
    chain : DecodingChain
        The toy model (target and draft) the engine ran.
    gamma : int
        Drafts per step.
    horizon : int, optional
        A request of ``horizon`` tokens (any chain).
    rounds : int, optional
        A request of ``rounds`` untruncated rounds (homogeneous chains; give exactly one of
        ``horizon`` and ``rounds``).
    verifier : str or Verifier
        A single-path rule with an exact round law (default token verification).
    bonus : bool
        The bonus token after a fully accepted round (``horizon`` only).

    Returns
    -------
    RequestLaw

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])     # acceptance 1/2
    >>> request_law(chain, 2, rounds=1).prob.tolist()            # one round: P(A = 0, 1, 2)
    [[0.0, 0.0, 0.0], [0.5, 0.25, 0.25]]
    """
    G = check_int(gamma, "gamma", 1)
    bonus = check_bool(bonus, "bonus")
    if (horizon is None) == (rounds is None):
        raise ValueError("horizon, rounds: give exactly one (a request of T tokens or of n rounds)")
    kernel = round_kernel(chain, verifier)
    S = chain.n_states
    if rounds is not None:
        n = check_int(rounds, "rounds", 1)
        if not chain.is_homogeneous:
            raise ValueError("rounds: a request of n rounds needs a homogeneous chain (use horizon=)")
        if S * (n * G + 1) > MAX_ELEMENTS:
            raise ValueError(f"rounds: the law needs S (n gamma + 1) = {S * (n * G + 1)} entries")
        Q = kernel(0, G, True)
        r = np.zeros((S, n * G + 1))
        r[:, 0] = chain.initial
        for _ in range(n):
            nxt = np.zeros_like(r)
            for j in range(G + 1):
                nxt[:, j:] += (Q[:, j].T @ r)[:, : r.shape[1] - j]
            r = nxt
        prob = np.zeros((n + 1, n * G + 1))
        prob[n] = r.sum(0)
        return RequestLaw(prob, G, None, n)
    T = chain.check_horizon(horizon)
    if S * (T + 1) ** 2 > MAX_ELEMENTS:
        raise ValueError(f"horizon: the law needs S (T + 1)^2 = {S * (T + 1) ** 2} entries per position")
    live: dict[int, np.ndarray] = {0: np.zeros((S, T + 1, T + 1))}
    live[0][:, 0, 0] = chain.initial
    cache: dict[tuple[int, int, bool], np.ndarray] = {}
    for n0 in range(T):
        if n0 not in live:
            continue
        r = live.pop(n0)
        if not r.any():
            continue
        k = min(G, T - n0)
        eb = bonus and n0 + k < T
        key = (n0 if not chain.is_homogeneous else 0, k, eb)
        if key not in cache:
            cache[key] = np.asarray(kernel(n0, k, eb), dtype=np.float64)
        Q = cache[key]
        for j in range(k + 1):
            out = np.tensordot(Q[:, j], r, axes=([0], [0]))  # [S', C, A]
            dest = n0 + j + 1 if j < k else n0 + k + eb
            tgt = live.setdefault(dest, np.zeros_like(r))
            tgt[:, 1:, j:] += out[:, :-1, : T + 1 - j]
    prob = live[T].sum(0)
    return RequestLaw(prob, G, T, None)


@dataclass(frozen=True)
class Alarm:
    """An alarm line on a per-request statistic and its exact false-alarm rate.

    ``side="low"`` fires when the statistic is ``<= threshold``, ``"high"`` when ``>=``;
    ``false_alarm_rate`` is the exact probability that a healthy request (the chain's law)
    fires it (``threshold = -inf``/``inf``: no line keeps the rate under the target)."""

    statistic: str
    side: str
    threshold: float
    false_alarm_rate: float
    target: float

    def fires(self, values: Any) -> np.ndarray:
        """Whether each value (e.g. engine requests' statistics) crosses the line."""
        v = np.asarray(values, dtype=np.float64)
        return v <= self.threshold + 1e-12 if self.side == "low" else v >= self.threshold - 1e-12

    def __str__(self) -> str:
        op = "<=" if self.side == "low" else ">="
        return (
            f"alarm when {self.statistic} {op} {self.threshold:.6g}: exact false-alarm rate "
            f"{self.false_alarm_rate:.4g} (target {self.target:g})"
        )


def _side(side: str) -> str:
    if side not in ("low", "high"):
        raise ValueError(f"side: expected 'low' or 'high', got {side!r}")
    return side


def false_alarm_rate(
    law: RequestLaw, threshold: float, side: str = "low", statistic: str = "acceptance_length"
) -> float:
    """Exact probability that a request's ``statistic`` crosses ``threshold``
    (``<=`` for ``side="low"``, ``>=`` for ``"high"``; equality to 1e-12 counts).

    Examples
    --------
    >>> import spectheory as st
    >>> law = request_law(st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0]), 2, rounds=1)
    >>> false_alarm_rate(law, 1.0, "low")                        # AL = 1: nothing accepted
    0.5
    """
    v, p = law.law(statistic)
    t = float(threshold)
    hit = v <= t + 1e-12 if _side(side) == "low" else v >= t - 1e-12
    return float(p[hit].sum())


def alarm_threshold(
    law: RequestLaw, target: float, side: str = "low", statistic: str = "acceptance_length"
) -> Alarm:
    """The alarm line whose exact false-alarm rate is the largest not above ``target``.

    ``side="low"``: the largest support value ``t`` with ``P(stat <= t) <= target``;
    ``"high"``: the smallest ``t`` with ``P(stat >= t) <= target``. The returned
    :class:`Alarm` states the rate met (the law is discrete: usually below ``target``).
    """
    target = float(check_prob(target, "target"))
    v, p = law.law(statistic)
    if _side(side) == "low":
        cdf = np.cumsum(p)
        ok = np.flatnonzero(cdf <= target + 1e-15)
        if ok.size == 0:
            return Alarm(statistic, side, -np.inf, 0.0, target)
        i = int(ok[-1])
        return Alarm(statistic, side, float(v[i]), float(cdf[i]), target)
    tail = np.cumsum(p[::-1])[::-1]
    ok = np.flatnonzero(tail <= target + 1e-15)
    if ok.size == 0:
        return Alarm(statistic, side, np.inf, 0.0, target)
    i = int(ok[0])
    return Alarm(statistic, side, float(v[i]), float(tail[i]), target)

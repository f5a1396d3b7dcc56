r"""Exact enumeration of the speculative decoding protocol with rational arithmetic.

An implementation independent of the recursions in :mod:`spectheory.exact.expectations`: it walks
the protocol of ``docs/protocol.md`` literally, branching over every draft token, every
accept/reject outcome, every residual and bonus token, and multiplies probabilities as
:class:`fractions.Fraction`. Chain entries are converted with ``Fraction(float)``, which
is exact, so laws with dyadic entries (``k / 2**m``) sum to exactly 1 and the identities
(losslessness, Theorem 1) hold exactly. Only for tiny cases: the number of outcomes
grows like ``(2 V)**T``.

Stochastic transitions (``chain.is_stochastic``, ``next_state[s, x, s']`` a law) are
enumerated as one more branch after every emitted or drafted token: the next state and its
probability (the draft's state draw is kept when its token is accepted; the final residual or
bonus token draws afresh).

Notation: p = target, q = draft; the acceptance rule is ``b(x) = s * min(1, target/draft)``
(``s = accept_scale``; 1 is standard token verification) with the rejection law
``(target - s min(target, draft)) / sum(...)`` that keeps the output unbiased.

Examples
--------
>>> import spectheory as st
>>> from spectheory.exact.enumeration import protocol_outcomes, outcome_expectation
>>> chain = st.DecodingChain.iid([0.5, 0.5], [0.75, 0.25])
>>> out = protocol_outcomes(chain, 2, gamma=1, bonus=False)
>>> outcome_expectation(out, "rejections")  # = 2 * TV = 2 * 1/4
Fraction(1, 2)
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction
from typing import TYPE_CHECKING, Any, NamedTuple

from .._guards import check_int

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = [
    "Outcome",
    "protocol_outcomes",
    "outcome_expectation",
    "outcome_sequence_law",
    "target_sequence_law_exact",
    "accepted_histogram",
    "fraction_kernel",
]

#: Refuse enumerations with more than this many branches.
MAX_BRANCHES = 2_000_000


class Outcome(NamedTuple):
    """One outcome of a generation: the tokens and the protocol's counters."""

    tokens: tuple
    calls: int
    rejections: int
    draft_tokens: int
    accepted_counts: tuple  # accepted count of each round, in order


def fraction_kernel(chain: ChainLike, n: int, s: int) -> tuple[list[Fraction], list[Fraction]]:
    """``(target, draft)`` rows at kernel index ``n`` and state ``s`` as Fractions."""
    t, d = chain.kernels(n)
    return [Fraction(float(v)) for v in t[s]], [Fraction(float(v)) for v in d[s]]


def protocol_outcomes(
    chain: ChainLike, horizon: int, gamma: int, bonus: bool = True, accept_scale: Fraction | int | str = 1
) -> dict[Outcome, Fraction]:
    r"""Exact law of the outcomes of one generation, as ``{Outcome: Fraction}``.

    Parameters
    ----------
    chain : DecodingChain
    horizon, gamma : int
    bonus : bool
    accept_scale : Fraction, int or str in (0, 1]
        ``s`` of the scaled verifier ``b(x) = s * min(1, target(x)/draft(x))``.

    Returns
    -------
    dict
        Outcomes with positive probability; the probabilities sum to 1 when the chain's
        rows sum to 1 exactly as Fractions.
    """
    T = chain.check_horizon(horizon)
    G = check_int(gamma, "gamma", 1)
    scale = Fraction(accept_scale)
    if not (0 < scale <= 1):
        raise ValueError(f"accept_scale: must lie in (0, 1], got {accept_scale!r}")
    V = chain.vocab_size
    succ = _successors(chain)
    kern: dict = {}
    out: dict = defaultdict(Fraction)
    budget = [MAX_BRANCHES]

    def kernel(n, s):
        key = (n, s)
        if key not in kern:
            kern[key] = fraction_kernel(chain, n, s)
        return kern[key]

    def spend():
        budget[0] -= 1
        if budget[0] < 0:
            raise ValueError(f"horizon: enumeration exceeds {MAX_BRANCHES} branches; use a tiny case")

    def new_round(n0, s, toks, calls, rej, drafts, counts, prob):
        spend()
        if n0 == T:
            out[Outcome(toks, calls, rej, drafts, counts)] += prob
            return
        k = min(G, T - n0)
        step(n0, k, 0, s, toks, calls + 1, rej, drafts + k, counts, prob)

    def step(n0, k, i, s, toks, calls, rej, drafts, counts, prob):
        spend()
        if i == k:  # all k drafts accepted
            if bonus and n0 + k < T:
                t, _ = kernel(n0 + k, s)
                for y in range(V):
                    if t[y]:
                        for s2, w in succ(s, y):
                            new_round(
                                n0 + k + 1,
                                s2,
                                toks + (y,),
                                calls,
                                rej,
                                drafts,
                                counts + (k,),
                                prob * t[y] * w,
                            )
            else:
                new_round(n0 + k, s, toks, calls, rej, drafts, counts + (k,), prob)
            return
        n = n0 + i
        t, d = kernel(n, s)
        p_reject = Fraction(0)
        for x in range(V):
            if not d[x]:
                continue
            b = scale * min(Fraction(1), t[x] / d[x])
            if b:
                for s2, w in succ(s, x):
                    step(n0, k, i + 1, s2, toks + (x,), calls, rej, drafts, counts, prob * d[x] * b * w)
            p_reject += d[x] * (1 - b)
        if not p_reject:
            return
        res = [t[y] - scale * min(t[y], d[y]) for y in range(V)]
        tot = sum(res)
        if not tot:
            raise ValueError(
                f"chain: rejection has probability {p_reject} but the residual is empty "
                f"(n={n}, state {s}); rows must sum to 1"
            )
        for y in range(V):
            if res[y]:
                for s2, w in succ(s, y):
                    new_round(
                        n + 1,
                        s2,
                        toks + (y,),
                        calls,
                        rej + 1,
                        drafts,
                        counts + (i,),
                        prob * p_reject * res[y] / tot * w,
                    )

    init = [Fraction(float(v)) for v in chain.initial]
    for s in range(chain.n_states):
        if init[s]:
            new_round(0, s, (), 0, 0, 0, (), init[s])
    return dict(out)


def _successors(chain):
    """``succ(s, x)``: list of ``(next state, Fraction probability)`` (one pair when deterministic)."""
    if not chain.is_stochastic:
        ns = chain.next_state
        return lambda s, x: ((int(ns[s, x]), Fraction(1)),)
    law = chain.transition_law
    V = chain.vocab_size
    cache: dict = {}

    def succ(s, x):
        r = s * V + x
        if r not in cache:
            lo, hi = law.indptr[r], law.indptr[r + 1]
            cache[r] = tuple(
                (int(j), Fraction(float(v))) for j, v in zip(law.indices[lo:hi], law.data[lo:hi]) if v
            )
        return cache[r]

    return succ


def outcome_expectation(
    outcomes: dict[Outcome, Fraction], field: str | None, fn: Callable[[Outcome], Any] | None = None
) -> Fraction:
    """``E[f(outcome)]``: ``field`` names an Outcome field, or pass ``fn(outcome)`` (field=None).

    >>> from fractions import Fraction
    >>> o = {Outcome((0,), 1, 0, 1, (1,)): Fraction(1)}
    >>> outcome_expectation(o, None, lambda o: Fraction(len(o.tokens), o.calls))
    Fraction(1, 1)
    """
    if fn is None:
        if field is None:
            raise ValueError("field: name an Outcome field, or pass fn")
        name = field
        fn = lambda o: getattr(o, name)  # noqa: E731
    f = fn
    return sum((p * f(o) for o, p in outcomes.items()), Fraction(0))


def outcome_sequence_law(outcomes: dict[Outcome, Fraction]) -> dict[tuple[int, ...], Fraction]:
    """Law of the generated tokens, ``{tokens: Fraction}``."""
    law: dict = defaultdict(Fraction)
    for o, p in outcomes.items():
        law[o.tokens] += p
    return dict(law)


def accepted_histogram(outcomes: dict[Outcome, Fraction], gamma: int) -> list[Fraction]:
    """``E[#rounds with accepted count j]`` for ``j = 0..gamma``, as Fractions."""
    G = check_int(gamma, "gamma", 1)
    hist = [Fraction(0)] * (G + 1)
    for o, p in outcomes.items():
        for j in o.accepted_counts:
            hist[j] += p
    return hist


def target_sequence_law_exact(chain: ChainLike, horizon: int) -> dict[tuple[int, ...], Fraction]:
    """Law of ``T`` tokens sampled from the target, ``{tokens: Fraction}`` (zeros omitted)."""
    T = chain.check_horizon(horizon)
    law: dict = defaultdict(Fraction)
    V = chain.vocab_size
    succ = _successors(chain)

    def walk(n, s, toks, prob):
        if n == T:
            law[toks] += prob
            return
        t, _ = fraction_kernel(chain, n, s)
        for y in range(V):
            if t[y]:
                for s2, w in succ(s, y):
                    walk(n + 1, s2, toks + (y,), prob * t[y] * w)

    for s in range(chain.n_states):
        p0 = Fraction(float(chain.initial[s]))
        if p0:
            walk(0, s, (), p0)
    return dict(law)

r"""The protocol's expected counters on a tiny chain, by literal enumeration in exact rationals.

An independent reference for the path engine (``chain.protocol(T, PathRound(gamma, rule))``):
it shares no code with :mod:`spectheory.exact`. A rule's *round law* (``round_law(target_fn,
draft_fn, V, k, prefix) -> {emitted: probability}``, the literal enumeration of one round) is
played round after round as ``docs/protocol.md`` says: a round at position ``n`` drafts ``k =
min(gamma, T - n)`` tokens, keeps ``j = |e| - 1`` of them and emits one more token (a correction
when ``j < k``; the bonus token when ``j = k``, dropped at the horizon or with ``bonus=False``).
Summing over every branch, weighted by its probability,

.. math:: E[\text{calls}] = \sum_{\text{rounds}} P(\text{round}), \quad
          E[\text{accepted}] = \sum_{\text{rounds}} P(\text{round})\, E[j], \ \dots

The chain's float64 laws are read as the rationals they are (:class:`fractions.Fraction`, each
row renormalised to sum to exactly 1), so the counters are exact: the float engine must agree to
about ``1e-12``. The cost is exponential in ``T`` (``V^T`` branches), so keep ``T <= 3``, ``V <= 3``.

Examples
--------
>>> import spectheory as st
>>> from spectheory.verifiers import get_verifier
>>> chain = st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0])          # acceptance 1/2
>>> c = enumerate_protocol(chain, 3, 2, get_verifier("token").round_law)
>>> c["target_calls"], c["accepted"]
(Fraction(2, 1), Fraction(11, 8))
>>> float(c["target_calls"]) == chain.protocol(3, 2).target_calls
True
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from typing import Any

from .._guards import check_int

__all__ = ["COUNTERS", "enumerate_protocol"]

#: The counters :func:`enumerate_protocol` returns (names shared by every exact result).
COUNTERS = ("target_calls", "rejections", "draft_tokens", "accepted")

RoundLaw = Callable[..., dict[tuple[int, ...], Any]]


def _rational(row: Any) -> list[Fraction]:
    r = [Fraction(float(v)) for v in row]
    total = sum(r)
    return [v / total for v in r]


def enumerate_protocol(
    chain: Any,
    horizon: int,
    gamma: int,
    round_law: RoundLaw,
    bonus: bool = True,
    round_calls: Callable[..., Any] | None = None,
) -> dict[str, Fraction]:
    r"""Expected :data:`COUNTERS` of one ``horizon``-token generation, exactly (module docstring).

    Parameters
    ----------
    chain : DecodingChain
        With a deterministic ``next_state`` (the round law reads the laws along a prefix).
    horizon : int
        Tokens per generation ``T`` (keep it ``<= 3``: the enumeration has ``V^T`` branches).
    gamma : int
        Draft length of a round.
    round_law : callable
        ``round_law(target_fn, draft_fn, vocab_size, k, prefix)``: one round of ``k`` drafts,
        ``{emitted tuple: probability}`` (e.g. :meth:`~spectheory.verifiers.Verifier.round_law`).
    bonus : bool
        Emit the bonus token after a fully accepted round.
    round_calls : callable, optional
        ``round_calls(target_fn, draft_fn, vocab_size, k, prefix)``: expected target calls of
        a round that may call the target more than once (naive HSD's forward passes), each extra
        call drafting one more token (a multi-call rule's ``round_stats(...)["target_calls"]``);
        ``None``: one call a round.

    Returns
    -------
    dict
        ``{counter: Fraction}`` for each of :data:`COUNTERS`.
    """
    T = chain.check_horizon(horizon)
    g = check_int(gamma, "gamma", 1)
    chain.require_deterministic("enumerate_protocol")
    V = chain.vocab_size
    cache: dict[tuple[int, int, str], list[Fraction]] = {}

    def law(n: int, s: int, which: str) -> list[Fraction]:
        key = (n, s, which)
        if key not in cache:  # past the last kernel only the bonus token's law is read: it is dropped
            t, d = chain.kernels(n if chain.max_horizon is None else min(n, chain.max_horizon - 1))
            cache[key] = _rational((t if which == "t" else d)[s])
        return cache[key]

    def walk(s: int, tokens: tuple[int, ...]) -> int:
        for v in tokens:
            s = int(chain.next_state[s, v])
        return s

    out = dict.fromkeys(COUNTERS, Fraction(0))
    # the generation's progress, merged: (position n, chain state) -> probability
    level: dict[tuple[int, int], Fraction] = {}
    for s0, w in enumerate(_rational(chain.initial)):
        if w:
            level[(0, s0)] = level.get((0, s0), Fraction(0)) + w
    while level:
        nxt: dict[tuple[int, int], Fraction] = {}
        for (n, s), w in level.items():
            k = min(g, T - n)
            t_fn = lambda c, n=n, s=s: law(n + len(c), walk(s, c), "t")  # noqa: E731
            d_fn = lambda c, n=n, s=s: law(n + len(c), walk(s, c), "d")  # noqa: E731
            calls = 1 if round_calls is None else round_calls(t_fn, d_fn, V, k, ())
            out["target_calls"] += w * calls
            out["draft_tokens"] += w * (k + calls - 1)
            for e, p in round_law(t_fn, d_fn, V, k, ()).items():
                if not p:
                    continue
                j = len(e) - 1
                out["accepted"] += w * p * j
                if j < k:
                    out["rejections"] += w * p
                kept = e if (j < k or (bonus and n + k < T)) else e[:k]
                m = n + len(kept)
                if m < T:
                    key = (m, walk(s, kept))
                    nxt[key] = nxt.get(key, Fraction(0)) + w * p
        level = nxt
    return out

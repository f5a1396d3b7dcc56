r"""The exact output law of speculative speculative decoding (SSD), cache hits and misses.

A round of SSD drafts K tokens from the *primary* speculator when the previous round's outcome
(accepted count k, emitted token b) was a cached key, and from a *backup* speculator (a fast
random-token drafter, or a neural one) on a miss. Saguaro sampling (Kumar, Dao & May, ICLR
2026) also changes the primary's law: the probabilities of the draft's top-F tokens are
multiplied by a constant C < 1 and the row renormalised, so that the residual puts its mass on
cached tokens. Each round is ordinary token verification, and the choice of drafter depends
only on the previous round's outcome, never on this round's draws. So the output law is the
target's **if** the ratio and the residual use the law the tokens were drawn from
(``docs/speculation_cache.md``). Two ways to get it wrong are modelled:

* ``"miss_uses_primary_q"``: on a miss, the backup's tokens are verified against the primary's
  probabilities (the engine kept the cached draft probabilities);
* ``"saguaro_uses_original_q"``: Saguaro-sampled tokens are verified against the unscaled
  draft law.

:func:`ssd_output_law` enumerates every round with Fractions on a first-order chain (state =
last token) and returns the exact law of the first N tokens, to compare with the target's.

Examples
--------
>>> from fractions import Fraction as F
>>> p = [[F(7, 10), F(3, 10)], [F(2, 5), F(3, 5)]]
>>> q = [[F(1, 2), F(1, 2)], [F(9, 10), F(1, 10)]]
>>> law = ssd_output_law(p, q, k=2, n_tokens=3, fanout=[1, 1, 1])
>>> law == target_law(p, 3)
True
>>> ssd_output_law(p, q, 2, 3, [1, 1, 1], variant="miss_uses_primary_q") == target_law(p, 3)
False
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from .._guards import check_int

__all__ = ["ssd_output_law", "target_law", "saguaro_law", "VARIANTS"]

Row = Sequence[Fraction]
#: The engine behaviours :func:`ssd_output_law` models (the first is correct).
VARIANTS = ("correct", "miss_uses_primary_q", "saguaro_uses_original_q")


def target_law(p: Sequence[Row], n_tokens: int, start: int = 0) -> dict[tuple[int, ...], Fraction]:
    """Law of the first ``n_tokens`` tokens sampled from the target (state = last token)."""
    law: dict[tuple[int, ...], Fraction] = {(): Fraction(1)}
    for _ in range(check_int(n_tokens, "n_tokens", 1)):
        nxt: dict[tuple[int, ...], Fraction] = {}
        for seq, pr in law.items():
            s = seq[-1] if seq else start
            for y, py in enumerate(p[s]):
                if py:
                    nxt[seq + (y,)] = nxt.get(seq + (y,), Fraction(0)) + pr * py
        law = nxt
    return law


def _top(row: Row, f: int) -> list[int]:
    return sorted(range(len(row)), key=lambda x: (-row[x], x))[:f]


def saguaro_law(q: Sequence[Row], f: int, c: Fraction) -> list[list[Fraction]]:
    """Saguaro sampling's draft law: the top-``f`` tokens of each row scaled by ``c``, renormalised."""
    out = []
    for row in q:
        top = set(_top(row, f))
        scaled = [x * c if i in top else x for i, x in enumerate(row)]
        z = sum(scaled)
        out.append([x / z for x in scaled])
    return out


def ssd_output_law(
    p: Sequence[Row],
    q: Sequence[Row],
    k: int,
    n_tokens: int,
    fanout: Sequence[int],
    *,
    backup: Sequence[Row] | None = None,
    saguaro: tuple[int, Fraction] | None = None,
    variant: str = "correct",
    start: int = 0,
) -> dict[tuple[int, ...], Fraction]:
    """Exact law of the first ``n_tokens`` tokens that SSD emits.

    Parameters
    ----------
    p, q : target and primary draft kernels, ``[V][V]`` Fractions (row = last token)
    k : draft length K of every round
    n_tokens : length of the output prefix whose law is returned
    fanout : K + 1 ints; the cache holds, for accepted count j, the primary draft's top
        ``fanout[j]`` tokens at the state after the j accepted drafts
    backup : the backup drafter's kernel on a miss (default: uniform random tokens)
    saguaro : ``(F, C)``: the primary draws from :func:`saguaro_law` ``(q, F, C)``
    variant : one of :data:`VARIANTS`
    start : the state before the first token
    """
    k, n = check_int(k, "K", 1), check_int(n_tokens, "n_tokens", 1)
    if variant not in VARIANTS:
        raise ValueError(f"variant: one of {VARIANTS}, got {variant!r}")
    if len(fanout) != k + 1:
        raise ValueError(f"fanout: {k + 1} entries, got {len(fanout)}")
    V = len(p)
    b_law = backup if backup is not None else [[Fraction(1, V)] * V for _ in range(V)]
    primary = saguaro_law(q, *saguaro) if saguaro else [list(r) for r in q]
    out: dict[tuple[int, ...], Fraction] = {}

    def emit(seq: tuple[int, ...], pr: Fraction, hit: bool) -> None:
        if len(seq) >= n:
            key = seq[:n]
            out[key] = out.get(key, Fraction(0)) + pr
            return
        draw = primary if hit else b_law
        ratio = draw
        if variant == "miss_uses_primary_q" and not hit:
            ratio = primary
        elif variant == "saguaro_uses_original_q" and hit:
            ratio = q
        round_(seq, pr, draw, ratio, seq[-1] if seq else start, 0)

    def cached(j: int, st: int) -> set[int]:  # the cache's keys at accepted count j, state st
        return set(_top(q[st], fanout[j]))

    def round_(
        seq: tuple[int, ...], pr: Fraction, draw: Sequence[Row], ratio: Sequence[Row], s: int, depth: int
    ) -> None:
        if len(seq) >= n:  # the first n tokens are out: the rest of the round does not matter
            out[seq[:n]] = out.get(seq[:n], Fraction(0)) + pr
            return
        if depth == k:  # bonus token from the target
            keys = cached(depth, s)
            for y, py in enumerate(p[s]):
                if py:
                    emit(seq + (y,), pr * py, y in keys)
            return
        resid = [max(p[s][x] - ratio[s][x], Fraction(0)) for x in range(V)]
        z = sum(resid)
        for x, qx in enumerate(draw[s]):
            if not qx:
                continue
            acc = min(Fraction(1), p[s][x] / ratio[s][x]) if ratio[s][x] else Fraction(0)
            if acc:
                round_(seq + (x,), pr * qx * acc, draw, ratio, x, depth + 1)
            if acc < 1 and z:
                keys = cached(depth, s)
                for y in range(V):
                    if resid[y]:
                        emit(seq + (y,), pr * qx * (1 - acc) * resid[y] / z, y in keys)

    emit((), Fraction(1), True)
    return out

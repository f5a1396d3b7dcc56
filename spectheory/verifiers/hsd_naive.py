r"""Naive HSD (Zhou et al., ICLR 2026, arXiv 2601.05724) as the authors' code runs it, exactly.

Source: the authors' repository ``ZhouYuxuanYX/Hierarchical-Speculative-Decoding``, commit
``b8575e2``, ``transformers/generation/utils.py``: ``_assisted_decoding`` with
``backward=True, clever=False, recursive=False`` (the deleted ``eval_speculative_qwen_backward.sh``,
``--backward --speculative``, of commit ``225e531``), which calls ``_speculative_sampling(...,
backward=True)`` once and then ``_forward_sampling`` in an inner loop. (At ``b8575e2`` the file
does not compile: the vectorised capping was pasted with tabs, a ``TabError``; its loop form at
commit ``f3adf7f`` compiles and computes the same running maximum.) The single-draft path
(``multidraft=1``), with p = target, q = draft, ``gamma = g`` and joint probabilities
``p(e)``, ``q(e)`` of the tokens ``e`` emitted so far *in this round*:

1. *First pass* (one target call on ``X_{1:g} ~ q``): the rule of :mod:`.hsd`,
   ``variant="listing"`` -- the full block is kept iff ``u <= r(X_{1:g})`` (uncapped), else the
   backward scan over the capped branches gives ``tau`` and one token ``Y`` from Eq. 20's
   ``norm((c_tau p_{tau+1} - q_{tau+1})_+)``; emitted ``e = (X_{1:tau}, Y)``, or the block and
   the bonus token.
2. *Forward passes* while ``len(e) < g`` (``inner_loop = new_cur_len - cur_len <
   candidate_length``): draft one token ``Z ~ q(. | e)``, call the target on ``(e, Z)``, and emit
   ``t ~ norm((p(e) p(. | e) - q(e) q(. | e))_+)`` (``_forward_sampling``: ``p_next - q_next``
   with ``p_previous``, ``q_previous`` the cumulative products over ``e``); ``Z`` is not used
   unless this pass emits the ``g``-th token (``last_step``), where ``t == Z`` also emits the
   bonus token ``b ~ p(. | e, t)``.

A round thus emits ``g`` or ``g + 1`` tokens with ``1 + max(0, g - 1 - tau)`` target calls (and
as many further draft tokens less one). ``clever=True`` (the README's "HSD (clever)",
``eval_speculative_qwen_backward_clever.sh``) skips step 2 (``if backward and (not clever)``
is the only place the flag acts): it is the single-call listing, ``"hsd_listing"``.

It is not a per-path rule: its forward passes read the target at contexts off the drafted path,
after tokens it resampled, and call it again. On a chain those laws are the chain's rows, so
it is a whole-round :class:`~spectheory.verifiers.Verifier`, ``"hsd_naive"``
(:mod:`spectheory.verifiers.hsd_naive_chain`): ``chain.protocol(T, gamma,
verifier="hsd_naive")`` gives its exact values (target calls included) and ``st.simulate`` its
Monte Carlo. Exact laws:
:func:`naive_hsd_round_law` (Fraction enumeration; the ``"hsd_naive"`` Verifier's
``round_law``, so the verdict machinery of :mod:`spectheory.analysis.verdicts` runs it); counts:
:func:`naive_hsd_round_stats` (its ``round_stats``); Monte
Carlo: :func:`sample_naive_hsd_rounds`. Played against models, one target call per pass
(:func:`~spectheory.verifiers.hsd_naive_round.play_naive_hsd_round`), it runs in the
conformance kit's multi-call protocol
(:func:`~spectheory.testing.gallery_samplers.hsd_sampler` through
:func:`~spectheory.testing.check_sampler`) and in the real decoder
(:func:`~spectheory.decoder.hsd_decode.naive_hsd_generate`). **Verdict** (``docs/sequence_rules.md``): biased; it
is lossless for ``g = 1`` (token verification) and, on binary vocabularies, ``g = 2``; the
smallest biased instances are Sun et al.'s binary example at ``g = 3`` and a 3-token i.i.d.
instance at ``g = 2``.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.verifiers.hsd_naive import naive_hsd_round_law, naive_hsd_round_stats
>>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
>>> s = naive_hsd_round_stats(p, q, 2, 2)
>>> s["tokens"], s["target_calls"], s["accepted"]
(Fraction(25, 9), Fraction(4, 3), Fraction(13, 9))
>>> naive_hsd_round_stats(p, q, 2, 3)["target_calls"]
Fraction(47, 27)
>>> law = naive_hsd_round_law(p, q, 2, 3)   # biased at g = 3: the target's p(1, 0) is 2/9 = 6/27
>>> sum(w for e, w in law.items() if e[:2] == (1, 0))
Fraction(4, 27)
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import numpy as np

from .._guards import as_rng, check_int
from .._typing import RNGLike
from .hsd import HSD_LISTING, hsd_round_law

__all__ = ["naive_hsd_round_law", "naive_hsd_round_stats", "sample_naive_hsd_rounds", "forward_law"]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


def _joint(fn: LawFn, prefix: tuple[int, ...], toks: tuple[int, ...]) -> Any:
    w: Any = 1
    for i, t in enumerate(toks):
        w = w * fn(prefix + toks[:i])[t]
    return w


def forward_law(
    target_fn: LawFn, draft_fn: LawFn, vocab_size: int, prefix: tuple[int, ...], emitted: tuple[int, ...]
) -> list[Any]:
    r"""The law of the token a forward pass emits after ``emitted``: ``norm((p(e) p(.|e) - q(e) q(.|e))_+)``.

    ``p(e)``, ``q(e)`` are the joint probabilities of ``emitted`` after ``prefix`` (the round's
    start). When the residual is zero everywhere (the authors' code then divides 0 by 0; a
    round never reaches it, since ``p(e) > q(e)`` after a resampled token) the target's
    ``p(. | e)`` is returned.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.hsd_naive import forward_law
    >>> forward_law(lambda c: [F(1, 3), F(2, 3)], lambda c: [F(2, 3), F(1, 3)], 2, (), (1,))
    [Fraction(0, 1), Fraction(1, 1)]
    """
    V = check_int(vocab_size, "vocab_size", 1)
    ctx = tuple(prefix) + tuple(emitted)
    pe, qe = _joint(target_fn, tuple(prefix), tuple(emitted)), _joint(draft_fn, tuple(prefix), tuple(emitted))
    p, q = list(target_fn(ctx)), list(draft_fn(ctx))
    plus = [max(pe * p[y] - qe * q[y], 0) for y in range(V)]
    s = sum(plus)
    return [v / s for v in plus] if s else p


def _outcomes(
    target_fn: LawFn, draft_fn: LawFn, V: int, g: int, prefix: tuple[int, ...]
) -> Iterator[tuple[tuple[int, ...], Any, int, int]]:
    """Every outcome of a round: ``(emitted, probability, target calls, drafts kept)``."""
    for e, w in hsd_round_law(target_fn, draft_fn, V, g, prefix, "listing").items():
        stack = [(e, w, 1, len(e) - 1)]
        while stack:
            e, w, calls, kept = stack.pop()
            if len(e) >= g:
                yield e, w, calls, kept
                continue
            law = forward_law(target_fn, draft_fn, V, prefix, e)
            q = list(draft_fn(prefix + e))
            for t in range(V):
                wt = w * law[t]
                if not wt:
                    continue
                if len(e) == g - 1 and q[t]:  # last step and Z == t: the bonus token too
                    pb = list(target_fn(prefix + e + (t,)))
                    for b in range(V):
                        if pb[b]:
                            stack.append((e + (t, b), wt * q[t] * pb[b], calls + 1, kept + 1))
                if len(e) < g - 1 or q[t] != 1:
                    stack.append((e + (t,), wt * (1 - q[t]) if len(e) == g - 1 else wt, calls + 1, kept))


def naive_hsd_round_law(
    target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of the tokens one naive HSD round emits, ``{emitted: probability}`` (module docstring).

    Enumerates the first pass (:func:`~spectheory.verifiers.hsd.hsd_round_law`,
    ``variant="listing"``), then every forward pass (:func:`forward_law`, the draft ``Z`` only
    at the last one); with Fraction laws the result is exact. Emitted tuples have ``gamma`` or
    ``gamma + 1`` tokens. The module docstring has an example.
    """
    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    out: dict[tuple[int, ...], Any] = {}
    for e, w, _, _ in _outcomes(target_fn, draft_fn, V, g, tuple(prefix)):
        out[e] = out.get(e, 0) + w
    return out


def naive_hsd_round_stats(
    target_fn: LawFn, draft_fn: LawFn, vocab_size: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[str, Any]:
    r"""Exact expectations of one naive HSD round: ``tokens``, ``target_calls``, ``draft_tokens``, ``accepted``.

    ``accepted`` counts drafted tokens that are emitted (the first pass's ``tau``, plus one when
    the last forward pass's draft ``Z`` equals its token); ``draft_tokens = gamma +
    target_calls - 1`` (one draft token per forward pass). The module docstring has an example.
    """
    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    tok: Any = 0
    calls: Any = 0
    kept: Any = 0
    for e, w, c, k in _outcomes(target_fn, draft_fn, V, g, tuple(prefix)):
        tok, calls, kept = tok + w * len(e), calls + w * c, kept + w * k
    return {"tokens": tok, "target_calls": calls, "draft_tokens": calls + g - 1, "accepted": kept}


def _draw(law: Sequence[float], u: float) -> int:
    c = np.cumsum(np.asarray(law, dtype=np.float64))
    return int(min(np.searchsorted(c, u * c[-1], side="right"), len(c) - 1))


def sample_naive_hsd_rounds(
    target_fn: LawFn,
    draft_fn: LawFn,
    vocab_size: int,
    gamma: int,
    n_rounds: int,
    prefix: tuple[int, ...] = (),
    rng: RNGLike = None,
) -> list[tuple[tuple[int, ...], int, int]]:
    r"""Monte Carlo: ``n_rounds`` independent naive HSD rounds after ``prefix``, in floats.

    Plays the algorithm of the module docstring with fresh uniforms: the drafts, then the first
    pass through the vectorised listing rule (``HSD_LISTING.rule`` on all rounds at once,
    independent of the enumeration), then the forward passes (``Z ~ q(. | e)`` drawn, ``t`` from
    :func:`forward_law`). Returns ``[(emitted, target calls, drafts kept)]``. The same round
    against models, one call per pass (the kit's and the decoder's form):
    :func:`~spectheory.verifiers.hsd_naive_round.play_naive_hsd_round`.

    Examples
    --------
    >>> from spectheory.verifiers.hsd_naive import sample_naive_hsd_rounds
    >>> p, q = (lambda c: [1 / 3, 2 / 3]), (lambda c: [2 / 3, 1 / 3])
    >>> out = sample_naive_hsd_rounds(p, q, 2, 3, 5, rng=0)
    >>> all(len(e) in (3, 4) and 1 <= calls <= 3 for e, calls, _ in out)
    True
    """
    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    R = check_int(n_rounds, "n_rounds", 1)
    gen = as_rng(rng)
    c0 = tuple(prefix)
    x = np.zeros((R, g), dtype=np.int64)
    t = np.zeros((R, g + 1, V))
    d = np.zeros((R, g, V))
    for r in range(R):
        for i in range(g + 1):
            ctx = c0 + tuple(int(v) for v in x[r, :i])
            t[r, i] = target_fn(ctx)
            if i < g:
                d[r, i] = draft_fn(ctx)
                x[r, i] = _draw(d[r, i], gen.random())
    tau, y = HSD_LISTING.rule(t, d, x, np.full(R, g), gen.random((R, g)), gen.random(R))
    out = []
    for r in range(R):
        e = tuple(int(v) for v in x[r, : tau[r]]) + (int(y[r]),)
        calls, kept = 1, int(tau[r])
        while len(e) < g:
            z = _draw(draft_fn(c0 + e), gen.random())
            tok = _draw(forward_law(target_fn, draft_fn, V, c0, e), gen.random())
            calls += 1
            if len(e) == g - 1 and tok == z:
                e += (tok, _draw(target_fn(c0 + e + (tok,)), gen.random()))
                kept += 1
            else:
                e += (tok,)
        out.append((e, calls, kept))
    return out

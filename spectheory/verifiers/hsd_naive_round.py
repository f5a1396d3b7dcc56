r"""Naive HSD played against models: one target call per pass, counted (the kit's and the decoder's form).

:mod:`spectheory.verifiers.hsd_naive` has the algorithm (Zhou et al., ICLR 2026, as the
authors' code runs it: ``_assisted_decoding(backward=True, clever=False)``), its exact law and
a vectorised Monte Carlo on per-context laws. Here the same round is played against two
*models*, each read through ``laws(tokens) -> [len(tokens) + 1, V]`` (one model call: the
next-token laws at the round's positions after ``tokens``), so that a caller that counts
model calls sees what the authors' loop costs: the first pass is one target call on the
``gamma`` drafts; every forward pass drafts one token ``Z ~ q(. | e)`` and calls the target on
``(e, Z)``, reading ``p(e)``, ``p(. | e)`` and (at the last pass) ``p(. | e, Z)`` from that
call's rows. A round makes ``1 + max(0, gamma - 1 - tau)`` target calls.

:func:`spectheory.testing.gallery_samplers.hsd_sampler` wraps it as a whole sampler for
:func:`spectheory.testing.check_sampler` (the multi-call protocol counts its calls), and
:func:`spectheory.decoder.hsd_decode.naive_hsd_generate` runs it in the real decoder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..laws.sampling import normalize_or, sample_categorical
from .hsd import HSD_LISTING

if TYPE_CHECKING:
    from .base import Verifier

__all__ = ["play_naive_hsd_round", "NaiveHSDRound", "RoundLaws"]


class NaiveHSDRound(NamedTuple):
    """One played naive HSD round: the tokens it emitted and what it cost."""

    emitted: tuple[int, ...]  #: ``gamma`` or ``gamma + 1`` tokens (the first pass alone: ``tau + 1``)
    target_calls: int  #: 1 (the first pass) + one per forward pass
    draft_tokens: int  #: ``gamma`` drafts + one per forward pass
    accepted: int  #: drafted tokens emitted (``tau``, plus one when the last pass's ``Z`` is kept)
    tau: int  #: the first pass's accepted count


#: ``laws(tokens) -> [len(tokens) + 1, V]``: the next-token laws at the round's positions
#: ``0..len(tokens)`` after ``tokens`` (drafted or emitted in this round), from ONE model call.
RoundLaws = Callable[[tuple[int, ...]], ArrayLike]


def _pick(law: ArrayLike, u: float) -> int:
    return int(sample_categorical(np.asarray(law, dtype=np.float64)[None], np.array([u]))[0])


def play_naive_hsd_round(
    target_laws: RoundLaws,
    draft_laws: RoundLaws,
    gamma: int,
    uniform: Callable[[], float],
    *,
    first_pass: Verifier | None = None,
    forward: bool = True,
) -> NaiveHSDRound:
    r"""Play one naive HSD round against two models, calling the target once per pass (module docstring).

    ``target_laws(tokens)`` is ONE target call: the laws ``p(. | tokens[:i])``, ``i = 0..len``,
    after the round's context (``draft_laws`` likewise for the draft); ``uniform()`` returns a
    uniform in ``[0, 1)``. Draw order: the ``gamma`` drafts (inverse CDF), the first pass's
    ``gamma + 1`` uniforms (``first_pass.rule``: ``eta``, then the final token), then per
    forward pass ``Z``, its token ``t`` and, when ``t == Z`` at the last pass, the bonus token.
    Forward passes read the target at ``(e, Z)``: ``p(e)`` and ``p(. | e)`` from that call's
    rows, ``q(e)``, ``q(. | e)`` from one draft call on ``e``.

    ``first_pass`` defaults to ``"hsd_listing"`` (the authors' code); ``forward=False`` plays
    the first pass alone (``clever=True``, one target call). With ``first_pass="hsd"``'s rule
    and ``forward=False`` the round is block verification (lossless).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.hsd_naive_round import play_naive_hsd_round
    >>> laws = lambda row: (lambda toks: np.tile(row, (len(toks) + 1, 1)))
    >>> r = play_naive_hsd_round(laws([1 / 3, 2 / 3]), laws([2 / 3, 1 / 3]), 3, np.random.default_rng(0).random)
    >>> len(r.emitted) in (3, 4), r.target_calls == 1 + max(0, 3 - 1 - r.tau)
    (True, True)
    """
    g = check_int(gamma, "gamma", 1)
    rule = (first_pass if first_pass is not None else HSD_LISTING).rule
    x: tuple[int, ...] = ()
    d = []
    for _ in range(g):
        q = np.asarray(draft_laws(x), dtype=np.float64)[-1]
        d.append(q)
        x += (_pick(q, uniform()),)
    t = np.asarray(target_laws(x), dtype=np.float64)
    eta = np.array([[uniform() for _ in range(g)]])
    tau_a, y = rule(t[None], np.array(d)[None], np.array([x]), np.array([g]), eta, np.array([uniform()]))
    tau = int(tau_a[0])
    e, calls, drafts, kept = x[:tau] + (int(y[0]),), 1, g, tau
    while forward and len(e) < g:
        qs = np.asarray(draft_laws(e), dtype=np.float64)
        z = _pick(qs[-1], uniform())
        ps = np.asarray(target_laws(e + (z,)), dtype=np.float64)
        calls, drafts = calls + 1, drafts + 1
        idx = np.arange(len(e))
        pe, qe = float(np.prod(ps[idx, list(e)])), float(np.prod(qs[idx, list(e)]))
        law, _ = normalize_or(np.maximum(pe * ps[len(e)] - qe * qs[-1], 0.0), ps[len(e)])
        tok = _pick(law, uniform())
        if len(e) == g - 1 and tok == z:  # the last pass keeps its draft: the bonus token too
            e, kept = e + (tok, _pick(ps[-1], uniform())), kept + 1
        else:
            e += (tok,)
    return NaiveHSDRound(e, calls, drafts, kept, tau)

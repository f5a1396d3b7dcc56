r"""Monte Carlo of rules that act one position at a time and draft more than one path.

:func:`simulate_positional` drives a rule that checks one draft token per position (every
emitted token is either a *check* or a *bonus* token from the target), vectorised over runs
(the Python loop runs over positions only), drawing the uniforms and delegating the decision
to a pure step. :func:`simulate_batch` uses it for batch speculative decoding with ``M``
drafts (first-token construction, :mod:`spectheory.verifiers.batch_step`), which is not a
single-path rule and so not a :class:`~spectheory.verifiers.Verifier`. Single-path rules go
through :func:`spectheory.montecarlo.simulate`. Both return one
:class:`~spectheory.montecarlo.SimulationResult`.

The protocol is that of ``docs/protocol.md``: a round at position ``n0`` drafts
``k = min(gamma, T - n0)`` tokens (``gamma=None`` means ``k = T - n0``, drafting to the
end of the horizon); a rejection ends the round; when all ``k`` are accepted and
``n0 + k < T`` a bonus token is drawn from the target if ``bonus=True``. Drafting lazily
(the next draft token is drawn when its check comes) has the same law as drafting the
``k`` tokens up front, since draft token ``i + 1`` depends only on the prefix.
Notation: p = target, q = draft.
"""

from __future__ import annotations

import numpy as np

from .._guards import check_int
from ..laws.sampling import sample_categorical as _categorical
from ..verifiers._positional import _check_gamma, per_kernel, round_length
from ..verifiers.batch_step import _batch_tables, _batch_verify_first, _check_M
from ..verifiers.rejection import optimal_rejection_law, rejection_verify, standard_acceptance
from .simulator import SimulationResult

__all__ = ["simulate_positional", "simulate_batch"]


def simulate_positional(
    chain,
    horizon,
    gamma,
    n_runs,
    rng,
    step,
    bonus=False,
    return_tokens=False,
    drafts_per_token=1,
    progress=None,
    name="positional",
):
    """Monte Carlo of a position-level rule, vectorised over runs.

    Parameters
    ----------
    chain : DecodingChain
    horizon : int
    gamma : int or None
        Draft length per round (None: to the end of the horizon).
    n_runs : int
    rng : seed or numpy Generator
    step : callable
        ``step(n, states [R], first: bool, rng) -> (tokens [R], rejected [R] bool)``: one
        check at kernel index ``n`` for runs in ``states``; ``first`` is True for the
        round's first draft token.
    bonus : bool
    return_tokens : bool
    drafts_per_token : int
        Drafted tokens counted per draft position (``M`` for batch decoding).
    progress : bool or None
        tqdm bar over positions (None: only when ``n_runs * T`` is large).
    name : str
        The rule's name, recorded in the result's ``verifier``.

    Returns
    -------
    SimulationResult
        With ``gamma = T`` when ``gamma`` is None.
    """
    T = chain.check_horizon(horizon)
    chain.require_deterministic("the positional simulator")
    gamma = _check_gamma(gamma)
    R = check_int(n_runs, "n_runs", 1)
    rng = np.random.default_rng(rng)
    kern0 = chain.initial
    state = _categorical(np.broadcast_to(kern0, (R, kern0.size)), rng.random(R))
    in_round = np.zeros(R, bool)
    bonus_due = np.zeros(R, bool)
    acc_i = np.zeros(R, np.int64)
    k_run = np.zeros(R, np.int64)
    n0_run = np.zeros(R, np.int64)
    out = {name: np.zeros(R, np.int64) for name in ("rejections", "target_calls", "draft_tokens", "accepted")}
    pos_rej = np.zeros(T, np.int64)
    G = T if gamma is None else gamma
    counts = np.zeros((R, G + 1), np.int64)
    toks = np.zeros((R, T), np.int64) if return_tokens else None
    it = range(T)
    if progress or (progress is None and R * T > 5_000_000):
        from tqdm.auto import tqdm

        it = tqdm(it, desc="positions", leave=False)
    for n in it:
        start = ~in_round & ~bonus_due
        if start.any():
            k_new = round_length(gamma, T, n)
            in_round[start] = True
            acc_i[start] = 0
            k_run[start] = k_new
            n0_run[start] = n
            out["target_calls"][start] += 1
            out["draft_tokens"][start] += k_new * drafts_per_token
        token = np.zeros(R, np.int64)
        if bonus_due.any():
            idx = np.flatnonzero(bonus_due)
            tk = chain.kernels(n)[0][state[idx]]
            token[idx] = _categorical(tk, rng.random(idx.size))
        rejected = np.zeros(R, bool)
        for first in (True, False):
            sel = in_round & ((acc_i == 0) if first else (acc_i > 0))
            if sel.any():
                idx = np.flatnonzero(sel)
                tk, rj = step(n, state[idx], first, rng)
                token[idx] = tk
                rejected[idx] = rj
        checked = in_round.copy()
        accepted = checked & ~rejected
        out["rejections"] += rejected
        pos_rej[n] = rejected.sum()
        out["accepted"] += accepted
        counts[rejected, acc_i[rejected]] += 1
        acc_i += accepted
        done = accepted & (acc_i == k_run)
        counts[done, acc_i[done]] += 1
        bonus_due[:] = False
        if bonus:
            bonus_due = done & (n0_run + k_run < T)
        in_round &= ~(rejected | done)
        if return_tokens:
            toks[:, n] = token
        state = chain.next_state[state, token]
    return SimulationResult(
        T,
        G,
        bool(bonus),
        name,
        out["target_calls"],
        out["rejections"],
        out["draft_tokens"],
        out["accepted"],
        counts,
        pos_rej,
        toks,
    )


def simulate_batch(
    chain, horizon, gamma, M, n_runs, rng=None, bonus=False, return_tokens=False, progress=None
):
    """Monte Carlo of batch speculative decoding, vectorised over runs.

    Each round start draws ``M`` first-token candidates from the draft and applies
    :func:`batch_verify_first`; the rest of the accepted sequence is checked token by
    token (:func:`~spectheory.verifiers.rejection.rejection_verify` with the standard
    rule). Only the accepted sequence's continuation is drafted (the other ``M - 1``
    continuations are never looked at, so not drawing them leaves the law unchanged);
    ``draft_tokens`` still counts ``M * k`` per round.

    Returns a :class:`~spectheory.montecarlo.SimulationResult` (``verifier = "batch(M)"``).
    """
    M = _check_M(M)

    def build(t, d):
        acc, final = _batch_tables(t, d, M)
        b = standard_acceptance(t, d)
        return d, acc, final, b, optimal_rejection_law(t, d, b)

    tables = per_kernel(chain, build)

    def step(n, states, first, rng_):
        d, acc, final, b, res = tables(n)
        R = states.size
        if first:
            cand = _categorical(
                np.broadcast_to(d[states][:, None, :], (R, M, d.shape[-1])), rng_.random((R, M))
            )
            p_acc = acc[np.arange(M)[None, :], states[:, None], cand]
            tok, rej, _ = _batch_verify_first(p_acc, cand, final[states], rng_.random((R, M)), rng_.random(R))
            return tok, rej
        x = _categorical(d[states], rng_.random(R))
        return rejection_verify(b[states, x], res[states], x, rng_.random(R), rng_.random(R))

    return simulate_positional(
        chain,
        horizon,
        gamma,
        n_runs,
        rng,
        step,
        bonus=bonus,
        return_tokens=return_tokens,
        drafts_per_token=M,
        progress=progress,
        name=f"batch({M})",
    )

r"""Exact laws of block verification (Sun et al. 2024, Algorithm 2) by enumerating draft blocks.

The rule itself (:func:`~spectheory.verifiers.block_scan.block_weights`,
:class:`~spectheory.verifiers.block.BlockVerifier`) is in :mod:`spectheory.verifiers.block`;
here every draft block ``X_1..X_k`` of a round is enumerated to give exact values:

* :func:`block_round_transition`: the round transition ``Q [S, k+1, S]`` on a
  :class:`~spectheory.chain.DecodingChain` (vectorised over the ``S V**k`` blocks), for
  :func:`spectheory.exact.round_recursion`, also for other backward-scan rules (``weights=``);
* :func:`round_accepted_means`: block and token verification's expected accepted drafts of a
  round, per start state;
* :func:`block_emission_law`: the law of one round by plain loops over any number type
  (``fractions.Fraction`` gives exact rationals), independent of the vectorised code.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._guards import check_int
from .block_scan import block_weights

if TYPE_CHECKING:
    from .._protocols import ChainLike

__all__ = ["block_round_transition", "round_accepted_means", "block_emission_law", "MAX_BLOCK_ELEMENTS"]

#: Largest ``S * V**k * (k + 1) * V`` handled by the exact enumeration in
#: :func:`block_round_transition`.
MAX_BLOCK_ELEMENTS = 30_000_000


def _enumerate_blocks(chain, n0, k, with_bonus_row):
    """All ``V**k`` draft blocks from every state: laws along each path (vectorised)."""
    chain.require_deterministic(
        "block verification's exact round law (Monte Carlo supports stochastic chains)"
    )
    S, V = chain.n_states, chain.vocab_size
    B = V**k
    if S * B * (k + 1) * V > MAX_BLOCK_ELEMENTS:
        raise ValueError(
            f"k: exact block enumeration needs S * V**k * (k+1) * V = {S * B * (k + 1) * V} "
            f"elements (S={S}, V={V}, k={k}), above {MAX_BLOCK_ELEMENTS}; "
            "use Monte Carlo (simulate(..., verifier='block')) or smaller k"
        )
    blocks = np.array(list(itertools.product(range(V), repeat=k)), dtype=np.int64).reshape(B, k)
    N = S * B
    x = np.tile(blocks, (S, 1))  # [N, k]
    s0 = np.repeat(np.arange(S), B)
    states = np.empty((N, k + 1), dtype=np.int64)
    states[:, 0] = s0
    t_laws = np.empty((N, k + 1, V))
    d_laws = np.empty((N, k, V))
    dprob = np.ones(N)
    for i in range(k):
        tk, dk = chain.kernels(n0 + i)
        t_laws[:, i] = tk[states[:, i]]
        d_laws[:, i] = dk[states[:, i]]
        dprob *= d_laws[np.arange(N), i, x[:, i]]
        states[:, i + 1] = chain.next_state[states[:, i], x[:, i]]
    if with_bonus_row:
        t_laws[:, k] = chain.kernels(n0 + k)[0][states[:, k]]
    else:
        t_laws[:, k] = t_laws[:, k - 1]  # unused placeholder law (no bonus is emitted)
    return x, states, t_laws, d_laws, dprob


def block_round_transition(
    chain: ChainLike, n0: int, k: int, emit_bonus: bool, weights: Callable[..., Any] | None = None
) -> np.ndarray:
    r"""Exact round transition of block verification, by enumerating the ``V**k`` draft blocks.

    ``Q[s, j, s'] = P(tau = j, state s' after the round's last emitted token | round starts
    at position n0 in state s)``. The round emits ``X_1..X_j`` and one more token if
    ``j < k``, and ``k + emit_bonus`` tokens if ``j == k``.

    Parameters
    ----------
    chain : DecodingChain
    n0 : int
        Tokens already generated (kernel index of the first draft).
    k : int >= 1
        Drafts in this round.
    emit_bonus : bool
        Whether a bonus token is emitted when all ``k`` drafts are accepted.
    weights : callable, optional
        ``weights(target_laws, draft_laws, draft_tokens, k) -> (h, tau_law, final_weights)``
        of another whole-round rule decided by a backward scan (default
        :func:`block_weights`; :func:`spectheory.verifiers.hsd.hsd_weights`).

    Returns
    -------
    ndarray, shape (S, k+1, S)

    Raises
    ------
    ValueError
        When ``S * V**k * (k+1) * V`` exceeds :data:`MAX_BLOCK_ELEMENTS`.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.verifiers.block_exact import block_round_transition
    >>> chain = st.DecodingChain.iid([1/3, 2/3], [2/3, 1/3])
    >>> Q = block_round_transition(chain, 0, 2, True)
    >>> round(float((Q[0].sum(-1) * [0, 1, 2]).sum() * 9), 10)   # 11/9 accepted (Sun et al.)
    11.0
    """
    n0 = check_int(n0, "n0", 0)
    k = check_int(k, "k", 1)
    if chain.max_horizon is not None and n0 + k + bool(emit_bonus) > chain.max_horizon:
        raise ValueError(
            f"n0, k: positions {n0}..{n0 + k + bool(emit_bonus) - 1} exceed max_horizon {chain.max_horizon}"
        )
    S = chain.n_states
    x, states, t_laws, d_laws, dprob = _enumerate_blocks(chain, n0, k, bool(emit_bonus))
    _, tau_law, final = (block_weights if weights is None else weights)(t_laws, d_laws, x, k)
    mass = dprob[:, None] * tau_law  # [N, k+1]
    Q = np.zeros((S, k + 1, S))
    s0 = states[:, 0]
    for j in range(k + 1):
        if j == k and not emit_bonus:
            np.add.at(Q, (s0, j, states[:, k]), mass[:, k])
            continue
        nxt = chain.next_state[states[:, j]]  # [N, V]
        flat = (s0[:, None] * (k + 1) + j) * S + nxt
        Q += np.bincount(
            flat.ravel(), weights=(mass[:, j, None] * final[:, j]).ravel(), minlength=S * (k + 1) * S
        ).reshape(S, k + 1, S)
    return Q


def round_accepted_means(chain: ChainLike, n0: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Expected accepted drafts of one round, per start state: ``(block [S], token [S])``.

    Both by enumerating the draft blocks: block verification's :math:`E[\tau]`, and token
    verification's :math:`\sum_{i=1}^k P(X_1..X_i \text{ accepted}) = \sum_{blocks} q(X)
    \sum_i \prod_{j \le i} \min(1, p_j(X_j)/q_j(X_j))`.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.verifiers.block_exact import round_accepted_means
    >>> b, tk = round_accepted_means(st.DecodingChain.iid([1/3, 2/3], [2/3, 1/3]), 0, 2)
    >>> round(float(b[0]) * 9, 10), round(float(tk[0]) * 9, 10)
    (11.0, 10.0)
    """
    n0 = check_int(n0, "n0", 0)
    k = check_int(k, "k", 1)
    S = chain.n_states
    x, states, t_laws, d_laws, dprob = _enumerate_blocks(chain, n0, k, False)
    _, tau_law, _ = block_weights(t_laws, d_laws, x, k)
    s0 = states[:, 0]
    block = np.bincount(s0, weights=dprob * (tau_law @ np.arange(k + 1)), minlength=S)
    N = x.shape[0]
    tx = t_laws[np.arange(N)[:, None], np.arange(k)[None], x]
    dx = d_laws[np.arange(N)[:, None], np.arange(k)[None], x]
    acc = np.where(dx > 0, np.minimum(1.0, tx / np.where(dx > 0, dx, 1.0)), 0.0)
    token = np.bincount(s0, weights=dprob * np.cumprod(acc, 1).sum(1), minlength=S)
    return block, token


def block_emission_law(
    target_fn: Callable[[tuple[int, ...]], Any],
    draft_fn: Callable[[tuple[int, ...]], Any],
    vocab_size: int,
    gamma: int,
    prefix: tuple[int, ...] = (),
) -> dict:
    r"""Exact law of one block-verification round by plain enumeration (Fraction-friendly).

    A slow, loop-by-loop implementation of the algorithm, independent of the vectorised
    code, that works with any number type (``fractions.Fraction`` gives exact rationals).

    Parameters
    ----------
    target_fn, draft_fn : callable
        ``fn(prefix_tuple) -> sequence of V probabilities``.
    vocab_size, gamma : int
    prefix : tuple
        Context before the round.

    Returns
    -------
    dict
        ``{emitted tokens (tuple): probability}``; an emitted tuple has ``tau + 1`` tokens
        (accepted drafts then the residual or bonus token).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.block_exact import block_emission_law
    >>> law = block_emission_law(lambda c: [F(1, 3), F(2, 3)], lambda c: [F(2, 3), F(1, 3)], 2, 2)
    >>> sum(p * (len(s) - 1) for s, p in law.items())
    Fraction(11, 9)
    """
    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    out: dict = {}
    for block in itertools.product(range(V), repeat=g):
        ctx = [tuple(prefix) + block[:i] for i in range(g + 1)]
        tl = [list(target_fn(c)) for c in ctx]
        dl = [list(draft_fn(c)) for c in ctx[:g]]
        qx = 1
        for i in range(g):
            qx *= dl[i][block[i]]
        if qx == 0:
            continue
        w = [1]
        for i in range(g):
            w.append(min(1, w[-1] * tl[i][block[i]] / dl[i][block[i]]))
        h = []
        for i in range(1, g):
            z = sum(max(w[i] * tl[i][y] - dl[i][y], 0) for y in range(V))
            den = z + 1 - w[i]
            h.append(1 if den == 0 else z / den)
        h.append(w[g])
        for j in range(g + 1):
            pj = h[j - 1] if j >= 1 else 1
            for i in range(j + 1, g + 1):
                pj *= 1 - h[i - 1]
            if pj == 0:
                continue
            if j == g:
                weights = tl[g]
            else:
                weights = [max(w[j] * tl[j][y] - dl[j][y], 0) for y in range(V)]
            tot = sum(weights)
            for y in range(V):
                if weights[y] == 0:
                    continue
                key = block[:j] + (y,)
                out[key] = out.get(key, 0) + qx * pj * weights[y] / tot
    return out

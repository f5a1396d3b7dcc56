r"""Block verification (Sun, Mendlovic, Leviathan, Aharoni, Beirami, Ro, Suresh 2024,
"Block Verification Accelerates Speculative Decoding", arXiv 2403.10444, Algorithm 2).

Notation: p = target, q = draft (code says ``target``/``draft``). The draft proposes a
block ``X_1..X_g`` autoregressively; with the conditionals ``p_i = p(. | X_<i)`` and
``q_i = q(. | X_<i)`` (``p_{g+1}`` is the law after the whole block), block verification
decides on the block jointly instead of token by token::

    w_0 = 1
    for i = 1..g:  w_i = min(1, w_{i-1} p_i(X_i) / q_i(X_i))
    for i = 1..g-1:
        Z_{i+1} = sum_x max(w_i p_{i+1}(x) - q_{i+1}(x), 0)
        h_i = Z_{i+1} / (Z_{i+1} + 1 - w_i)       (1 if the denominator is 0)
    h_g = w_g
    eta_i ~ Bernoulli(h_i) independently; tau = max{i : eta_i = 1} (0 if none)
    emit X_1..X_tau, then
        tau = g:  a bonus token from p_{g+1}
        tau < g:  one token from norm(max(w_tau p_{tau+1} - q_{tau+1}, 0))

(The paper writes ``p_i`` for our ``w_i``; we rename it to keep ``p`` for the target.)
Sun et al. prove it lossless (the emitted sequence, continued by target sampling, has the
target's law), never worse than token verification in expected accepted tokens for every
context, and optimal among valid verifiers. Here those claims are checked, not assumed:
the tests enumerate every draft block and every outcome (with ``fractions.Fraction`` on
tiny cases) and compare with the target's law and with token verification.

Uniform convention: ``eta_i = 1`` iff ``u_i < h_i`` for ``u_i`` uniform on ``[0, 1)``.

As a :class:`~spectheory.verifiers.base.Verifier` (:class:`BlockVerifier`, registered as
``"block"``): the pure rule on given uniforms, the exact round transition ``Q [S, k+1, S]``
(:func:`block_round_transition`) for :func:`spectheory.exact.round_recursion`, and the torch
rule :func:`spectheory.verifiers.torch_forms.block_verify`.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int
from ..laws.sampling import normalize_or, safe_ratio
from .base import Verifier, check_round_arrays, register_verifier
from .multidraft import _categorical

if TYPE_CHECKING:
    import torch

    from ..chain import DecodingChain
    from .torch_forms import Verdict

__all__ = [
    "BlockVerifier",
    "BLOCK",
    "block_weights",
    "block_round_transition",
    "round_accepted_means",
    "block_emission_law",
    "backward_scan_law",
    "MAX_BLOCK_ELEMENTS",
]

#: Largest ``S * V**k * (k + 1) * V`` handled by the exact enumeration in
#: :func:`block_round_transition`.
MAX_BLOCK_ELEMENTS = 30_000_000


def block_weights(
    target_laws: np.ndarray, draft_laws: np.ndarray, draft_tokens: np.ndarray, k: ArrayLike
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Exact per-block quantities of block verification, vectorised over runs.

    Parameters
    ----------
    target_laws : array, shape (R, g+1, V)
        Row ``i`` is :math:`p_{i+1}`, the target law at the ``(i+1)``-th drafted position;
        row ``k[r]`` is the law after the block (bonus).
    draft_laws : array, shape (R, g, V)
        Row ``i`` is :math:`q_{i+1}`.
    draft_tokens : int array, shape (R, g)
    k : int array, shape (R,) (or scalar)
        Number of drafts that count per run (``1 <= k <= g``); later slots are padding.

    Returns
    -------
    h : ndarray, shape (R, g)
        Stopping probabilities :math:`h_1..h_g` (0 beyond ``k``).
    tau_law : ndarray, shape (R, g+1)
        :math:`P(\tau = j \mid \text{block})` for ``j = 0..g`` (0 beyond ``k``).
    final_weights : ndarray, shape (R, g+1, V)
        Law of the token emitted after :math:`X_1..X_j` when :math:`\tau = j`: the residual
        ``norm(max(w_j p_{j+1} - q_{j+1}, 0))`` for ``j < k`` and :math:`p_{k+1}` for ``j = k``.
    """
    t, d, x, kk = check_round_arrays(target_laws, draft_laws, draft_tokens, k)
    R, g = d.shape[:2]
    rows = np.arange(R)
    w = np.ones((R, g + 1))
    for i in range(1, g + 1):
        xi = x[:, i - 1]
        tx = t[rows, i - 1, xi]
        dx = d[rows, i - 1, xi]
        with np.errstate(over="ignore", invalid="ignore"):  # p/q may overflow to inf
            ratio = safe_ratio(tx, dx, 0.0)
            prev = w[:, i - 1]
            # a zero prefix weight stays zero (0 * inf would be NaN)
            w[:, i] = np.where(prev > 0, np.minimum(1.0, prev * ratio), 0.0)
    h = np.zeros((R, g))
    final = t.copy()
    for j in range(0, g):
        ex = np.maximum(w[:, j, None] * t[:, j] - d[:, j], 0.0)  # residual weights after j
        final[:, j], mass = normalize_or(ex, t[:, j])
        if j >= 1:
            den = mass + 1.0 - w[:, j]
            hj = np.where(den > 0, mass / np.where(den > 0, den, 1.0), 1.0)
            h[:, j - 1] = np.where(j < kk, np.clip(hj, 0.0, 1.0), 0.0)
    h[rows, kk - 1] = w[rows, kk]
    final[rows, kk] = t[rows, kk]
    return h, backward_scan_law(h, kk), final


def backward_scan_law(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    r"""Law of :math:`\tau = \max\{i \le k : \eta_i = 1\}` (0 if none) for independent
    :math:`\eta_i \sim \mathrm{Bernoulli}(h_i)`: :math:`P(\tau = j) = h_j \prod_{i=j+1}^k (1 - h_i)`,
    :math:`h_0 := 1`. Shapes: ``h [R, g]`` (``h[:, i-1] = h_i``), ``k [R]``; returns ``[R, g+1]``
    (0 beyond ``k``). The backward scan of block verification and of HSD (:mod:`.hsd`).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.verifiers.block import backward_scan_law
    >>> backward_scan_law(np.array([[0.5, 0.5]]), np.array([2])).tolist()
    [[0.25, 0.25, 0.5]]
    """
    R, g = h.shape
    idx = np.arange(g + 1)[None, :]
    h_ext = np.concatenate([np.ones((R, 1)), h], 1)  # [R, g+1], h_ext[:, j] = h_j
    one_minus = np.where(idx[:, 1:] <= k[:, None], 1.0 - h, 1.0)  # [R, g]
    tail = np.ones((R, g + 1))
    for j in range(g - 1, -1, -1):
        tail[:, j] = tail[:, j + 1] * one_minus[:, j]
    return np.where(idx <= k[:, None], h_ext * tail, 0.0)


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
    chain: DecodingChain, n0: int, k: int, emit_bonus: bool, weights: Callable[..., Any] | None = None
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
    >>> from spectheory.verifiers.block import block_round_transition
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


def round_accepted_means(chain: DecodingChain, n0: int, k: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Expected accepted drafts of one round, per start state: ``(block [S], token [S])``.

    Both by enumerating the draft blocks: block verification's :math:`E[\tau]`, and token
    verification's :math:`\sum_{i=1}^k P(X_1..X_i \text{ accepted}) = \sum_{blocks} q(X)
    \sum_i \prod_{j \le i} \min(1, p_j(X_j)/q_j(X_j))`.

    Examples
    --------
    >>> import spectheory as st
    >>> from spectheory.verifiers.block import round_accepted_means
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
    >>> from spectheory.verifiers.block import block_emission_law
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


class BlockVerifier(Verifier):
    r"""Block verification as a :class:`~spectheory.verifiers.base.Verifier` (lossless).

    The pure rule: ``tau = max{i <= k : u_accept[:, i-1] < h_i}`` (0 if none; the uniforms
    play the role of ``eta``); the final token is sampled from ``final_weights[:, tau]``
    (residual or bonus law, :func:`block_weights`) by inverse CDF with ``u_final``. Exact
    values: :func:`block_round_transition` (whole-round rule).

    Examples
    --------
    Paper's binary example (p = (1/3, 2/3), q = (2/3, 1/3), g = 2), draft block (1, 0):
    ``w_1 = 1``, ``Z_2 = sum_x max(p(x) - q(x), 0) = 1/3``, so ``h_1 = 1``; ``w_2 = h_2 = 1/2``.
    With ``eta = (0.9, 0.5)`` only ``eta_1`` fires: ``tau = 1``, and the token after ``X_1``
    comes from ``norm(max(w_1 p - q, 0)) = (0, 1)``.

    >>> import numpy as np
    >>> from spectheory.verifiers import get_verifier
    >>> t = np.tile([1/3, 2/3], (1, 3, 1)); d = np.tile([2/3, 1/3], (1, 2, 1))
    >>> tau, token = get_verifier("block").rule(t, d, [[1, 0]], [2], [[0.9, 0.5]], [0.0])
    >>> tau.tolist(), token.tolist()
    ([1], [1])
    """

    name = "block"
    lossless = True

    def _rule(self, t, d, x, kk, eta, u_final):
        R, g = x.shape
        h, _, final = block_weights(t, d, x, kk)
        fired = eta < h  # h = 0 beyond k
        last = g - np.argmax(fired[:, ::-1], axis=1)
        tau = np.where(fired.any(1), last, 0)
        token = _categorical(final[np.arange(R), tau], u_final)
        return tau.astype(np.int64), token

    def round_transition(self, chain: DecodingChain) -> Callable[[int, int, bool], np.ndarray]:
        return lambda n0, k, emit_bonus: block_round_transition(chain, n0, k, emit_bonus)

    def torch_rule(
        self,
        target_probs: torch.Tensor,
        draft_probs: torch.Tensor,
        draft_tokens: torch.Tensor,
        k: torch.Tensor,
        u_accept: torch.Tensor,
        u_emit: torch.Tensor,
        allow_bonus: torch.Tensor,
    ) -> Verdict:
        from .torch_forms import block_verify

        return block_verify(target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus)


#: The registered instance (``get_verifier("block")``).
BLOCK = register_verifier(BlockVerifier())

r"""The multi-step objective: exact expected target calls, differentiable in the draft.

:func:`expected_calls_torch` is the phase recursion of :func:`spectheory.exact.phase_recursion`
for token verification, written in torch so that autograd differentiates it: with
``A = op(min(p, q))``, ``R = op((p - q)^+)``, ``P = op(p)`` (``op(m)[s, s'] = sum_x m[s, x]
K(s' | s, x)``) and ``Q_n[i, s]`` the mass at position ``n`` in phase ``i`` (drafts of the
round accepted so far),

.. math::
    C = \sum_{n<T} \mathbf 1^\top Q_n[0], \qquad
    Q_{n+1}[i+1] = Q_n[i] A, \qquad Q_{n+1}[0] = \Big(\sum_{i<\gamma} Q_n[i]\Big) R + Q_n[\gamma] P

(bonus on; bonus off moves ``Q_n[gamma]`` into ``Q_n[0]`` first). Tokens per call are
``T / C``. :func:`expected_calls_gradient` is the same gradient by the adjoint recursion
derived in ``docs/draft_objectives.md`` (numpy, no autograd):

.. math::
    \frac{\partial C}{\partial q(x|s)} = \mathbf 1[q(x|s) < p(x|s)] \sum_{n<T} \sum_{i<\gamma}
    W_n[i, s] \sum_{s'} K(s'|s, x) \big(\lambda_{n+1}[i+1, s'] - \lambda_{n+1}[0, s']\big),

with ``W_n`` the checked mass and ``lambda_n`` the expected calls still to come.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_law, check_bool, check_int

if TYPE_CHECKING:
    import torch

    from .._protocols import ChainLike

__all__ = ["transition_tensor", "expected_calls_torch", "expected_calls_gradient", "calls_and_gradient"]


def transition_tensor(chain: ChainLike) -> np.ndarray:
    """Dense ``K[s, x, s']`` = P(next state ``s'`` | state ``s``, token ``x``), shape ``[S, V, S]``."""
    S, V = chain.n_states, chain.vocab_size
    return chain.transition_law.toarray().reshape(S, V, S)


def _check(chain: ChainLike, horizon: int, gamma: int) -> tuple[int, int]:
    if not chain.is_homogeneous:
        raise ValueError("chain: the multi-step objective needs a homogeneous chain (2-d kernels)")
    return chain.check_horizon(horizon), check_int(gamma, "gamma", 1)


def expected_calls_torch(
    chain: ChainLike, draft: torch.Tensor, horizon: int, gamma: int, bonus: bool = True
) -> torch.Tensor:
    r"""Expected target calls of one generation of ``horizon`` tokens with draft kernel ``draft``.

    Parameters
    ----------
    chain : DecodingChain
        Homogeneous; its target, initial law and transitions are used (its draft is not).
    draft : torch.Tensor, shape (S, V)
        Draft kernel (rows laws), float64; gradients flow to it.
    horizon, gamma : int
    bonus : bool

    Returns
    -------
    torch.Tensor
        A scalar, equal to ``chain.protocol(horizon, gamma, bonus=bonus).target_calls`` for the
        chain with this draft (to rounding); tokens per call are ``horizon / calls``.

    Examples
    --------
    >>> import numpy as np, torch, spectheory as st
    >>> chain = st.DecodingChain.random(3, concentration=1.0, rng=0)
    >>> calls = expected_calls_torch(chain, torch.tensor(np.array(chain.draft)), 8, 2)
    >>> bool(abs(float(calls) - chain.protocol(8, 2).target_calls) < 1e-12)
    True
    """
    import torch

    T, G = _check(chain, horizon, gamma)
    bonus = check_bool(bonus, "bonus")
    S, V = chain.n_states, chain.vocab_size
    if tuple(draft.shape) != (S, V):
        raise ValueError(f"draft: expected shape ({S}, {V}), got {tuple(draft.shape)}")
    p = torch.tensor(np.array(chain.target), dtype=draft.dtype)
    K = torch.as_tensor(transition_tensor(chain), dtype=draft.dtype)
    A = torch.einsum("sx,sxt->st", torch.minimum(p, draft), K)
    R = torch.einsum("sx,sxt->st", torch.clamp(p - draft, min=0.0), K)
    P = torch.einsum("sx,sxt->st", p, K)
    zero = torch.zeros(S, dtype=draft.dtype)
    rows: list[Any] = [torch.tensor(np.array(chain.initial), dtype=draft.dtype)] + [zero] * G
    calls = torch.zeros((), dtype=draft.dtype)
    for _ in range(T):
        if not bonus:
            rows = [rows[0] + rows[G]] + rows[1:G] + [zero]
        calls = calls + rows[0].sum()
        live = torch.stack(rows[:G])
        acc = live @ A
        first = live.sum(0) @ R + (rows[G] @ P if bonus else 0.0)
        rows = [first] + list(acc.unbind(0))
    return calls


def expected_calls_gradient(
    chain: ChainLike, horizon: int, gamma: int, bonus: bool = True, draft: ArrayLike | None = None
) -> np.ndarray:
    r"""``dC / dq(x | s)``, shape ``[S, V]``: the gradient of the expected target calls in the
    draft law, by the adjoint (backward) recursion of ``docs/draft_objectives.md``.

    The derivative is one-sided where ``q(x|s) = p(x|s)``; this returns the side of ``q``
    decreasing (the indicator ``q < p`` is taken as 0 there). ``draft`` defaults to the chain's.

    Examples
    --------
    >>> import spectheory as st
    >>> chain = st.DecodingChain.iid([0.5, 0.5], [0.8, 0.2])
    >>> g = expected_calls_gradient(chain, 4, 1)
    >>> bool(g[0, 0] == 0.0 and g[0, 1] < 0.0)    # more draft mass on the under-covered token: fewer calls
    True
    """
    T, G = _check(chain, horizon, gamma)
    bonus = check_bool(bonus, "bonus")
    q = chain.draft if draft is None else as_law(draft, "draft", min_ndim=2)
    if q.shape != chain.target.shape:
        raise ValueError(f"draft: expected shape {chain.target.shape}, got {q.shape}")
    return calls_and_gradient(chain, q, T, G, bonus, transition_tensor(chain))[1]


def calls_and_gradient(
    chain: ChainLike, q: np.ndarray, T: int, G: int, bonus: bool, K: np.ndarray
) -> tuple[float, np.ndarray]:
    """``(C, dC/dq)`` for draft kernel ``q`` (checked arguments; ``K`` = :func:`transition_tensor`)."""
    p = chain.target
    A = np.einsum("sx,sxt->st", np.minimum(p, q), K)
    R = np.einsum("sx,sxt->st", np.clip(p - q, 0.0, None), K)
    P = np.einsum("sx,sxt->st", p, K)
    S = chain.n_states
    # forward: the checked mass W_n[i] (phases 0..G-1, after the bonus-off merge)
    W = np.zeros((T, G, S))
    Q = np.zeros((G + 1, S))
    Q[0] = chain.initial
    for n in range(T):
        if not bonus:
            Q[0] += Q[G]
            Q[G] = 0.0
        W[n] = Q[:G]
        nxt = np.zeros_like(Q)
        nxt[1:] = Q[:G] @ A
        nxt[0] = Q[:G].sum(0) @ R + (Q[G] @ P if bonus else 0.0)
        Q = nxt
    # backward: lam[n][i, s] = expected calls at positions >= n from unit mass in phase i at s
    lam = np.zeros((G + 1, S))
    gA = np.zeros((S, S))
    gR = np.zeros((S, S))
    for n in range(T - 1, -1, -1):
        nxt = lam
        gA += W[n].T @ nxt[1:]  # [S, S] summed over phases: W_n[i, s] lam_{n+1}[i+1, s']
        gR += np.outer(W[n].sum(0), nxt[0])
        lam = np.empty_like(nxt)
        lam[:G] = (A @ nxt[1:].T).T + (R @ nxt[0])[None, :]
        lam[0] += 1.0
        lam[G] = P @ nxt[0] if bonus else lam[0]
    # chain rule through A = op(min(p, q)) and R = op((p - q)^+)
    below = q < p
    grad = below * (np.einsum("sxt,st->sx", K, gA) - np.einsum("sxt,st->sx", K, gR))
    return float(W[:, 0].sum()), grad

"""The torch forms of the token and block rules (imported only when a Verifier's ``torch_rule``
runs, so :mod:`spectheory.verifiers` imports without torch), as pure functions of given uniforms.

Notation: ``target`` = p, ``draft`` = q (the model laws after temperature/top-k/top-p).
For a batch of ``B`` sequences and a round of at most ``K`` draft tokens, a rule receives

- ``target_probs`` ``[B, K+1, V]``: the target's laws at the ``K+1`` positions of the round
  (the last one is the bonus position);
- ``draft_probs`` ``[B, K, V]``: the draft's laws the draft tokens were sampled from;
- ``draft_tokens`` ``[B, K]``; ``k`` ``[B]``: the number of real draft tokens of each row
  (slots ``>= k[b]`` are padding and ignored; ``k[b] = 0`` means "row inactive");
- ``u_accept`` ``[B, K]`` and ``u_emit`` ``[B]``: uniforms in ``[0, 1)``;
- ``allow_bonus`` ``[B]`` bool: whether a bonus token may follow a fully accepted round
  (the protocol allows it iff ``bonus=True`` and tokens remain after the ``k`` drafts).

It returns a :class:`Verdict`. No random numbers are drawn here, so every rule can be
checked with hand-picked uniforms. All arithmetic is float64. These are the torch forms of
the registered :class:`~spectheory.verifiers.Verifier` objects ``"token"`` and ``"block"``
(their ``torch_rule``); the decoder reaches them only through the Verifier.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..laws.torch_sampling import U_MAX, draw_columns, f64, sample_from_uniform

__all__ = ["Verdict", "U_MAX", "draw_columns", "f64", "sample_from_uniform"]


class Verdict(NamedTuple):
    """Outcome of a round, per row: ``n_accepted`` [B] draft tokens accepted (a prefix),
    ``next_token`` [B] the residual or bonus token (``-1`` where none is emitted),
    ``rejected`` [B] bool (the round ended with a rejection)."""

    n_accepted: torch.Tensor
    next_token: torch.Tensor
    rejected: torch.Tensor


def _gather_pos(x: torch.Tensor, idx: torch.Tensor, clamp: bool = True) -> torch.Tensor:
    """``x[b, idx[b]]`` for ``x`` of shape ``[B, K, V]`` -> ``[B, V]`` (``clamp``: indices past
    the last position read the last one; without it they must lie in range)."""
    if clamp:
        idx = idx.clamp(0, x.shape[1] - 1)
    return x.gather(1, idx.view(-1, 1, 1).expand(-1, 1, x.shape[-1])).squeeze(1)


def _emit(
    weights: torch.Tensor, fallback: torch.Tensor, u_emit: torch.Tensor, emit: torch.Tensor
) -> torch.Tensor:
    """Sample ``normalize(weights)`` (or ``fallback`` where weights have no mass) if ``emit``."""
    mass = weights.sum(-1, keepdim=True)
    law = torch.where(mass > 0, weights, fallback)
    token = sample_from_uniform(law, u_emit)
    return torch.where(emit, token, -1)


def token_verify(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    draft_tokens: torch.Tensor,
    k: torch.Tensor,
    u_accept: torch.Tensor,
    u_emit: torch.Tensor,
    allow_bonus: torch.Tensor,
) -> Verdict:
    """Standard token-level speculative verification (Leviathan et al. 2023; Chen et al. 2023).

    Pseudo-code, per row::

        for i in 0..k-1:                       # left to right
            x = draft_tokens[i]
            if u_accept[i] * draft[i](x) < target[i](x):  # prob. min(1, target/draft)
                accept x
            else:
                emit inverse_cdf(normalize(max(target[i] - draft[i], 0)), u_emit); stop
        if all k accepted and allow_bonus: emit inverse_cdf(target[k], u_emit)

    The comparison ``u * draft(x) < target(x)`` is the ratio test without a division: a
    token with ``target >= draft`` is always accepted (``u < 1``) and one with
    ``target(x) = 0`` never. Greedy (one-hot laws) therefore accepts iff the draft token is
    the target's argmax, and the residual is the target's one-hot. A residual with no mass
    (only when ``target == draft`` up to rounding) falls back to ``target``.

    Examples
    --------
    >>> import torch
    >>> t = torch.tensor([[[0.5, 0.5], [0.9, 0.1]]], dtype=torch.float64)  # K = 1
    >>> d = torch.tensor([[[0.2, 0.8]]], dtype=torch.float64)
    >>> x = torch.tensor([[1]])  # target/draft = 0.625 at x = 1
    >>> k = torch.tensor([1]); bonus = torch.tensor([True])
    >>> token_verify(t, d, x, k, torch.tensor([[0.6]]), torch.tensor([0.3]), bonus)[:2]
    (tensor([1]), tensor([0]))
    >>> token_verify(t, d, x, k, torch.tensor([[0.7]]), torch.tensor([0.3]), bonus)[:2]
    (tensor([0]), tensor([0]))
    """
    t = f64(target_probs)
    d = f64(draft_probs)
    x = draft_tokens.unsqueeze(-1)  # [B, K, 1]: gathers from t's first K positions as well
    t_x = t.gather(-1, x)
    d_x = d.gather(-1, x)
    ok = f64(u_accept)[..., None] * d_x < t_x  # [B, K, 1]
    # the accepted prefix: leading passes, at most k (slots >= k are padding)
    n = torch.minimum(torch.cumprod(ok, dim=1).sum(dim=(1, 2)), k)  # a bool cumprod is int64
    rejected = n < k
    t_n = _gather_pos(t, n, clamp=False)  # n <= K: t has K + 1 positions
    d_n = _gather_pos(d, n) * rejected[:, None]  # n = K (clamped to K - 1): no rejection
    weights = torch.clamp(t_n - d_n, min=0.0)
    emit = rejected | (allow_bonus & (k > 0))
    return Verdict(n, _emit(weights, t_n, u_emit, emit), rejected)


def block_verify(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    draft_tokens: torch.Tensor,
    k: torch.Tensor,
    u_accept: torch.Tensor,
    u_emit: torch.Tensor,
    allow_bonus: torch.Tensor,
) -> Verdict:
    """Block verification (Sun et al., "Block Verification Accelerates Speculative Decoding").

    Pseudo-code, per row with ``g = k`` draft tokens ``X_1..X_g`` (1-based)::

        p_0 = 1;  p_i = min(1, p_{i-1} * target_i(X_i) / draft_i(X_i))          i = 1..g
        Z_{i+1} = sum_x max(p_i * target_{i+1}(x) - draft_{i+1}(x), 0)         i = 1..g-1
        h_i = Z_{i+1} / (Z_{i+1} + 1 - p_i)  (1 if the denominator is 0);  h_g = p_g
        eta_i = [u_accept[i] < h_i];  tau = largest i with eta_i (0 if none)
        accept X_1..X_tau; then
        if tau < g: emit from normalize(max(p_tau * target_{tau+1} - draft_{tau+1}, 0))
        elif allow_bonus: emit from target_{g+1}

    Lossless and never fewer expected accepted tokens than :func:`token_verify`.

    Examples
    --------
    Greedy-like one-hot laws: the first two drafts agree with the target, the third not.

    >>> import torch
    >>> eye = torch.eye(3, dtype=torch.float64)
    >>> t = eye[[0, 1, 2, 0]][None]; d = eye[[0, 1, 0]][None]
    >>> x = torch.tensor([[0, 1, 0]]); k = torch.tensor([3])
    >>> u = torch.full((1, 3), 0.5); v = torch.tensor([0.5])
    >>> block_verify(t, d, x, k, u, v, torch.tensor([True]))[:2]
    (tensor([2]), tensor([2]))
    """
    t = f64(target_probs)
    d = f64(draft_probs)
    B, K = d.shape[:2]
    slots = torch.arange(K, device=d.device)
    in_round = slots[None, :] < k[:, None]
    t_x = t[:, :K].gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)
    d_x = d.gather(-1, draft_tokens.unsqueeze(-1)).squeeze(-1)
    ratio = torch.where(in_round & (d_x > 0), t_x / torch.where(d_x > 0, d_x, 1.0), 0.0)
    p = torch.empty_like(ratio)  # p[:, i] = p_{i+1}
    prev = torch.ones(B, dtype=torch.float64, device=d.device)
    for i in range(K):
        prev = torch.clamp(prev * ratio[:, i], max=1.0)
        p[:, i] = prev
    # Z[:, i] = Z_{i+2} = sum_x max(p_{i+1} target_{i+2} - draft_{i+2}, 0), i = 0..K-2
    z = torch.clamp(p[:, :-1, None] * t[:, 1:K] - d[:, 1:], min=0.0).sum(-1)
    denom = z + 1.0 - p[:, :-1]
    h_mid = torch.where(denom > 0, z / torch.where(denom > 0, denom, 1.0), 1.0)
    h = torch.cat([h_mid, torch.zeros(B, 1, dtype=torch.float64, device=d.device)], dim=1)
    is_last = slots[None, :] == (k[:, None] - 1)
    h = torch.where(is_last, p, h)
    eta = (f64(u_accept) < h) & in_round
    tau = torch.where(eta.any(1), K - torch.flip(eta, dims=[1]).to(torch.int64).argmax(1), 0)
    rejected = tau < k
    p_tau = torch.where(tau > 0, p.gather(1, (tau - 1).clamp(min=0)[:, None]).squeeze(1), 1.0)
    t_n = _gather_pos(t, tau)
    d_n = _gather_pos(d, tau) * rejected[:, None]
    weights = torch.clamp(p_tau[:, None] * t_n - d_n, min=0.0)
    emit = rejected | (allow_bonus & (k > 0))
    return Verdict(tau, _emit(weights, t_n, u_emit, emit), rejected)

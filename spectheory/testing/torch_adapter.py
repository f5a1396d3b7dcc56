r"""Adapter for batched PyTorch rejection samplers of the common serving-engine shape.

Engines verify a batch of sequences at once, e.g. (vLLM's rejection sampler and similar)::

    fn(target_probs [B, k+1, V], draft_probs [B, k, V], draft_token_ids [B, k], generator)
        -> output_token_ids [B, k+1]     # accepted drafts, then the recovered/bonus token, then padding

:func:`from_torch_sampler` turns such a function into a verifier for
:func:`spectheory.testing.check_verifier` (batched: one call per instance). The kit's numpy
``rng`` seeds a fresh ``torch.Generator`` per call, so runs are reproducible. Configurable:
the padding value, the call signature (some engines take bonus token ids sampled by the
caller), the output layout (padded ids, or ids plus a count), device and dtype.
torch is imported only when the adapter is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from .._guards import as_rng
from .reference import PAD, BatchedVerifier

if TYPE_CHECKING:
    import torch

__all__ = ["from_torch_sampler", "torch_reference_sampler", "vllm_style_sampler"]

SIGNATURES = ("kit", "bonus_ids")
OUTPUTS = ("padded", "tokens_and_num_emitted", "tokens_and_num_accepted")


def _torch():
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise ImportError("from_torch_sampler needs PyTorch (pip install 'spectheory[decoder]')") from exc
    return torch


def from_torch_sampler(
    fn: Callable[..., Any],
    *,
    signature: str | Callable[..., Any] = "kit",
    pad_value: int = -1,
    output: str = "padded",
    device: str | torch.device = "cpu",
    dtype: torch.dtype | None = None,
    name: str | None = None,
) -> BatchedVerifier:
    r"""Wrap a batched torch rejection sampler as a kit verifier.

    Parameters
    ----------
    fn : callable
        The engine's sampler.
    signature : {"kit", "bonus_ids"} or callable
        ``"kit"``: ``fn(target_probs, draft_probs, draft_token_ids, generator)``.
        ``"bonus_ids"``: ``fn(target_probs, bonus_token_ids [B, 1], draft_probs, draft_token_ids,
        generator)``, the bonus token being drawn by the caller (here: the adapter, from
        ``target_probs[:, k]`` with ``torch.multinomial``). A callable
        ``signature(fn, target_probs, draft_probs, draft_token_ids, generator)`` makes the call
        itself.
    pad_value : int
        Value the sampler writes after the emitted tokens (``-1`` in vLLM).
    output : {"padded", "tokens_and_num_emitted", "tokens_and_num_accepted"}
        ``"padded"``: a ``[B, k+1]`` tensor padded with ``pad_value``. Otherwise a pair
        ``(tokens [B, k+1], counts [B])`` where ``counts`` is the number of emitted tokens, or
        of accepted drafts (emitted = accepted + 1); entries past the count are ignored.
    device : str or torch.device
        Where the tensors are built (``"cuda"`` to test a GPU kernel).
    dtype : torch.dtype, optional
        Probability dtype (default ``torch.float32``, as engines use).
    name : str, optional

    Returns
    -------
    BatchedVerifier
        Usable by the kit (``verify_batch``) and as a per-round ``verify``.

    Examples
    --------
    >>> from spectheory.testing import check_verifier
    >>> from spectheory.testing.torch_adapter import from_torch_sampler, torch_reference_sampler
    >>> verify = from_torch_sampler(torch_reference_sampler)
    >>> check_verifier(verify, n_samples=2000, rng=0).passed
    True
    """
    torch = _torch()
    if not callable(fn):
        raise ValueError("fn: must be callable")
    if not (callable(signature) or signature in SIGNATURES):
        raise ValueError(f"signature: expected one of {SIGNATURES} or a callable, got {signature!r}")
    if output not in OUTPUTS:
        raise ValueError(f"output: expected one of {OUTPUTS}, got {output!r}")
    dtype = torch.float32 if dtype is None else dtype
    dev = torch.device(device)

    def verify_batch(target_probs, draft_probs, draft_tokens, rng):
        rng = as_rng(rng)
        gen = torch.Generator(device=dev)
        gen.manual_seed(int(rng.integers(2**63)))
        t = torch.as_tensor(np.asarray(target_probs), dtype=dtype, device=dev)
        d = torch.as_tensor(np.asarray(draft_probs), dtype=dtype, device=dev)
        ids = torch.as_tensor(np.asarray(draft_tokens, dtype=np.int64), device=dev)
        B, k = ids.shape
        with torch.no_grad():
            if callable(signature):
                res = signature(fn, t, d, ids, gen)
            elif signature == "kit":
                res = fn(t, d, ids, gen)
            else:
                bonus = torch.multinomial(t[:, k].float(), 1, generator=gen)
                res = fn(t, bonus, d, ids, gen)
        if output == "padded":
            out = res.detach().to("cpu").numpy().astype(np.int64)
            return np.where(out == pad_value, PAD, out) if pad_value != PAD else out
        tokens, counts = res
        tokens = tokens.detach().to("cpu").numpy().astype(np.int64)
        counts = np.asarray(
            counts.detach().to("cpu").numpy() if hasattr(counts, "detach") else counts, dtype=np.int64
        ).reshape(-1)
        if output == "tokens_and_num_accepted":
            counts = counts + 1
        keep = np.arange(tokens.shape[1])[None, :] < counts[:, None]
        return np.where(keep, tokens, PAD)

    return BatchedVerifier(verify_batch, PAD, name or getattr(fn, "__name__", "torch_sampler"))


def torch_reference_sampler(
    target_probs: torch.Tensor,
    draft_probs: torch.Tensor,
    draft_token_ids: torch.Tensor,
    generator: torch.Generator | None = None,
    *,
    strict: bool = True,
) -> torch.Tensor:
    r"""Standard speculative sampling, batched in torch, in the engine shape (pads with ``-1``).

    p = target, q = draft. For each row: accept draft ``j`` while ``u_j q_j(x_j) < p_j(x_j)``;
    at the first rejection emit a sample of ``max(p_j - q_j, 0)`` (``torch.multinomial``
    normalises), else the bonus token from ``p_k``. Shapes ``[B, k+1, V]``, ``[B, k, V]``,
    ``[B, k]``; returns ``[B, k+1]`` int64. ``strict=False`` accepts with ``<=`` instead
    (a bug: at ``u = 0`` a draft of target probability 0 is accepted; the kit's forced
    uniforms flag it, :mod:`spectheory.testing.torch_random`). A NaN or infinite probability
    (a bad kernel) is refused with a ``ValueError`` before anything is drawn, as
    :func:`~spectheory.testing.reference_verify` does (:mod:`spectheory.testing.hostile`),
    not left to ``torch.multinomial``'s ``RuntimeError``.
    """
    torch = _torch()
    if not bool(torch.isfinite(target_probs).all() and torch.isfinite(draft_probs).all()):
        raise ValueError("target_probs, draft_probs: entries must be finite (a NaN or inf from the kernel)")
    B, k, V = draft_probs.shape
    dev = draft_probs.device
    u = torch.rand(B, k, generator=generator, device=dev, dtype=torch.float64)
    idx = draft_token_ids.long()
    tx = target_probs[:, :k].gather(-1, idx[..., None])[..., 0].double()
    dx = draft_probs.gather(-1, idx[..., None])[..., 0].double()
    ok = u * dx < tx if strict else u * dx <= tx
    n = torch.cumprod(ok.long(), dim=1).sum(dim=1)  # accepted count
    rows = torch.arange(B, device=dev)
    j = n.clamp(max=k - 1)
    excess = (target_probs[rows, j] - draft_probs[rows, j]).clamp_min(0).double()
    mass = excess.sum(-1, keepdim=True)
    excess = torch.where(mass > 1e-15, excess, target_probs[rows, j].double())
    law = torch.where((n < k)[:, None], excess, target_probs[:, k].double())
    y = torch.multinomial(law, 1, generator=generator)[:, 0]
    out = torch.full((B, k + 1), -1, dtype=torch.long, device=dev)
    pos = torch.arange(k + 1, device=dev)[None, :]
    padded_ids = torch.cat([idx, torch.zeros(B, 1, dtype=torch.long, device=dev)], dim=1)
    out = torch.where(pos < n[:, None], padded_ids, out)
    out[rows, n] = y
    return out


def vllm_style_sampler(
    target_probs: torch.Tensor,
    bonus_token_ids: torch.Tensor,
    draft_probs: torch.Tensor,
    draft_token_ids: torch.Tensor,
    *,
    disable_bonus_tokens: bool = False,
) -> torch.Tensor:
    r"""A correct rejection sampler in vLLM's ``[B, k, V]`` convention (modelled on vLLM 0.5).

    ``target_probs [B, k, V]`` (the draft positions only), ``bonus_token_ids [B, 1]`` (drawn
    by the caller from the target's next row), ``draft_probs [B, k, V]``,
    ``draft_token_ids [B, k]`` -> ``[B, k+1]`` padded with ``-1``. Accepts draft ``j`` while
    ``u_j < min(1, p_j(x_j)/q_j(x_j))`` (float32 ``torch.rand``), recovers from
    ``max(p - q, 0)`` renormalised by the exponential race ``argmax(w / E)``
    (``Tensor.exponential_``), and appends the bonus token after ``k`` acceptances unless
    ``disable_bonus_tokens``. For :func:`spectheory.testing.adapters.from_batched_probs`.
    """
    torch = _torch()
    B, k, V = draft_probs.shape
    rows = torch.arange(B)[:, None]
    pos = torch.arange(k)[None, :]
    ids = draft_token_ids.long()
    sel_t = target_probs[rows, pos, ids]
    sel_d = draft_probs[rows, pos, ids]
    u = torch.rand(B, k, dtype=torch.float32)
    accepted = u < torch.clamp(sel_t / sel_d, max=1.0)
    rejected = ~accepted
    limits = torch.where(rejected.any(1), rejected.float().argmax(1), torch.full((B,), k))
    diff = (target_probs - draft_probs).clamp_min(0)
    mass = diff.sum(-1, keepdim=True)
    w = torch.where(mass > 0, diff, target_probs)
    e = torch.empty_like(w).exponential_(1.0)
    recovered = (w / e).argmax(-1)  # [B, k]
    out = torch.full((B, k + 1), -1, dtype=torch.long)
    out[:, :k] = torch.where(pos < limits[:, None], ids, torch.full_like(ids, -1))
    at = pos == limits[:, None]
    out[:, :k] = torch.where(at, recovered, out[:, :k])
    if not disable_bonus_tokens:
        out[:, k] = torch.where(limits == k, bonus_token_ids[:, 0].long(), torch.full((B,), -1))
    return out

r"""Timing one cached forward of a model of the decoder contract (CPU or CUDA).

A *forward* here is what the decoder does once per draft step or target call: ``B`` rows,
each feeding ``m`` new tokens at positions ``L .. L + m - 1`` of a key/value cache that
already holds ``L`` positions (the model contract of :mod:`spectheory.decoder.batching`:
``model(ids [B, m], cache=cache, start=[L] * B)``). :func:`time_forward` builds such a
cache (one uncached-free prefill call of width ``L``), runs ``warmup`` untimed calls, then
``repeats`` timed ones (``torch.cuda.synchronize`` around each on CUDA) and returns the
seconds of every repeat. Calling again at the same ``start`` rewrites the same cache slots,
which the contract allows (a rollback), so every repeat costs the same.

Only ``torch`` is imported (no :mod:`spectheory.decoder`), so the cost room stays below the
decoder in the layers of ``docs/architecture.md``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._guards import check_int

__all__ = ["check_device", "time_forward", "cost_curve"]


def check_device(device: Any) -> Any:
    """``torch.device(device)`` for ``cpu`` or an available ``cuda[:N]``; ``ValueError`` otherwise.

    Examples
    --------
    >>> check_device("cpu")
    device(type='cpu')
    >>> check_device("tpu")
    Traceback (most recent call last):
    ...
    ValueError: device: expected 'cpu', 'cuda' or 'cuda:N', got 'tpu'
    """
    import torch

    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError):
        dev = None
    if dev is None or dev.type not in ("cpu", "cuda"):
        raise ValueError(f"device: expected 'cpu', 'cuda' or 'cuda:N', got {device!r}")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"device: {device!r} requested but this torch has no usable CUDA device")
        if dev.index is not None and dev.index >= torch.cuda.device_count():
            raise ValueError(f"device: {device!r}, but only {torch.cuda.device_count()} CUDA device(s)")
    return dev


def _sync(dev: Any) -> None:
    import torch

    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def time_forward(
    model: Any,
    batch: int,
    tokens: int,
    context: int,
    device: Any = "cpu",
    repeats: int = 5,
    warmup: int = 2,
    rng: np.random.Generator | int | None = None,
) -> np.ndarray:
    r"""Seconds of ``repeats`` timed cached forwards of ``model`` (``batch`` rows, ``tokens`` new
    tokens each, after ``context`` cached positions).

    Parameters
    ----------
    model : a model of the decoder contract (moved to ``device`` in place)
    batch, tokens : int >= 1
    context : int >= 0
    device : str or torch.device, ``cpu`` or ``cuda[:N]``
    repeats, warmup : int >= 1 and >= 0
    rng : numpy Generator or seed, optional
        Draws the (irrelevant) token ids.

    Returns
    -------
    ndarray float64 ``[repeats]``

    Examples
    --------
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> m = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> t = time_forward(m, 2, 3, 8, repeats=3, rng=0)
    >>> t.shape, bool((t > 0).all())
    ((3,), True)
    """
    import torch

    B = check_int(batch, "batch", 1)
    m = check_int(tokens, "tokens", 1)
    L = check_int(context, "context", 0)
    repeats = check_int(repeats, "repeats", 1)
    warmup = check_int(warmup, "warmup", 0)
    dev = check_device(device)
    limit = getattr(model, "max_seq_len", None)
    if limit is not None and L + m > limit:
        raise ValueError(f"context: {L} + tokens {m} exceeds the model's max_seq_len = {limit}")
    vocab = getattr(model, "vocab_size", None)
    if not isinstance(vocab, int) or vocab < 1:
        raise ValueError(f"model: no valid integer vocab_size (got {vocab!r})")
    gen = np.random.default_rng(rng)
    model.to(dev)
    floats = [p for p in list(model.parameters()) + list(model.buffers()) if p.is_floating_point()]
    dtype = floats[0].dtype if floats else torch.float32
    ids = torch.as_tensor(gen.integers(0, vocab, size=(B, L + m)), dtype=torch.int64, device=dev)
    out = np.empty(repeats)
    with torch.inference_mode():
        cache = model.new_cache(B, L + m, device=dev, dtype=dtype)
        if L:
            model(ids[:, :L], cache=cache, start=torch.zeros(B, dtype=torch.int64, device=dev))
        start = torch.full((B,), L, dtype=torch.int64, device=dev)
        new = ids[:, L:]
        for _ in range(warmup):
            model(new, cache=cache, start=start)
        for r in range(repeats):
            _sync(dev)
            t0 = time.perf_counter()
            model(new, cache=cache, start=start)
            _sync(dev)
            out[r] = time.perf_counter() - t0
    return out


def cost_curve(
    model: Any,
    tokens: Sequence[int],
    context: int,
    device: Any = "cpu",
    repeats: int = 5,
    warmup: int = 2,
    rng: np.random.Generator | int | None = 0,
) -> dict:
    r"""A model's cost curve at batch 1: median seconds of a cached forward scoring ``m`` tokens
    after ``context`` cached positions, for each ``m`` in ``tokens``, and each over the first.

    Returns
    -------
    dict with ``seconds`` ``{m: t(m)}`` and ``ratio`` ``{m: t(m) / t(tokens[0])}``

    Examples
    --------
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> m = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> c = cost_curve(m, [1, 3], 8, repeats=3)
    >>> sorted(c["ratio"]), c["ratio"][1]
    ([1, 3], 1.0)
    """
    t = {
        m: float(np.median(time_forward(model, 1, m, context, device, repeats, warmup, rng))) for m in tokens
    }
    return {"seconds": t, "ratio": {m: t[m] / t[tokens[0]] for m in tokens}}

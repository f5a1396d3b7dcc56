r"""Logging the shape and wall time of every forward the decoder makes.

:class:`ForwardLog` puts torch forward hooks on a model of the decoder contract
(``model(ids [B, m], cache=, start=[B])``; :mod:`spectheory.decoder.batching`) and records,
for every call while it is active, the batch ``B``, the tokens per row ``m``, the context
``L`` (the mean of ``start`` over the rows; 0 without a cache) and the seconds the call took
(``torch.cuda.synchronize`` before and after on CUDA, so the time is the device's work, not
the launch). Hooks leave the model itself untouched -- its class, its tree-attention path,
its caches -- so the decoder runs exactly as it does unlogged. This is how the cost of the
decoder's *own* calls is measured (:mod:`spectheory.validation.cost_insitu`): the same
shapes, the same caches, the same moment of the machine's load as the rounds they are part
of.

Only ``torch`` is imported (when a log is opened), so this room stays below the decoder.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

__all__ = ["ForwardLog"]


def _ids_and_start(args: tuple, kwargs: dict) -> tuple[Any, Any]:
    ids = args[0] if args else kwargs.get("ids", kwargs.get("idx"))
    start = kwargs.get("start", args[2] if len(args) > 2 else None)
    return ids, start


class ForwardLog:
    """Log of ``model``'s forwards while the ``with`` block runs: :attr:`calls` ``[n, 4]``.

    Each row is (batch, tokens per row, mean cached context, seconds). Re-entering appends.

    Parameters
    ----------
    model : torch.nn.Module of the decoder contract (a shipped model, a ``GPT``, an ``HFCausalLM``)

    Examples
    --------
    >>> import torch
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> m = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=32)).eval()
    >>> cache = m.new_cache(2, 8, device="cpu", dtype=torch.float32)
    >>> with ForwardLog(m) as log, torch.inference_mode():
    ...     _ = m(torch.zeros(2, 3, dtype=torch.long), cache=cache, start=torch.zeros(2, dtype=torch.long))
    ...     _ = m(torch.zeros(2, 1, dtype=torch.long), cache=cache, start=torch.full((2,), 3))
    >>> log.calls[:, :3].tolist(), bool((log.calls[:, 3] > 0).all())
    ([[2.0, 3.0, 0.0], [2.0, 1.0, 3.0]], True)
    >>> _ = m(torch.zeros(1, 1, dtype=torch.long)); len(log.calls)   # outside the block: not logged
    2
    """

    def __init__(self, model: Any) -> None:
        if not hasattr(model, "register_forward_pre_hook"):
            raise ValueError(
                f"model: expected a torch.nn.Module of the decoder contract, got {type(model).__name__}"
            )
        self.model = model
        self._log: list[tuple[float, float, Any, float]] = []
        self._open: list[tuple[bool, Any, float]] = []
        self._handles: list[Any] = []

    def _before(self, module: Any, args: tuple, kwargs: dict) -> None:
        ids, _ = _ids_and_start(args, kwargs)
        cuda = bool(getattr(ids, "is_cuda", False))
        if cuda:
            import torch

            torch.cuda.synchronize(ids.device)
        self._open.append((cuda, ids.device, time.perf_counter()))

    def _after(self, module: Any, args: tuple, kwargs: dict, output: Any) -> None:
        cuda, dev, t0 = self._open.pop()
        if cuda:
            import torch

            torch.cuda.synchronize(dev)
        seconds = time.perf_counter() - t0
        ids, start = _ids_and_start(args, kwargs)
        # the context is reduced when the log is read: no tensor work inside the timed call's caller
        start = None if start is None else (start.clone() if hasattr(start, "clone") else start)
        self._log.append((float(ids.shape[0]), float(ids.shape[1]), start, seconds))

    def __enter__(self) -> ForwardLog:
        if self._handles:
            raise RuntimeError("ForwardLog: already active")
        self._handles = [
            self.model.register_forward_pre_hook(self._before, with_kwargs=True),
            self.model.register_forward_hook(self._after, with_kwargs=True),
        ]
        return self

    def __exit__(self, *exc: Any) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        self._open.clear()

    @property
    def calls(self) -> np.ndarray:
        """The log so far, float64 ``[n, 4]``: batch, tokens per row, mean context, seconds."""
        import torch

        rows = [
            (B, m, 0.0 if start is None else float(torch.as_tensor(start).float().mean()), sec)
            for B, m, start, sec in self._log
        ]
        return np.asarray(rows, dtype=np.float64).reshape(-1, 4)

    def take(self) -> np.ndarray:
        """The log so far (:attr:`calls`), which is then emptied."""
        out = self.calls
        self._log.clear()
        return out

    def __repr__(self) -> str:
        state = "active" if self._handles else "closed"
        return f"ForwardLog({type(self.model).__name__}, {len(self._log)} calls, {state})"

r"""Logging the shape and wall time of every forward the decoder makes.

:class:`ForwardLog` wraps the ``forward`` of a model of the decoder contract
(``model(ids [B, m], cache=, start=[B])``; :mod:`spectheory.decoder.batching`) and records,
for every call while it is active, the batch ``B``, the tokens per row ``m``, the context
``L`` (the mean of ``start`` over the rows; 0 without a cache) and the seconds the call took
(``torch.cuda.synchronize`` before and after on CUDA, so the time is the device's work, not
the launch). The wrapper is an attribute of that one instance, removed on exit: the model's
class, its tree-attention path and its caches are untouched, so the decoder runs exactly as it
does unlogged. (Torch forward hooks would do the same at about 17 us more per call on a CPU,
which the log would count as the decoder's overhead: a plain wrapper costs about 5 us.) This is how the cost of the
decoder's *own* calls is measured (:mod:`spectheory.tuning.cost_insitu`): the same
shapes, the same caches, the same moment of the machine's load as the rounds they are part
of.

Only ``torch`` is imported (when a log is opened), so this room stays below the decoder.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["ForwardLog", "wrap_forward"]


def wrap_forward(model: Any, wrap: Callable[[Any], Any]) -> Callable[[], None]:
    """Replace ``model``'s ``forward`` on the instance by ``wrap(forward)``; return the undo.

    The class, its other methods and its hooks are untouched, and the undo restores the
    instance exactly (an instance ``forward`` set before is put back, else the class's is used
    again), so wrappers nest. What :class:`ForwardLog` and :class:`~spectheory.cost.OpCount` use.

    Examples
    --------
    >>> import torch
    >>> lin = torch.nn.Linear(2, 2)
    >>> undo = wrap_forward(lin, lambda f: (lambda x: f(x) * 0))
    >>> float(lin(torch.ones(1, 2)).abs().sum()), undo(), "forward" in lin.__dict__
    (0.0, None, False)
    """
    saved = model.__dict__.get("forward")
    model.forward = wrap(model.forward)

    def undo() -> None:
        if saved is None:
            del model.forward  # back to the class's forward
        else:
            model.forward = saved

    return undo


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
        self._active = False
        self._undo: Any = None  # puts the model's forward back (wrap_forward)

    def _wrap(self, forward: Any) -> Any:
        log = self._log

        def logged_forward(*args: Any, **kwargs: Any) -> Any:
            ids, start = _ids_and_start(args, kwargs)
            cuda = bool(getattr(ids, "is_cuda", False))
            if cuda:
                import torch

                torch.cuda.synchronize(ids.device)
            t0 = time.perf_counter()
            out = forward(*args, **kwargs)
            if cuda:
                torch.cuda.synchronize(ids.device)
            seconds = time.perf_counter() - t0
            # the context is reduced when the log is read: no tensor work inside the timed call's caller
            start = None if start is None else (start.clone() if hasattr(start, "clone") else start)
            log.append((float(ids.shape[0]), float(ids.shape[1]), start, seconds))
            return out

        return logged_forward

    def __enter__(self) -> ForwardLog:
        if self._active:
            raise RuntimeError("ForwardLog: already active")
        self._undo = wrap_forward(self.model, self._wrap)
        self._active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        self._undo()
        self._undo, self._active = None, False

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
        state = "active" if self._active else "closed"
        return f"ForwardLog({type(self.model).__name__}, {len(self._log)} calls, {state})"

r"""Counting the torch operations the decoder dispatches outside the models' forwards.

On a CPU at batch 1 every torch operation costs about the same couple of microseconds whatever
its size, so the overhead of a speculative round beyond its forwards (``docs/decoder_floor.md``)
is, to first order, a *count*: ``seconds ~ n_ops * t_op``. Unlike a time, the count does not
move with the machine's load, so it is what a regression test can hold the decoder to.

:class:`OpCount` counts every ATen operation dispatched while it is active (a
``TorchDispatchMode``), split by whether it ran inside a forward of one of the given models
(their ``forward`` wrapped on the instance by :func:`~spectheory.cost.timed.wrap_forward`, as
:class:`~spectheory.cost.timed.ForwardLog` does)
or outside them. Only ``torch`` is imported, when a count is opened.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from .timed import wrap_forward

__all__ = ["OpCount"]


class OpCount:
    """Count the torch operations dispatched outside (and inside) ``models``' forwards.

    Parameters
    ----------
    *models : torch.nn.Module
        The models whose forwards are the floor; every other operation counts as overhead.

    Attributes
    ----------
    outside : collections.Counter
        Operations dispatched outside the models' forwards, by ATen name (e.g. ``"aten.add.Tensor"``).
    inside : int
        Operations dispatched inside them.

    Examples
    --------
    >>> import torch
    >>> lin, x = torch.nn.Linear(3, 2), torch.ones(1, 3)
    >>> with OpCount(lin) as ops:
    ...     y = lin(x) + 1
    >>> dict(ops.outside), ops.inside > 0
    ({'aten.add.Tensor': 1}, True)
    """

    def __init__(self, *models: Any) -> None:
        for m in models:
            if not hasattr(m, "forward"):
                raise ValueError(f"models: expected torch modules, got {type(m).__name__}")
        self.models = models
        self.outside: Counter[str] = Counter()
        self.inside = 0
        self._depth = 0
        self._mode: Any = None
        self._undo: list[Any] = []

    @property
    def total_outside(self) -> int:
        """The number of operations dispatched outside the models' forwards."""
        return sum(self.outside.values())

    def _wrap(self, forward: Any) -> Any:
        def counted_forward(*args: Any, **kwargs: Any) -> Any:
            self._depth += 1
            try:
                return forward(*args, **kwargs)
            finally:
                self._depth -= 1

        return counted_forward

    def __enter__(self) -> OpCount:
        from torch.utils._python_dispatch import TorchDispatchMode

        count = self

        class _Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                if count._depth:
                    count.inside += 1
                else:
                    count.outside[str(func)] += 1
                return func(*args, **(kwargs or {}))

        self._undo = [wrap_forward(m, self._wrap) for m in self.models]
        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._mode.__exit__(*exc)
        for undo in reversed(self._undo):
            undo()
        self._mode, self._undo = None, []

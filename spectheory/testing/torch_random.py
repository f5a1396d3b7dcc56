r"""Route torch's global random draws through a source the conformance kit controls.

A torch sampler draws its acceptance uniforms and its categorical samples from torch
(``torch.rand``, ``torch.multinomial``, ...), not from the numpy ``rng`` the kit hands it, so
the kit's forced-extreme checks (every uniform 0, or the largest value below 1) could not
reach it. Inside :func:`kit_torch_random` these functions draw from a :class:`KitRandom`:

=====================================  ==================================  =============================
routed                                 ``force=None``                      ``force="low"`` / ``"high"``
=====================================  ==================================  =============================
``torch.rand``, ``torch.rand_like``    torch's own draw, from a            every value ``0`` /
``Tensor.uniform_(a, c)``              ``torch.Generator`` the kit seeds   ``1 - 2**-b`` (then
                                       (any ``generator=`` argument is     ``a + (c - a) u``)
                                       replaced by it)
``Tensor.exponential_(lambd)``         same                                ``-log1p(-u) / lambd`` at
                                                                           ``u = 2**-(b+1)`` /
                                                                           ``1 - 2**-(b+1)`` (> 0, finite)
``torch.multinomial``,                 same                                the first / the last entry of
``Tensor.multinomial``                                                     positive weight (inverse CDF
                                                                           at ``u = 0`` / ``u -> 1``)
=====================================  ==================================  =============================

``b`` is the mantissa width of the dtype: 24 for float32 (``torch.rand`` in float32 really
returns exactly 0 with probability :math:`2^{-24}`), 53 for float64, 11 for float16, 8 for
bfloat16, so forced values are values torch can return. The forced runs are the cases where
``u <= p/q`` accepts a token of target probability 0, or a CDF that does not reach 1 fails.
Forced multinomials check their input as torch does (same errors). Other torch random
functions (``randn``, ``randint``, ``bernoulli``, ``normal_``) are not routed.

The patch is process-wide (the functions are replaced on the ``torch`` module and on
``torch.Tensor``), undone on exit, and contexts nest. ``torch.manual_seed(s)`` called inside
the context reseeds the kit's generators instead of torch's global one (and is recorded in
``KitRandom.reseeds``), so draws after it repeat as they would outside the kit. Seeding: the
kit seeds its generator once per context, never the global one; to seed torch yourself per call outside the kit,
``torch.default_generator.manual_seed(s)`` costs about 1.5 us, ``torch.manual_seed(s)``
(which also seeds every CUDA device) about 0.5 ms.

Examples
--------
>>> from spectheory.testing.torch_random import kit_torch_random
>>> import torch
>>> with kit_torch_random(force="low"):
...     torch.rand(3).tolist(), torch.multinomial(torch.tensor([0.0, 0.3, 0.7]), 1).item()
([0.0, 0.0, 0.0], 1)
>>> with kit_torch_random(seed=7):
...     a = torch.rand(2)
>>> with kit_torch_random(seed=7):
...     bool((a == torch.rand(2)).all())
True
"""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

from .._typing import RNGLike

__all__ = ["KitRandom", "kit_torch_random", "torch_is_routed", "BITS"]

#: mantissa bits of the uniform draws per torch dtype name
BITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}
FORCES = (None, "low", "high")


class KitRandom:
    """The kit's torch random source: a seeded ``torch.Generator`` per device, or forced extremes.

    Parameters
    ----------
    seed : anything :func:`numpy.random.default_rng` accepts
        Seeds the generators (ignored when ``force`` is set).
    force : {None, "low", "high"}

    Examples
    --------
    >>> from spectheory.testing.torch_random import KitRandom
    >>> KitRandom(force="high").uniform_value(24) == 1 - 2**-24
    True
    """

    def __init__(self, seed: RNGLike = None, force: str | None = None) -> None:
        if force not in FORCES:
            raise ValueError(f"force: expected one of {FORCES}, got {force!r}")
        self.force = force
        self.seed = None if force else int(np.random.default_rng(seed).integers(2**63))
        self._gens: dict[Any, Any] = {}
        self.n_calls = 0
        #: seeds the user's code passed to ``torch.manual_seed`` inside the context, in order
        self.reseeds: list[int] = []
        #: routed uniform / exponential elements drawn, per mantissa width
        self.bits: dict[int, int] = {}
        self._by_arg: dict[Any, Any] = {}  # device argument -> its generator in _gens

    def count(self, bits: int | None, n: int) -> None:
        """Record ``n`` routed draws at mantissa width ``bits`` (for the severity of a finding)."""
        if bits is not None:
            self.bits[bits] = self.bits.get(bits, 0) + int(n)

    def reseed(self, seed: int) -> None:
        """Honour the user's ``torch.manual_seed(seed)``: the kit's generators restart from ``seed``.

        Without this the routed draws would ignore the reseeding, and a sampler that reseeds
        before every draw (so every position gets the same uniform) would look correct."""
        self.reseeds.append(int(seed))
        if self.force is None:
            self.seed = int(seed)
            for g in self._gens.values():
                g.manual_seed(self.seed)

    def generator(self, torch: Any, device: Any = None) -> Any:
        """The kit's generator for ``device`` (created and seeded on first use)."""
        try:  # the common case, once per routed draw: the device seen before, no torch.device built
            return self._by_arg[device]
        except (KeyError, TypeError):
            pass
        dev = torch.device("cpu" if device is None else device)
        key = (dev.type, dev.index)
        g = self._gens.get(key)
        if g is None:
            g = torch.Generator(device=dev)
            g.manual_seed(self.seed)
            self._gens[key] = g
        try:
            self._by_arg[device] = g
        except TypeError:  # an unhashable device argument: looked up each time
            pass
        return g

    def uniform_value(self, bits: int) -> float:
        """The forced uniform: 0 (``"low"``) or ``1 - 2**-bits`` (``"high"``)."""
        return 0.0 if self.force == "low" else 1.0 - 2.0**-bits

    def exponential_value(self, bits: int) -> float:
        """The forced standard exponential ``-log1p(-u)``, ``u = 2**-(bits+1)`` or ``1 - 2**-(bits+1)``."""
        u = 2.0 ** -(bits + 1)
        return -math.log1p(-u) if self.force == "low" else -math.log(u)


_lock = threading.RLock()
_stack: list = []
_saved: dict = {}


def torch_is_routed() -> bool:
    """True inside a :func:`kit_torch_random` context."""
    return bool(_stack)


def _bits(dtype: Any) -> int:
    name = str(dtype).replace("torch.", "")
    if name not in BITS:
        raise RuntimeError(f"kit_torch_random: random draws of dtype {dtype} are not supported")
    return BITS[name]


_DTYPE_BITS: dict[Any, int | None] = {}


def _dtype_bits(dtype: Any) -> int | None:
    """``BITS`` of a torch dtype, or None (cached: looked up on every routed draw)."""
    b = _DTYPE_BITS.get(dtype, -1)
    if b == -1:
        b = _DTYPE_BITS[dtype] = BITS.get(str(dtype).replace("torch.", ""))
    return b


def _shape(size):
    if len(size) == 1 and not isinstance(size[0], int):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def _check_weights(torch, w, num_samples, replacement):
    if w.dim() not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    wd = w.detach().double()
    tot = wd.sum(-1)
    if not (torch.isfinite(tot).all() and (wd >= 0).all()):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if not (tot > 0).all():
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    if not replacement and int(num_samples) > int((wd > 0).sum(-1).min()):
        raise RuntimeError(
            "invalid multinomial distribution (with replacement=False, "
            "not enough non-negative category to sample)"
        )
    return wd


def _install(torch):
    orig = {
        "rand": torch.rand,
        "rand_like": torch.rand_like,
        "multinomial": torch.multinomial,
        "uniform_": torch.Tensor.uniform_,
        "exponential_": torch.Tensor.exponential_,
        "tmultinomial": torch.Tensor.multinomial,
        "manual_seed": torch.manual_seed,
    }

    def manual_seed(seed):
        _stack[-1].reseed(int(seed))
        return torch.default_generator

    def rand(
        *size,
        generator=None,
        out=None,
        dtype=None,
        layout=None,
        device=None,
        requires_grad=False,
        pin_memory=False,
    ):
        src = _stack[-1]
        src.count(_dtype_bits(dtype or torch.get_default_dtype()), math.prod(_shape(size)))
        if src.force is None:
            kw = {"out": out} if out is not None else {}
            return orig["rand"](
                *size,
                generator=src.generator(torch, device),
                dtype=dtype,
                device=device,
                requires_grad=requires_grad,
                **kw,
            )
        dtype = dtype or torch.get_default_dtype()
        t = torch.full(_shape(size), src.uniform_value(_bits(dtype)), dtype=dtype, device=device)
        if out is not None:
            out.resize_(t.shape).copy_(t)
            return out
        return t.requires_grad_(requires_grad) if requires_grad else t

    def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False, memory_format=None):
        return rand(
            tuple(input.shape),
            dtype=dtype or input.dtype,
            device=device or input.device,
            requires_grad=requires_grad,
        )

    def uniform_(self, a=0.0, b=1.0, *, generator=None, **kw):
        a, b = kw.pop("from", a), kw.pop("to", b)
        src = _stack[-1]
        src.count(_dtype_bits(self.dtype), self.numel())
        if src.force is None:
            return orig["uniform_"](self, a, b, generator=src.generator(torch, self.device))
        with torch.no_grad():
            return self.fill_(a + (b - a) * src.uniform_value(_bits(self.dtype)))

    def exponential_(self, lambd=1.0, *, generator=None):
        src = _stack[-1]
        src.count(_dtype_bits(self.dtype), self.numel())
        if src.force is None:
            return orig["exponential_"](self, lambd, generator=src.generator(torch, self.device))
        with torch.no_grad():
            return self.fill_(src.exponential_value(_bits(self.dtype)) / float(lambd))

    def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
        src = _stack[-1]
        if src.force is None:
            kw = {"out": out} if out is not None else {}
            return orig["multinomial"](
                input, num_samples, replacement, generator=src.generator(torch, input.device), **kw
            )
        wd = _check_weights(torch, input, num_samples, replacement)
        pos = (wd > 0).long()
        if src.force == "high":
            pos = pos.flip(-1)
        n = int(num_samples)
        order = torch.argsort(-pos, dim=-1, stable=True)  # positive entries first, in order
        first = order[..., :1].expand(*order.shape[:-1], n) if replacement else order[..., :n]
        idx = (wd.shape[-1] - 1 - first) if src.force == "high" else first
        idx = idx.to(input.device)
        if out is not None:
            out.resize_(idx.shape).copy_(idx)
            return out
        return idx

    def tensor_multinomial(self, num_samples, replacement=False, *, generator=None):
        return multinomial(self, num_samples, replacement)

    _saved.update({("torch", k): orig[k] for k in ("rand", "rand_like", "multinomial", "manual_seed")})
    _saved[("torch.random", "manual_seed")] = torch.random.manual_seed
    _saved.update(
        {
            ("Tensor", "uniform_"): orig["uniform_"],
            ("Tensor", "exponential_"): orig["exponential_"],
            ("Tensor", "multinomial"): orig["tmultinomial"],
        }
    )
    torch.rand, torch.rand_like, torch.multinomial = rand, rand_like, multinomial
    torch.Tensor.uniform_ = uniform_
    torch.Tensor.exponential_ = exponential_
    torch.Tensor.multinomial = tensor_multinomial
    torch.manual_seed = torch.random.manual_seed = manual_seed


def _uninstall(torch):
    for (owner, name), fn in _saved.items():
        setattr({"torch": torch, "torch.random": torch.random}.get(owner, torch.Tensor), name, fn)
    _saved.clear()


@contextlib.contextmanager
def kit_torch_random(seed: RNGLike | KitRandom = None, *, force: str | None = None) -> Iterator[KitRandom]:
    """Inside the context, torch's routed random functions draw from a :class:`KitRandom`.

    Parameters
    ----------
    seed : anything :func:`numpy.random.default_rng` accepts, or a KitRandom
        Seeds the kit's torch generators: the draws are reproducible without touching
        torch's global generator.
    force : {None, "low", "high"}
        Force every draw to its lowest or highest value (see the module docstring).

    Yields
    ------
    KitRandom

    Examples
    --------
    >>> from spectheory.testing.torch_random import kit_torch_random, torch_is_routed
    >>> with kit_torch_random(0):
    ...     torch_is_routed()
    True
    """
    import torch

    src = seed if isinstance(seed, KitRandom) else KitRandom(seed, force=force)
    with _lock:
        if not _stack:
            _install(torch)
        _stack.append(src)
    try:
        yield src
    finally:
        with _lock:
            _stack.remove(src)
            if not _stack:
                _uninstall(torch)

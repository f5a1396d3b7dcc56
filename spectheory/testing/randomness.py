r"""Every random source the user's code could draw from, owned by the kit while it runs.

The kit hands a sampler its numpy ``rng`` and routes torch's Python-level draws
(:mod:`spectheory.testing.torch_random`). Code can still draw elsewhere: TorchScript and C++
kernels draw from torch's *global* generator, which no Python patch reaches; legacy
``np.random.*`` calls draw from numpy's global ``RandomState``. Around every run
:func:`kit_randomness`:

* routes Python's :mod:`random` module (``random.random``, ``choices``, ``randrange``, ...)
  through a kit ``random.Random``: seeded by the kit, or forced (``"low"``: every uniform 0,
  ``"high"``: :math:`1 - 2^{-53}`, integer draws the first / last choice);
* seeds torch's global CPU generator (and the CUDA ones, when CUDA is initialised) and numpy's
  global ``RandomState`` from the kit's seed, snapshots them, and restores the user's states
  afterwards; a state that moved during the run means the code drew outside the kit's
  routing (:attr:`RandomRecord.uncontrolled`);
* records reseeding (``torch.manual_seed`` and ``random.seed`` inside the run, honoured as
  they would be outside the kit; :attr:`RandomRecord.reseeds`): the same seed twice in one
  run restarts the same stream, so every position (and round) draws the same uniforms.

The verdicts (``spectheory.testing._checks``): draws from numpy's or Python's global state
fail ``uncontrolled_randomness`` (the kit hands the code an ``rng``); draws from torch's
global generators only add a note to it (torch code has no ``rng`` argument, and the kit
seeds those generators, so runs stay reproducible, but its forced uniforms do not reach those
draws); a repeated seed fails ``reseeding``.

Examples
--------
>>> import random
>>> from spectheory.testing.randomness import kit_randomness
>>> with kit_randomness(0, torch_random=False) as rec:
...     a = random.random()
>>> with kit_randomness(0, torch_random=False) as rec:
...     a == random.random()
True
>>> with kit_randomness(force="low", torch_random=False):
...     random.random(), random.randrange(5)
(0.0, 0)
>>> import numpy as np
>>> with kit_randomness(0, torch_random=False) as rec:
...     _ = np.random.random()  # noqa: NPY002 - a draw outside the kit's rng
>>> sorted(rec.uncontrolled)
['numpy']
"""

from __future__ import annotations

import contextlib
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._typing import RNGLike

__all__ = ["RandomRecord", "kit_randomness", "SOURCES", "FAILING_SOURCES", "repeated_seeds"]

#: source key -> what it is, as the report names it
SOURCES = {
    "numpy": "numpy's global RandomState (legacy np.random.* calls; use the rng argument)",
    "python": "Python's random module through a function bound before the kit routed it "
    "(e.g. `from random import random`; use the rng argument)",
    "torch_cpu": "torch's global CPU generator (draws the kit cannot route: TorchScript, C++ "
    "or custom ops; the kit seeded it, but its forced uniforms did not reach these draws)",
    "torch_cuda": "torch's global CUDA generators (draws the kit cannot route; seeded by the "
    "kit, not reached by its forced uniforms)",
}
#: sources whose use fails the run (the others add a note)
FAILING_SOURCES = ("numpy", "python")

#: Python random functions drawn from the forced instance (uniform-based, terminate when forced)
_UNIFORM = (
    "random",
    "uniform",
    "randint",
    "randrange",
    "choice",
    "choices",
    "shuffle",
    "sample",
    "getrandbits",
    "randbytes",
    "expovariate",
)
_OTHER = (
    "triangular",
    "gauss",
    "normalvariate",
    "lognormvariate",
    "vonmisesvariate",
    "gammavariate",
    "betavariate",
    "paretovariate",
    "weibullvariate",
    "binomialvariate",
)


class _ForcedRandom(random.Random):
    """``random.Random`` with every uniform forced: 0 (``"low"``) or ``1 - 2**-53`` (``"high"``)."""

    def __init__(self, force: str) -> None:
        super().__init__(0)
        self.force = force

    def random(self) -> float:
        return 0.0 if self.force == "low" else 1.0 - 2.0**-53

    def getrandbits(self, k: int) -> int:
        return 0 if self.force == "low" else (1 << k) - 1

    def _randbelow(self, n: int) -> int:
        return 0 if self.force == "low" else n - 1


@dataclass
class RandomRecord:
    """What the user's code did with randomness during one run.

    Attributes
    ----------
    torch_routed : bool
        torch's draws were routed through the kit.
    uncontrolled : dict
        Source key (:data:`SOURCES`) -> description, for every global state that moved.
    reseeds : list of (str, int)
        ``(function, seed)`` for every reseeding call, in order.
    bits : dict
        Routed torch uniform / exponential draws per mantissa width (``{24: 96}``: 96 float32
        draws).
    """

    torch_routed: bool = False
    uncontrolled: dict = field(default_factory=dict)
    reseeds: list = field(default_factory=list)
    bits: dict = field(default_factory=dict)


def repeated_seeds(reseeds: list) -> list:
    """``(function, seed, count)`` for each seed set more than once, most frequent first.

    >>> repeated_seeds([("torch.manual_seed", 3), ("torch.manual_seed", 3), ("random.seed", 1)])
    [('torch.manual_seed', 3, 2)]
    """
    counts: dict = {}
    for key in reseeds:
        counts[tuple(key)] = counts.get(tuple(key), 0) + 1
    rep = [(fn, s, c) for (fn, s), c in counts.items() if c > 1]
    return sorted(rep, key=lambda r: -r[2])


def _torch_routing(torch_random: bool | None) -> bool:
    return torch_random is True or (torch_random is None and "torch" in sys.modules)


@contextlib.contextmanager
def _python_random(start: int, force: str | None, rec: RandomRecord) -> Iterator[None]:
    kit = random.Random(start)
    forced = _ForcedRandom(force) if force else kit
    inst = random._inst
    before = inst.getstate()
    saved = {name: getattr(random, name) for name in _UNIFORM + _OTHER + ("seed",) if hasattr(random, name)}

    def reseed(a: Any = None, version: int = 2) -> None:
        rec.reseeds.append(("random.seed", a if isinstance(a, int) else hash(a)))
        kit.seed(a, version)

    for name in saved:
        if name != "seed":
            setattr(random, name, getattr(forced if name in _UNIFORM else kit, name))
    random.seed = reseed
    try:
        yield
    finally:
        for name, fn in saved.items():
            setattr(random, name, fn)
        if inst.getstate() != before:
            rec.uncontrolled["python"] = SOURCES["python"]
            inst.setstate(before)


@contextlib.contextmanager
def _numpy_global(seed: int, rec: RandomRecord) -> Iterator[None]:
    bg: Any = np.random.mtrand._rand._bit_generator  # the legacy global RandomState's MT19937
    saved = bg.state
    np.random.seed(seed)  # noqa: NPY002 - seeded for the run, restored after it
    start = bg.state
    try:
        yield
    finally:
        now = bg.state
        a, b = now["state"], start["state"]
        if a["pos"] != b["pos"] or (a["key"] != b["key"]).any():
            rec.uncontrolled["numpy"] = SOURCES["numpy"]
        bg.state = saved


@contextlib.contextmanager
def _torch_global(seed: int, rec: RandomRecord) -> Iterator[None]:
    import torch

    gen = torch.default_generator
    saved = gen.get_state()
    gen.manual_seed(seed)
    start = gen.get_state()
    cuda = bool(torch.cuda.is_available() and torch.cuda.is_initialized())
    if cuda:
        saved_cuda = torch.cuda.get_rng_state_all()
        for i in range(torch.cuda.device_count()):
            torch.cuda.default_generators[i].manual_seed(seed)
        start_cuda = torch.cuda.get_rng_state_all()
    try:
        yield
    finally:
        now = gen.get_state()
        if not torch.equal(now, start):
            fresh = torch.Generator().manual_seed(gen.initial_seed()).get_state()
            if gen.initial_seed() == seed or not torch.equal(now, fresh):  # drawn, not just reseeded
                rec.uncontrolled["torch_cpu"] = SOURCES["torch_cpu"]
        gen.set_state(saved)
        if cuda:
            now_cuda = torch.cuda.get_rng_state_all()
            if any(not torch.equal(a, b) for a, b in zip(now_cuda, start_cuda, strict=False)):
                rec.uncontrolled["torch_cuda"] = SOURCES["torch_cuda"]
            torch.cuda.set_rng_state_all(saved_cuda)


@contextlib.contextmanager
def kit_randomness(
    seed: RNGLike = None, force: str | None = None, torch_random: bool | None = None
) -> Iterator[RandomRecord]:
    """Own every random source while the user's code runs (see the module docstring).

    Parameters
    ----------
    seed : anything :func:`numpy.random.default_rng` accepts
        Seeds the routed torch draws (first, as :func:`~.torch_random.kit_torch_random` does),
        then Python's routed ``random`` and the global torch and numpy states.
    force : {None, "low", "high"}
        Force every routed uniform to its lowest or highest value.
    torch_random : bool, optional
        Route torch (default: whenever torch is imported).

    Yields
    ------
    RandomRecord
        Filled in when the context exits.
    """
    rec = RandomRecord()
    with contextlib.ExitStack() as stack:
        src = None
        if _torch_routing(torch_random):
            from .torch_random import kit_torch_random

            src = stack.enter_context(kit_torch_random(seed, force=force))
            rec.torch_routed = True
        base = int(np.random.default_rng(0 if seed is None and force else seed).integers(2**30))
        s_py, s_np, s_torch = base, base + 1, base + 2
        stack.enter_context(_python_random(s_py, force, rec))
        stack.enter_context(_numpy_global(s_np, rec))
        if rec.torch_routed:
            stack.enter_context(_torch_global(s_torch, rec))
        try:
            yield rec
        finally:
            if src is not None:
                rec.reseeds[:0] = [("torch.manual_seed", s) for s in src.reseeds]
                rec.bits = dict(src.bits)

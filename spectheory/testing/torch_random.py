r"""Route torch's global random draws through a source the conformance kit controls.

A torch sampler draws its acceptance uniforms and its categorical samples from torch
(``torch.rand``, ``torch.multinomial``, ...), not from the numpy ``rng`` the kit hands it, so
the kit's forced-extreme checks (every uniform 0, or the largest value below 1) could not
reach it. Inside :func:`kit_torch_random` these functions draw from a :class:`KitRandom`
instead:

=================================  ==========================================================
routed                             how the kit's draw is made (``b`` = mantissa bits of dtype)
=================================  ==========================================================
``torch.rand``, ``torch.rand_like``  ``u = m / 2**b``, ``m`` uniform in ``{0, ..., 2**b - 1}``
``Tensor.uniform_(a, c)``           ``a + (c - a) * u``
``Tensor.exponential_(lambd)``      ``-log1p(-(m + 1/2) / 2**b) / lambd`` (always > 0, finite)
``torch.multinomial``,              inverse CDF of the row with one kit uniform per sample
``Tensor.multinomial``              (zero-weight entries never drawn; same errors as torch)
=================================  ==========================================================

``b`` is 24 for float32 (as ``torch.rand`` itself: it returns exactly 0 with probability
:math:`2^{-24}`), 53 for float64, 11 for float16, 8 for bfloat16, so the draws have the
resolution of the real ones and every value is representable. With ``force="low"`` every
``m`` is 0 (``u = 0``, the smallest exponential, the first token of positive weight), with
``force="high"`` every ``m`` is ``2**b - 1`` (``u = 1 - 2**-b``, the largest exponential,
the last token of positive weight): the cases where ``u <= p/q`` accepts a token of target
probability 0, or a CDF that does not reach 1 fails. A ``generator=`` argument is ignored
inside the context (every draw comes from the kit). Other torch random functions
(``randn``, ``randint``, ``bernoulli``, ``normal_``) are not routed.

The patch is process-wide (the functions are replaced on the ``torch`` module and on
``torch.Tensor``) and undone on exit; contexts nest. torch is imported only when a context
is entered.

Examples
--------
>>> from spectheory.testing.torch_random import kit_torch_random
>>> import torch                                            # doctest: +SKIP
>>> with kit_torch_random(force="low"):                     # doctest: +SKIP
...     torch.rand(3).tolist()
[0.0, 0.0, 0.0]
"""
from __future__ import annotations

import contextlib
import threading

import numpy as np

__all__ = ["KitRandom", "kit_torch_random", "torch_is_routed", "BITS"]

#: mantissa bits of the uniform draws per torch dtype name
BITS = {"float64": 53, "float32": 24, "float16": 11, "bfloat16": 8}
FORCES = (None, "low", "high")
_BLOCK = 4096


class KitRandom:
    """A source of uniforms on a dtype's grid: random from ``rng``, or forced to an extreme.

    Parameters
    ----------
    rng : anything :func:`numpy.random.default_rng` accepts
        Seeds the stream (ignored when ``force`` is set).
    force : {None, "low", "high"}
        ``"low"``: every draw is 0 (``m = 0``); ``"high"``: every draw is the largest grid value
        below 1 (``m = 2**b - 1``).

    Examples
    --------
    >>> from spectheory.testing.torch_random import KitRandom
    >>> KitRandom(force="high").grid(2, 24).tolist() == [2**24 - 1] * 2
    True
    >>> KitRandom(0).uniforms(3, 53).shape
    (3,)
    """

    def __init__(self, rng=None, force: str | None = None):
        if force not in FORCES:
            raise ValueError(f"force: expected one of {FORCES}, got {force!r}")
        self.force = force
        self._rng = None if force else np.random.default_rng(rng)
        self._buf = np.empty(0, dtype=np.uint64)
        self._pos = 0
        self._pools = {}
        self.n_draws = 0

    def _words(self, n: int) -> np.ndarray:
        """``n`` random 64-bit words, taken from a buffer refilled in blocks (cheap per call)."""
        if self._pos + n > self._buf.size:
            self._buf = np.concatenate([self._buf[self._pos:],
                                        self._rng.integers(0, 2**64, size=max(_BLOCK, n), dtype=np.uint64)])
            self._pos = 0
        w = self._buf[self._pos:self._pos + n]
        self._pos += n
        return w

    def grid(self, n: int, bits: int) -> np.ndarray:
        """``n`` integers ``m`` uniform in ``[0, 2**bits)`` (float64 holds them exactly)."""
        self.n_draws += n
        if self.force == "low":
            return np.zeros(n)
        if self.force == "high":
            return np.full(n, float(2 ** bits - 1))
        return (self._words(n) >> np.uint64(64 - bits)).astype(np.float64)

    def uniform_list(self, n: int, bits: int) -> list:
        """Like :meth:`uniforms`, as a list of floats (faster for a handful of draws)."""
        self.n_draws += n
        if self.force == "low":
            return [0.0] * n
        scale = 2.0 ** -bits
        if self.force == "high":
            return [(2 ** bits - 1) * scale] * n
        shift = 64 - bits
        return [(int(w) >> shift) * scale for w in self._words(n).tolist()]

    def pooled(self, n: int, dtype, torch):
        """``n`` uniforms of torch ``dtype`` (CPU), sliced from a block drawn ahead (a fresh copy)."""
        pool, pos = self._pools.get(dtype, (None, 0))
        if pool is None or pos + n > pool.shape[0]:
            m = max(_BLOCK, n)
            pool, pos = torch.from_numpy(self.uniforms(m, _bits(torch, dtype))).to(dtype), 0
            self.n_draws -= m
        self._pools[dtype] = (pool, pos + n)
        self.n_draws += n
        return pool[pos:pos + n].clone()

    def uniforms(self, n: int, bits: int = 53) -> np.ndarray:
        """``n`` uniforms ``m / 2**bits`` in ``[0, 1)``."""
        return self.grid(n, bits) * 2.0 ** -bits

    def exponentials(self, n: int, bits: int = 53) -> np.ndarray:
        """``n`` standard exponentials ``-log1p(-(m + 1/2) / 2**bits)``, all finite and > 0."""
        return -np.log1p(-(self.grid(n, bits) + 0.5) * 2.0 ** -bits)


# ------------------------------------------------------------------------ the patch
_lock = threading.RLock()
_stack: list = []
_saved: dict = {}


def torch_is_routed() -> bool:
    """True inside a :func:`kit_torch_random` context."""
    return bool(_stack)


def _bits(torch, dtype) -> int:
    name = str(dtype).replace("torch.", "")
    if name not in BITS:
        raise RuntimeError(f"kit_torch_random: uniform draws of dtype {dtype} are not supported")
    return BITS[name]


def _shape(size):
    if len(size) == 1 and isinstance(size[0], (tuple, list)) or (len(size) == 1 and hasattr(size[0], "__len__")):
        return tuple(int(s) for s in size[0])
    return tuple(int(s) for s in size)


def _install(torch):
    def source() -> KitRandom:
        return _stack[-1]

    np_dtypes = {torch.float64: np.float64, torch.float32: np.float32, torch.float16: np.float16}

    def _tensor(values, shape, dtype, device):
        npd = np_dtypes.get(dtype)
        if npd is not None:
            t = torch.from_numpy(values.astype(npd).reshape(shape))
            return t if device is None or torch.device(device).type == "cpu" else t.to(device)
        return torch.from_numpy(values.reshape(shape)).to(dtype=dtype, device=device)

    def rand(*size, generator=None, out=None, dtype=None, layout=None, device=None,
             requires_grad=False, pin_memory=False):
        shape = _shape(size)
        dtype = dtype or torch.get_default_dtype()
        n = 1
        for s in shape:
            n *= s
        if n <= 32 and (device is None or torch.device(device).type == "cpu"):
            t = source().pooled(n, dtype, torch)        # small draws: a slice of a pre-drawn block
            if len(shape) != 1:
                t = t.reshape(shape)
        else:
            t = _tensor(source().uniforms(n, _bits(torch, dtype)), shape, dtype, device)
        if out is not None:
            out.resize_(shape).copy_(t)
            return out
        return t.requires_grad_(requires_grad) if requires_grad else t

    def rand_like(input, *, dtype=None, layout=None, device=None, requires_grad=False,
                  memory_format=None):
        dtype = dtype or input.dtype
        n = input.numel()
        if n <= 32 and device is None and input.device.type == "cpu" and not requires_grad:
            t = _stack[-1].pooled(n, dtype, torch)
            return t if input.dim() == 1 else t.view(input.shape)
        device = device or input.device
        return rand(tuple(input.shape), dtype=dtype, device=device, requires_grad=requires_grad)

    def uniform_(self, a=0.0, b=1.0, *, generator=None, **kw):
        a, b = kw.pop("from", a), kw.pop("to", b)
        u = source().uniforms(self.numel(), _bits(torch, self.dtype))
        with torch.no_grad():
            self.copy_(torch.from_numpy((a + (b - a) * u).reshape(tuple(self.shape))))
        return self

    def exponential_(self, lambd=1.0, *, generator=None):
        e = source().exponentials(self.numel(), _bits(torch, self.dtype)) / float(lambd)
        with torch.no_grad():
            self.copy_(torch.from_numpy(e.reshape(tuple(self.shape))))
        return self

    def multinomial(input, num_samples, replacement=False, *, generator=None, out=None):
        if input.dim() not in (1, 2):
            raise RuntimeError("prob_dist must be 1 or 2 dim")
        if int(num_samples) == 1 and input.numel() <= 64 and (input.dim() == 1 or input.shape[0] == 1):
            return _one_row(input, out)
        w = input.detach().cpu().numpy()
        one = w.ndim == 1
        w = np.array(w[None] if one else w, dtype=np.float64)
        tot = w.sum(-1)
        if not (np.isfinite(tot).all() and w.min() >= 0):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        if not (tot > 0).all():
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        num_samples = int(num_samples)
        if not replacement and num_samples > int((w > 0).sum(-1).min()):
            raise RuntimeError("invalid multinomial distribution (with replacement=False, "
                               "not enough non-negative category to sample)")
        rows, V = w.shape
        r = np.arange(rows)
        res = np.empty((rows, num_samples), dtype=np.int64)
        for s in range(num_samples):
            cdf = np.cumsum(w, axis=1)
            u = source().uniforms(rows, 53) * cdf[:, -1]
            idx = np.minimum((cdf <= u[:, None]).sum(1), V - 1)
            bad = w[r, idx] == 0                 # u * total rounded up to total: take the last positive
            if bad.any():
                last = V - 1 - np.argmax((w > 0)[:, ::-1], axis=1)
                idx = np.where(bad, last, idx)
            res[:, s] = idx
            if not replacement:
                w[r, idx] = 0.0
        t = torch.from_numpy(res[0] if one else res)
        if input.device.type != "cpu":
            t = t.to(input.device)
        if out is not None:
            out.resize_(t.shape).copy_(t)
            return out
        return t

    idx_cache = {1: [torch.tensor([i]) for i in range(64)], 2: [torch.tensor([[i]]) for i in range(64)]}

    def _one_row(input, out):
        """One sample from one small row, in plain Python (the per-round engines' case)."""
        w = input.tolist()
        if input.dim() == 2:
            w = w[0]
        tot = 0.0
        for v in w:
            if not v >= 0 or v == float("inf"):
                raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
            tot += v
        if not tot > 0:
            raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
        if tot == float("inf"):
            raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
        u = source().uniform_list(1, 53)[0] * tot
        acc, idx, last = 0.0, None, 0
        for i, v in enumerate(w):
            if v > 0:
                last = i
                acc += v
                if idx is None and acc > u:
                    idx = i
        idx = last if idx is None else idx
        t = idx_cache[input.dim()][idx].clone()
        if input.device.type != "cpu":
            t = t.to(input.device)
        if out is not None:
            out.resize_(t.shape).copy_(t)
            return out
        return t

    def tensor_multinomial(self, num_samples, replacement=False, *, generator=None):
        return multinomial(self, num_samples, replacement)

    _saved.update({("torch", "rand"): torch.rand, ("torch", "rand_like"): torch.rand_like,
                   ("torch", "multinomial"): torch.multinomial,
                   ("Tensor", "uniform_"): torch.Tensor.uniform_,
                   ("Tensor", "exponential_"): torch.Tensor.exponential_,
                   ("Tensor", "multinomial"): torch.Tensor.multinomial})
    torch.rand, torch.rand_like, torch.multinomial = rand, rand_like, multinomial
    torch.Tensor.uniform_ = uniform_
    torch.Tensor.exponential_ = exponential_
    torch.Tensor.multinomial = tensor_multinomial


def _uninstall(torch):
    for (owner, name), fn in _saved.items():
        setattr(torch if owner == "torch" else torch.Tensor, name, fn)
    _saved.clear()


@contextlib.contextmanager
def kit_torch_random(rng=None, *, force: str | None = None):
    """Inside the context, torch's routed random functions draw from a :class:`KitRandom`.

    Parameters
    ----------
    rng : anything :func:`numpy.random.default_rng` accepts, or a KitRandom
        The stream (a seed makes the torch draws reproducible without ``torch.manual_seed``).
    force : {None, "low", "high"}
        Force every draw to its lowest or highest value (see the module docstring).

    Yields
    ------
    KitRandom
        The source (``n_draws`` counts the draws made).

    Examples
    --------
    >>> from spectheory.testing.torch_random import kit_torch_random, torch_is_routed
    >>> with kit_torch_random(0) as src:
    ...     torch_is_routed()
    True
    """
    import torch

    src = rng if isinstance(rng, KitRandom) else KitRandom(rng, force=force)
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

"""Counter-based uniforms for the decoder: reproducible, batch invariant, device independent.

Every random number the decoder uses is a pure function of
``(sequence seed, counter_1, counter_2, ..., purpose)``; an integer seed ``s`` of a batch
gives row ``b`` the seed ``hash63(s, b)`` (:func:`row_seeds`: independent streams per row,
never ``s + b``, which made row 1 of seed 0 equal to row 0 of seed 1), computed with 32-bit integer
hashing carried out exactly in ``int64`` torch arithmetic. Hence

- a sequence's uniforms never depend on which other sequences share the batch
  (batch invariance);
- the same seed gives bit-identical uniforms on CPU and CUDA;
- no global random state is read or written.

The hash is two independent 32-bit lanes, each a chain of Wellons' ``lowbias32`` mixer
applied to ``state XOR word`` (a bijection of the word for a fixed state); the two 32-bit
outputs are combined into a 53-bit float64 uniform ``(m + 1/2) / 2**53`` in ``(0, 1)``.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import cast

import numpy as np
import torch

_M32 = 0xFFFFFFFF
_LANE_KEYS = (0x243F6A88, 0x85A308D3)  # digits of pi: the two lanes' initial states
_GOLDEN = 0x9E3779B9

#: Purposes: distinct streams for the distinct random decisions of the decoder.
PURPOSE_DRAFT = 1  # inverse-CDF draw of a draft token
PURPOSE_ACCEPT = 2  # accept/reject uniform of a draft token (or block Bernoulli)
PURPOSE_EMIT = 3  # residual / bonus token of a round
PURPOSE_AUTOREG = 4  # plain autoregressive sampling
PURPOSE_ROW = 5  # per-row seed derived from an integer seed (see check_seeds)
PURPOSE_DERIVE = 6  # a derived seed for a separate experiment (see derive_seed)

_MAX_SEED = 2**63


def _mul32(x: torch.Tensor, c: int) -> torch.Tensor:
    """``(x * c) mod 2**32`` for ``0 <= x < 2**32`` without int64 overflow."""
    lo, hi = c & 0xFFFF, c >> 16
    return (x * lo + (((x * hi) & 0xFFFF) << 16)) & _M32


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """Wellons' lowbias32 integer mixer (a bijection of 32-bit integers)."""
    x = x ^ (x >> 16)
    x = _mul32(x, 0x7FEB352D)
    x = x ^ (x >> 15)
    x = _mul32(x, 0x846CA68B)
    return x ^ (x >> 16)


def _hash_lanes(words: Sequence[torch.Tensor]) -> torch.Tensor:
    """The two 32-bit hash lanes ``[2, *shape]`` of broadcast int64 words (each in [0, 2**32))."""
    dev = words[0].device
    words = [w.to(dev) for w in words]
    shape = np.broadcast_shapes(*(tuple(w.shape) for w in words))  # torch's first call: ~0.7 s
    keys = torch.tensor(_LANE_KEYS, dtype=torch.int64, device=dev).view((2,) + (1,) * len(shape))
    h = keys.expand((2,) + tuple(shape))  # both lanes at once, lane = leading axis
    for w in words:
        h = _mix32(((h ^ w) + _GOLDEN) & _M32)
    return h


def row_seeds(seed: int, batch_size: int, start: int = 0) -> list[int]:
    """Independent per-row seeds of one integer seed: row ``b`` gets ``hash63(seed, b)``.

    The hash is the module's two-lane counter hash of ``(seed, b, PURPOSE_ROW)``; lane 0 is a
    bijection of ``b`` for a fixed seed, so the rows of one seed never share a seed, and
    row ``b`` does not depend on ``batch_size`` (batch invariance). Unlike ``seed + b``
    (row 1 of seed 0 was row 0 of seed 1), different integer seeds give unrelated rows: two
    rows of different seeds coincide with probability ``2**-63``.

    ``start`` returns rows ``start .. start + batch_size - 1``: a run of ``N`` sequences done in
    chunks passes ``row_seeds(seed, len(chunk), start=lo)`` to each chunk and gets exactly the
    sequences of one call with ``seed`` on all ``N`` rows.

    Examples
    --------
    >>> a, b = row_seeds(0, 3), row_seeds(1, 3)
    >>> a[1] != b[0], row_seeds(0, 2) == a[:2], len(set(a + b))
    (True, True, 6)
    >>> row_seeds(0, 2, start=1) == a[1:]
    True
    """
    s = torch.tensor([int(seed)], dtype=torch.int64)
    rows = torch.arange(int(start), int(start) + batch_size, dtype=torch.int64)
    h = _hash_lanes([s & _M32, s >> 32, rows, torch.tensor(PURPOSE_ROW)])
    return ((h[0] << 31) | (h[1] >> 1)).tolist()  # 32 + 31 = 63 bits, in [0, 2**63)


def derive_seed(seed: int, *keys: int) -> int:
    """An integer seed for an independent stream named by ``keys`` (e.g. a purpose and a repeat).

    ``hash63(seed, len(keys), *keys, PURPOSE_DERIVE)``: the fan-out of one seed into the
    separate random experiments of a validation (target paths, draft paths, repeat ``r``)
    without ``seed + offset`` (whose streams overlap those of a neighbouring seed).

    Examples
    --------
    >>> derive_seed(0, 1) != derive_seed(1, 0), derive_seed(0, 1) == derive_seed(0, 1)
    (True, True)
    >>> 0 <= derive_seed(7, 2, 3) < 2 ** 63
    True
    """
    s = torch.tensor([int(seed)], dtype=torch.int64)
    words = [s & _M32, s >> 32, torch.tensor(len(keys))]
    for k in keys:
        if not 0 <= int(k) < 2**32:
            raise ValueError(f"keys: must lie in [0, 2**32), got {k}")
        words.append(torch.tensor(int(k)))
    h = _hash_lanes(words + [torch.tensor(PURPOSE_DERIVE)])
    return int(((h[0] << 31) | (h[1] >> 1))[0])


def check_seeds(seed: int | Sequence[int], batch_size: int) -> list[int]:
    """Per-sequence seeds: an int ``s`` gives :func:`row_seeds` ``(s, batch_size)``; a
    sequence gives one seed per row, taken as is.

    Raises
    ------
    ValueError
        Non-integer seeds, seeds outside ``[0, 2**63)``, or a list of the wrong length.
    """
    if isinstance(seed, numbers.Integral) and not isinstance(seed, bool):
        if not 0 <= int(seed) < _MAX_SEED:
            raise ValueError(f"seed: seeds must lie in [0, 2**63), got {seed}")
        return row_seeds(int(seed), batch_size)
    if isinstance(seed, (str, bytes, dict)):  # iterable, but never a list of seeds
        raise ValueError(f"seed: expected an int or a sequence of ints, got {type(seed).__name__} {seed!r}")
    try:
        seeds = list(cast("Sequence[int]", seed))
    except TypeError:
        raise ValueError(f"seed: expected an int or a sequence of ints, got {seed!r}") from None
    if len(seeds) != batch_size:
        raise ValueError(f"seed: got {len(seeds)} seeds for {batch_size} sequences")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, numbers.Integral):
            raise ValueError(f"seed: expected integer seeds, got {s!r}")
    seeds = [int(s) for s in seeds]
    for s in seeds:
        if not 0 <= s < _MAX_SEED:
            raise ValueError(f"seed: seeds must lie in [0, 2**63), got {s}")
    return seeds


def seed_tensor(
    seeds: Sequence[int] | torch.Tensor, device: str | torch.device | None = None
) -> torch.Tensor:
    """``int64`` tensor ``[B]`` of per-sequence seeds (see :func:`check_seeds`)."""
    return torch.tensor(list(seeds), dtype=torch.int64, device=device)


def uniforms(seeds: torch.Tensor, *counters: int | torch.Tensor) -> torch.Tensor:
    """Uniforms in ``(0, 1)`` as a pure function of the seeds and integer counters.

    Parameters
    ----------
    seeds : LongTensor
        Per-sequence seeds in ``[0, 2**63)``; broadcast against the counters.
    *counters : int or LongTensor
        Integers in ``[0, 2**32)``, e.g. round index, slot, purpose; broadcast together.

    Returns
    -------
    Tensor, float64, shape = broadcast shape of seeds and counters
        ``u = (m + 0.5) / 2**53`` with ``m`` a 53-bit hash of all the inputs.

    Examples
    --------
    >>> import torch
    >>> s = torch.tensor([0, 1, 2])
    >>> u = uniforms(s[:, None], 7, torch.arange(4)[None, :], PURPOSE_DRAFT)
    >>> u.shape, bool(((u > 0) & (u < 1)).all())
    (torch.Size([3, 4]), True)
    >>> bool(torch.equal(u[1], uniforms(s[1:2, None], 7, torch.arange(4)[None, :], 1)[0]))
    True
    """
    for c in counters:
        if isinstance(c, int) and not 0 <= c < 2**32:
            raise ValueError(f"counters: must lie in [0, 2**32), got {c}")
    dev = seeds.device
    words = [seeds & _M32, seeds >> 32] + [
        torch.as_tensor(c, dtype=torch.int64, device=dev) for c in counters
    ]
    h = _hash_lanes(words)
    m = (h[0] >> 5) * (2**26) + (h[1] >> 6)  # 27 + 26 = 53 bits
    return (m.to(torch.float64) + 0.5) / float(2**53)

r"""The time of one batched verification step as a staircase in the tokens it scores.

A serving engine captures its target forward as CUDA graphs for a few batch sizes (buckets) and
pads every step to the smallest bucket that holds it, so the time of a step that scores ``N``
positions (``N`` = the rows' bonus positions plus the drafted tokens they verify) is a
staircase:

.. math:: \text{time}(N) = \tau_b, \qquad b = \min\{ b : N \le \text{bucket}_b \},

flat inside a bucket and jumping at its edge. :class:`StaircaseCost` holds the buckets and their
times; the entries may be :class:`fractions.Fraction` (then every time it returns is exact).
DSpark (arXiv 2607.05147) profiles the same curve as *steps per second* ``SPS(N)``;
:meth:`StaircaseCost.from_steps_per_second` reads one (``time = 1 / SPS``). The verification
schedules of :mod:`spectheory.schedules` are judged under it (``docs/verification_schedules.md``).

Examples
--------
>>> from fractions import Fraction as F
>>> cost = StaircaseCost.from_steps_per_second([1, F(1, 2), F(9, 20)])   # DSpark's Appendix A
>>> cost.time(1), cost.time(3)
(Fraction(1, 1), Fraction(20, 9))
>>> StaircaseCost.bucketed(1.0, 0.1, buckets=(4, 8)).time(5)
1.8
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

__all__ = ["StaircaseCost"]


@dataclass(frozen=True)
class StaircaseCost:
    r"""Time of a verification step scoring ``N`` positions: ``times[b]`` for the smallest
    bucket ``buckets[b] >= N``.

    Parameters
    ----------
    buckets : sequence of int, strictly increasing, >= 1
        The padded sizes (CUDA-graph buckets); a step scores at most ``buckets[-1]`` positions.
    times : sequence of numbers > 0, non-decreasing, same length
        The time of a step padded to each bucket (seconds, or any unit); ``Fraction`` entries
        keep every result exact.

    Examples
    --------
    >>> c = StaircaseCost((2, 4), (1.0, 1.5))
    >>> [c.time(n) for n in (1, 2, 3, 4)]
    [1.0, 1.0, 1.5, 1.5]
    """

    buckets: tuple[int, ...]
    times: tuple[Any, ...]

    def __post_init__(self) -> None:
        b = tuple(int(x) for x in self.buckets)
        t = tuple(self.times)
        if not b or len(b) != len(t):
            raise ValueError(f"buckets, times: expected equal non-empty lengths, got {len(b)} and {len(t)}")
        if b[0] < 1 or any(x >= y for x, y in zip(b, b[1:], strict=False)):
            raise ValueError(f"buckets: expected strictly increasing sizes >= 1, got {b}")
        if any(not x > 0 for x in t) or any(x > y for x, y in zip(t, t[1:], strict=False)):
            raise ValueError(f"times: expected positive, non-decreasing times, got {t}")
        object.__setattr__(self, "buckets", b)
        object.__setattr__(self, "times", t)

    @classmethod
    def from_steps_per_second(cls, sps: Sequence[Any]) -> StaircaseCost:
        """One bucket per size ``N = 1, 2, ...``: ``sps[N - 1]`` steps per second, time ``1 / sps``
        (``Fraction``/int entries give exact times)."""
        if not len(sps):
            raise ValueError("sps: expected at least one rate")
        if any(not x > 0 for x in sps):
            raise ValueError(f"sps: rates must be > 0, got {list(sps)}")
        times = tuple(Fraction(1) / Fraction(x) if isinstance(x, (int, Fraction)) else 1.0 / x for x in sps)
        return cls(tuple(range(1, len(sps) + 1)), times)

    @classmethod
    def bucketed(cls, base: float, per_token: float, buckets: Sequence[int]) -> StaircaseCost:
        """A linear forward padded to buckets: ``time(N) = base + per_token * bucket(N)``."""
        if base < 0 or per_token < 0 or base + per_token <= 0:
            raise ValueError(f"base, per_token: expected >= 0, not both 0, got {base}, {per_token}")
        b = tuple(int(x) for x in buckets)
        return cls(b, tuple(base + per_token * x for x in b))

    @property
    def max_tokens(self) -> int:
        """The largest step: ``buckets[-1]`` positions."""
        return self.buckets[-1]

    def time(self, tokens: int) -> Any:
        """The time of a step scoring ``tokens`` positions (``1 <= tokens <= max_tokens``)."""
        n = int(tokens)
        if n < 1 or n > self.buckets[-1]:
            raise ValueError(f"tokens: expected 1 <= tokens <= {self.buckets[-1]}, got {tokens}")
        for b, t in zip(self.buckets, self.times, strict=True):
            if n <= b:
                return t
        raise AssertionError("unreachable")  # pragma: no cover

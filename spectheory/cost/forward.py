r"""What one forward of a model costs: :class:`ForwardCost` and its built-in forms.

A forward of a model over ``batch`` rows, each scoring ``tokens`` new tokens with ``context``
tokens already in its KV cache, takes ``f(batch, tokens, context)`` seconds. Three forms
(derivations in ``docs/cost.md``):

* :class:`ConstantForward` -- ``f = seconds`` whatever it scores (Leviathan et al. 2023's model:
  a target call costs the same for one token or ``gamma + 1``; true while the forward is
  memory-bound and the batch is small).
* :class:`LinearForward` -- ``f = base + per_token * B m + per_context * B L`` (the latency model
  cited from Liu et al. 2026, arXiv 2601.11580, ``t = a N_kv + b N_batched + c0``, fitted on H100;
  the form as quoted to us, not checked against the paper's text).
* :class:`TabulatedForward` -- the measured curve itself: per batch size a cost per scored width
  and a cost per cached position, ``f = alpha_B(m) + c_B L``, interpolated in ``m`` and ``B``
  (what a real LLM on a CPU needs: scoring ``k`` tokens costs 1.5-1.9 times one token in float32,
  neither constant nor linear in ``k``).
* :class:`RooflineForward` -- ``f = launch + max(compute, memory)``: compute time
  ``(2 P B m + A B m L) / peak_flops`` against the time to read the weights and the KV cache,
  ``(P bytes_per_param + kv_bytes_per_token B L) / bandwidth`` (Williams et al. 2009's roofline).

Every form is a frozen dataclass (hashable, comparable, with a readable ``repr``) with
:meth:`ForwardCost.describe`; arguments may be numpy arrays (the forms broadcast).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "ForwardCost",
    "ConstantForward",
    "LinearForward",
    "TabulatedForward",
    "RooflineForward",
    "interp_linear",
]


def _nonneg(value: Any, name: str, *, positive: bool = False) -> float:
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name}: expected a number, got {value!r}") from None
    if not np.isfinite(x) or x < 0 or (positive and x == 0):
        raise ValueError(f"{name}: expected a finite number {'> 0' if positive else '>= 0'}, got {value!r}")
    return x


def _check_shape(batch: Any, tokens: Any, context: Any) -> tuple[Any, Any, Any]:
    b, m, L = np.asarray(batch), np.asarray(tokens), np.asarray(context, dtype=np.float64)
    if np.any(b < 1) or not np.all(np.isfinite(b)):
        raise ValueError(f"batch: expected rows >= 1, got {batch!r}")
    if np.any(m < 1) or not np.all(np.isfinite(m)):
        raise ValueError(f"tokens: expected tokens scored per row >= 1, got {tokens!r}")
    if np.any(L < 0) or not np.all(np.isfinite(L)):
        raise ValueError(f"context: expected cached tokens >= 0, got {context!r}")
    return b, m, L


class ForwardCost(ABC):
    """Seconds of ONE forward of a model: ``f(batch, tokens, context)``.

    ``batch`` rows each score ``tokens`` new tokens with ``context`` tokens already cached.
    Subclasses are frozen dataclasses implementing :meth:`evaluate` and :meth:`describe`.
    """

    def __call__(self, batch: Any = 1, tokens: Any = 1, context: Any = 0.0) -> Any:
        """Seconds of one forward (a float for scalar arguments; arrays broadcast)."""
        b, m, L = _check_shape(batch, tokens, context)
        out = self.evaluate(b.astype(np.float64), m.astype(np.float64), L)
        return float(out) if np.ndim(out) == 0 else out

    @abstractmethod
    def evaluate(self, batch: np.ndarray, tokens: np.ndarray, context: np.ndarray) -> Any:
        """The form itself on validated float arrays."""

    @abstractmethod
    def describe(self) -> str:
        """The form as a one-line formula with its constants."""


@dataclass(frozen=True)
class ConstantForward(ForwardCost):
    """A forward costs ``seconds`` whatever it scores (Leviathan et al. 2023).

    Examples
    --------
    >>> from spectheory.cost import ConstantForward
    >>> f = ConstantForward(0.02)
    >>> f(1, 1, 0), f(64, 8, 4096)
    (0.02, 0.02)
    >>> f.describe()
    't = 0.02 s'
    """

    seconds: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "seconds", _nonneg(self.seconds, "seconds"))

    def evaluate(self, batch: np.ndarray, tokens: np.ndarray, context: np.ndarray) -> Any:
        return self.seconds + 0.0 * (batch * tokens * (context + 1.0))

    def describe(self) -> str:
        return f"t = {self.seconds:.4g} s"


@dataclass(frozen=True)
class LinearForward(ForwardCost):
    r"""``f = base + per_token * B m + per_context * B L`` (Liu et al. 2026, arXiv 2601.11580).

    Liu et al. are quoted (not checked here) as writing the latency of a forward as
    ``t = a N_kv + b N_batched + c0``, with
    ``N_batched = B m`` the tokens the forward scores and ``N_kv = B L`` the cached tokens the
    attention reads; here ``base = c0``, ``per_token = b``, ``per_context = a``.

    Parameters
    ----------
    base, per_token, per_context : float >= 0
        Seconds; seconds per scored token; seconds per cached token read.

    Examples
    --------
    >>> from spectheory.cost import LinearForward
    >>> f = LinearForward(0.01, 1e-4, 1e-7)
    >>> round(f(4, 2, 1000), 6)
    0.0112
    """

    base: float = 0.0
    per_token: float = 0.0
    per_context: float = 0.0

    def __post_init__(self) -> None:
        for name in ("base", "per_token", "per_context"):
            object.__setattr__(self, name, _nonneg(getattr(self, name), name))

    def evaluate(self, batch: np.ndarray, tokens: np.ndarray, context: np.ndarray) -> Any:
        return self.base + self.per_token * batch * tokens + self.per_context * batch * context

    def describe(self) -> str:
        return f"t = {self.base:.4g} + {self.per_token:.4g} B m + {self.per_context:.4g} B L  (s)"


def interp_linear(x: Any, xp: Any, fp: Any) -> np.ndarray:
    """Piecewise-linear through ``(xp, fp)`` (``xp`` increasing), extended linearly beyond both
    ends from the two nearest points, clipped at 0.

    Examples
    --------
    >>> interp_linear([1.5, 4.0, 0.0], [1.0, 2.0, 3.0], [1.0, 3.0, 4.0]).tolist()
    [2.0, 5.0, 0.0]
    """
    x = np.asarray(x, dtype=np.float64)
    xp, fp = np.asarray(xp, dtype=np.float64), np.asarray(fp, dtype=np.float64)
    if len(xp) == 1:
        return np.full_like(x, fp[0])
    y = np.asarray(np.interp(x, xp, fp), dtype=np.float64)
    lo, hi = x < xp[0], x > xp[-1]
    y = np.where(lo, fp[0] + (x - xp[0]) * (fp[1] - fp[0]) / (xp[1] - xp[0]), y)
    y = np.where(hi, fp[-1] + (x - xp[-1]) * (fp[-1] - fp[-2]) / (xp[-1] - xp[-2]), y)
    return np.maximum(y, 0.0)


@dataclass(frozen=True)
class TabulatedForward(ForwardCost):
    r"""The measured cost curve: ``f(B, m, L) = alpha_B(m) + c_B L`` at the batch sizes measured,
    piecewise-linear in the scored width ``m`` between the widths measured and in ``B`` between
    the batch sizes (both extended linearly beyond the ends, :func:`interp_linear`).

    The linear form ``a + b B m`` says a forward scoring ``k`` tokens costs
    ``(a + b k) / (a + b)`` times one scoring 1; on a CPU in float32 the real curve is concave
    (SmolLM2-135M: 1.5x at ``k = 2``, 1.9x at ``k = 9``, the 49,152-row head and the weight reads
    shared), so no ``a, b`` fits both ends. This form keeps one intercept per width measured
    (``fit_form("tabulated", ...)``).

    Parameters
    ----------
    batches : tuple of int, increasing
    tokens : tuple of int, increasing
        The widths measured.
    intercepts : tuple of tuples of float ``[len(batches)][len(tokens)]``
        ``alpha_B(m)``, seconds.
    per_context : tuple of float ``[len(batches)]``
        ``c_B``, seconds per cached position.

    Examples
    --------
    >>> from spectheory.cost import TabulatedForward
    >>> f = TabulatedForward((1, 4), (1, 2, 8), ((1.0, 1.5, 1.9), (2.0, 3.0, 6.0)), (0.0, 0.01))
    >>> f(1, 1, 0), f(1, 5, 0), f(4, 2, 100), f(2, 1, 0)   # measured, between widths, context, batch
    (1.0, 1.7, 4.0, 1.3333333333333333)
    """

    batches: tuple
    tokens: tuple
    intercepts: tuple
    per_context: tuple

    def __post_init__(self) -> None:
        b, m = np.asarray(self.batches, dtype=np.float64), np.asarray(self.tokens, dtype=np.float64)
        a, c = np.asarray(self.intercepts, dtype=np.float64), np.asarray(self.per_context, dtype=np.float64)
        if b.ndim != 1 or m.ndim != 1 or not len(b) or not len(m):
            raise ValueError("batches, tokens: expected non-empty 1-d tuples")
        if np.any(np.diff(b) <= 0) or np.any(np.diff(m) <= 0) or b[0] < 1 or m[0] < 1:
            raise ValueError("batches, tokens: expected increasing values >= 1")
        if a.shape != (len(b), len(m)) or c.shape != (len(b),):
            raise ValueError(
                f"intercepts, per_context: expected shapes ({len(b)}, {len(m)}) and ({len(b)},), "
                f"got {a.shape} and {c.shape}"
            )
        if not (np.all(np.isfinite(a)) and np.all(np.isfinite(c))) or a.min() < 0 or c.min() < 0:
            raise ValueError("intercepts, per_context: expected finite seconds >= 0")

    def evaluate(self, batch: np.ndarray, tokens: np.ndarray, context: np.ndarray) -> Any:
        b, m, L = np.broadcast_arrays(batch, tokens, context)
        bs = np.asarray(self.batches, dtype=np.float64)
        rows = np.stack(
            [
                interp_linear(m, self.tokens, alpha) + c * L
                for alpha, c in zip(self.intercepts, self.per_context)
            ]
        )  # [n_batches, ...]
        if len(bs) == 1:
            return rows[0]
        i = np.clip(np.searchsorted(bs, b, side="right") - 1, 0, len(bs) - 2)
        w = (b - bs[i]) / (bs[i + 1] - bs[i])
        lo = np.take_along_axis(rows, i[None], 0)[0]
        hi = np.take_along_axis(rows, (i + 1)[None], 0)[0]
        return np.maximum(lo + w * (hi - lo), 0.0)

    def describe(self) -> str:
        return f"t = alpha_B(m) + c_B L, tabulated at B in {list(self.batches)}, m in {list(self.tokens)}"


@dataclass(frozen=True)
class RooflineForward(ForwardCost):
    r"""``f = launch + max(compute, memory)``: a roofline of one forward (``docs/cost.md``).

    .. math::
        \text{compute} = \frac{2 P B m + A B m L}{\text{peak\_flops}}, \qquad
        \text{memory} = \frac{P \cdot \text{bytes\_per\_param}
        + \text{kv\_bytes\_per\_token} \cdot B L}{\text{bandwidth}}

    (a dense decoder does ``2 P`` FLOPs per scored token, and attention ``A`` FLOPs per
    (scored, cached) token pair, ``A = 4 n_layers d_model``; a forward reads every weight once
    and every row's KV cache once).

    Parameters
    ----------
    params : float > 0
        Parameters ``P``.
    peak_flops : float > 0
        FLOP/s the device reaches on the forward's matrix products (the datasheet peak, or an
        achieved fraction of it).
    bandwidth : float > 0
        Memory bandwidth, bytes/s.
    launch : float >= 0
        Fixed seconds per forward (kernel launches, framework overhead). With ``launch > 0`` a
        target call is cheaper than ``k + 1`` plain steps even past the ridge, so speculation
        can win at ``B >= m*`` (``docs/cost.md`` §6).
    kv_bytes_per_token : float >= 0
        Bytes of KV cache per cached token of one row (``2 n_layers d_kv bytes_per_value``).
    bytes_per_param : float > 0
        2 for fp16/bf16 weights.
    attention_flops_per_pair : float >= 0
        ``A`` above.

    Examples
    --------
    >>> from spectheory.cost import RooflineForward
    >>> f = RooflineForward(7e9, peak_flops=1e15, bandwidth=5e12)
    >>> round(f(1, 1, 0) * 1e3, 4), round(f(1024, 1, 0) * 1e3, 4)  # memory-bound, compute-bound
    (2.8, 14.336)
    """

    params: float
    peak_flops: float
    bandwidth: float
    launch: float = 0.0
    kv_bytes_per_token: float = 0.0
    bytes_per_param: float = 2.0
    attention_flops_per_pair: float = 0.0

    def __post_init__(self) -> None:
        for name in ("params", "peak_flops", "bandwidth", "bytes_per_param"):
            object.__setattr__(self, name, _nonneg(getattr(self, name), name, positive=True))
        for name in ("launch", "kv_bytes_per_token", "attention_flops_per_pair"):
            object.__setattr__(self, name, _nonneg(getattr(self, name), name))

    def compute_time(self, batch: Any, tokens: Any, context: Any) -> Any:
        """``(2 P B m + A B m L) / peak_flops`` seconds."""
        scored = np.asarray(batch, dtype=np.float64) * np.asarray(tokens, dtype=np.float64)
        flops = 2.0 * self.params * scored + self.attention_flops_per_pair * scored * np.asarray(context)
        return flops / self.peak_flops

    def memory_time(self, batch: Any, tokens: Any, context: Any) -> Any:
        """``(P bytes_per_param + kv_bytes_per_token B L) / bandwidth`` seconds."""
        kv = self.kv_bytes_per_token * np.asarray(batch, dtype=np.float64) * np.asarray(context)
        return (self.params * self.bytes_per_param + kv + 0.0 * np.asarray(tokens)) / self.bandwidth

    def evaluate(self, batch: np.ndarray, tokens: np.ndarray, context: np.ndarray) -> Any:
        return self.launch + np.maximum(
            self.compute_time(batch, tokens, context), self.memory_time(batch, tokens, context)
        )

    def ridge_tokens(self, context: float = 0.0) -> float:
        """Scored tokens ``B m`` (batch 1 context-free weights) where compute time equals the
        weight-reading time: ``P bytes_per_param peak_flops / (bandwidth (2 P + A L))``."""
        per_token = 2.0 * self.params + self.attention_flops_per_pair * float(context)
        return self.params * self.bytes_per_param * self.peak_flops / (self.bandwidth * per_token)

    def describe(self) -> str:
        return (
            f"t = {self.launch:.3g} + max((2 x {self.params:.3g} B m + {self.attention_flops_per_pair:.3g} B m L)"
            f" / {self.peak_flops:.3g}, ({self.params:.3g} x {self.bytes_per_param:.3g} + "
            f"{self.kv_bytes_per_token:.3g} B L) / {self.bandwidth:.3g})  (s)"
        )

r"""Fit a forward-cost form to a model's measured forwards on the user's device.

:func:`fit_cost` times the cached forward of a model (:func:`~spectheory.cost.measure.time_forward`:
warm-up calls, then the median of ``repeats`` timed calls, CUDA synchronised) at every point
``(B, m, L)`` of a grid of batch sizes, new tokens per row and cached context, and fits a form
by least squares on the *relative* error,

.. math:: \hat\theta = \arg\min_{\theta \ge 0} \sum_i \Big(\frac{f_\theta(B_i, m_i, L_i) - t_i}{t_i}\Big)^2,

so a 50 us call and a 50 ms call weigh alike. Forms:

- ``"constant"``: :math:`f = t_0` (Leviathan et al.'s unit cost: a call costs the same
  whatever it scores), :math:`\hat t_0 = \sum_i t_i^{-1} / \sum_i t_i^{-2}`;
- ``"linear"``: :math:`f = a + b\,B m + c\,B L` (a launch/weight-reading floor, a cost per
  scored token and one per cached key read; the form quoted from Liu et al. 2026), fitted by non-negative
  least squares on the rows ``[1, B m, B L] / t_i`` against 1;
- ``"tabulated"``: :math:`f = \alpha_B(m) + c_B L` (:class:`~spectheory.cost.forward.TabulatedForward`:
  one intercept per batch size and width measured, one context slope per batch size,
  interpolated between them), fitted per batch size by non-negative least squares on the rows
  ``[1{m_i = m}, L_i] / t_i`` against 1. It follows the measured curve where no two-parameter
  form does (a real LLM on a CPU: scoring 9 tokens costs 1.9 times one, 2 tokens 1.5 times);
  its error at the grid points is only the context slope's, so judge it on held-out points
  (``benchmarks/real_speed.py``, ``spectheory tune --verify``).

The result keeps the fitted :class:`~spectheory.cost.ForwardCost`, the grid and its
measurements, and the fit error ``f / t - 1`` (maximum and median of its absolute value).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._guards import check_int
from .measure import check_device, time_forward

__all__ = ["FORMS", "CostFit", "fit_cost", "fit_form"]

#: The forms :func:`fit_cost` fits.
FORMS = ("constant", "linear", "tabulated")


def _check_form(form: str) -> str:
    if form not in FORMS:
        raise ValueError(f"form: expected one of {', '.join(FORMS)}, got {form!r}")
    return form


def _design(batch: np.ndarray, tokens: np.ndarray, context: np.ndarray) -> np.ndarray:
    return np.stack([np.ones(len(batch)), batch * tokens, batch * context], axis=1).astype(np.float64)


def fit_form(
    form: str, batch: Iterable[int], tokens: Iterable[int], context: Iterable[int], seconds: Iterable[float]
) -> Any:
    r"""The :class:`~spectheory.cost.ForwardCost` of ``form`` fitted to measured ``seconds``.

    Relative least squares (module docstring); the linear form's coefficients are kept
    non-negative (``scipy.optimize.nnls``).

    Examples
    --------
    >>> b, m, L = [1, 4, 16, 1], [1, 2, 4, 8], [10, 10, 50, 0]
    >>> t = [1e-3 + 2e-5 * x * y + 1e-6 * x * z for x, y, z in zip(b, m, L)]
    >>> f = fit_form("linear", b, m, L, t)
    >>> round(f(8, 4, 20) * 1e3, 6)
    1.8
    >>> round(fit_form("constant", [1, 1], [1, 1], [0, 0], [1.0, 1.0])(3, 3, 3), 9)
    1.0
    >>> g = fit_form("tabulated", [1, 1, 1, 1], [1, 1, 9, 9], [10, 20, 10, 20], [1.0, 1.1, 1.9, 2.0])
    >>> round(g(1, 9, 30), 9), round(g(1, 5, 10), 9)   # one intercept per width, a context slope
    (2.1, 1.45)
    """
    from scipy.optimize import nnls

    from .forward import ConstantForward, LinearForward

    _check_form(form)
    B, m, L = (np.asarray(list(v), dtype=np.float64) for v in (batch, tokens, context))
    t = np.asarray(list(seconds), dtype=np.float64)
    if not (len(B) == len(m) == len(L) == len(t)) or len(t) == 0:
        raise ValueError("seconds: need one measurement per grid point (batch, tokens, context)")
    if not np.all(np.isfinite(t)) or t.min() <= 0:
        raise ValueError("seconds: measured times must be finite and > 0")
    if form == "constant":
        return ConstantForward(float(np.sum(1 / t) / np.sum(1 / t**2)))
    if form == "tabulated":
        return _fit_tabulated(B, m, L, t)
    X = _design(B, m, L) / t[:, None]
    coef, _ = nnls(X, np.ones(len(t)))
    return LinearForward(float(coef[0]), float(coef[1]), float(coef[2]))


def _fit_tabulated(B: np.ndarray, m: np.ndarray, L: np.ndarray, t: np.ndarray) -> Any:
    """``alpha_B(m) + c_B L`` per batch size, relative non-negative least squares."""
    from scipy.optimize import nnls

    from .forward import TabulatedForward

    batches, widths = np.unique(B), np.unique(m)
    alpha, slope = [], []
    for b in batches:
        at = B == b
        X = np.column_stack([m[at][:, None] == widths[None, :], L[at]]).astype(np.float64)
        coef, _ = nnls(X / t[at][:, None], np.ones(int(at.sum())))
        seen = np.isin(widths, m[at])  # a width not measured at this batch: interpolated
        alpha.append(np.interp(widths, widths[seen], coef[:-1][seen]))
        slope.append(float(coef[-1]))
    return TabulatedForward(
        tuple(int(b) for b in batches),
        tuple(int(w) for w in widths),
        tuple(tuple(float(a) for a in row) for row in alpha),
        tuple(slope),
    )


@dataclass(frozen=True)
class CostFit:
    """A fitted forward cost and the measurements behind it.

    Attributes
    ----------
    forward : ForwardCost
        ``forward(batch, tokens, context) -> seconds`` of one forward.
    form, device : str
    batch, tokens, context : int ndarray [n]
        The grid points.
    seconds : float ndarray [n]
        Median measured seconds at each point; ``low``, ``high`` the fastest and slowest repeat.
    """

    forward: Any
    form: str
    device: str
    batch: np.ndarray
    tokens: np.ndarray
    context: np.ndarray
    seconds: np.ndarray
    low: np.ndarray
    high: np.ndarray

    @property
    def predicted(self) -> np.ndarray:
        """The fitted seconds at every grid point."""
        return np.array([self.forward(int(b), int(m), int(L)) for b, m, L in self.points()])

    @property
    def relative_error(self) -> np.ndarray:
        """``predicted / seconds - 1`` at every grid point."""
        return self.predicted / self.seconds - 1.0

    @property
    def max_relative_error(self) -> float:
        return float(np.abs(self.relative_error).max())

    @property
    def median_relative_error(self) -> float:
        return float(np.median(np.abs(self.relative_error)))

    def points(self) -> list[tuple[int, int, int]]:
        return [(int(b), int(m), int(L)) for b, m, L in zip(self.batch, self.tokens, self.context)]

    def to_dict(self) -> dict:
        """JSON-ready: the form, its parameters, the grid, the measurements and the errors."""
        params = {
            k: float(v) if isinstance(v, (int, float)) else np.asarray(v, dtype=np.float64).tolist()
            for k, v in vars(self.forward).items()
            if isinstance(v, (int, float, tuple))
        }
        return {
            "form": self.form,
            "device": self.device,
            "params": params,
            "points": [
                {
                    "batch": b,
                    "tokens": m,
                    "context": L,
                    "seconds": float(s),
                    "low": float(lo),
                    "high": float(hi),
                    "predicted": float(p),
                }
                for (b, m, L), s, lo, hi, p in zip(
                    self.points(), self.seconds, self.low, self.high, self.predicted
                )
            ],
            "max_relative_error": self.max_relative_error,
            "median_relative_error": self.median_relative_error,
        }

    def __repr__(self) -> str:
        return (
            f"CostFit({self.forward!r}, {len(self.seconds)} points on {self.device}, relative error "
            f"max {self.max_relative_error:.1%}, median {self.median_relative_error:.1%})"
        )


def _ints(values: Iterable[int], name: str, minimum: int) -> list[int]:
    if isinstance(values, (int, np.integer)):
        values = [int(values)]
    out = [check_int(v, name, minimum) for v in values]
    if not out:
        raise ValueError(f"{name}: empty grid")
    return out


def fit_cost(
    model: Any,
    device: str = "cpu",
    batches: Iterable[int] = (1, 4, 16, 64),
    tokens: Iterable[int] = (1, 2, 4, 8),
    contexts: Iterable[int] = (16, 128),
    form: str = "linear",
    repeats: int = 5,
    warmup: int = 2,
    rng: np.random.Generator | int | None = None,
) -> CostFit:
    r"""Time ``model``'s cached forward over the grid ``batches x tokens x contexts`` and fit ``form``.

    Parameters
    ----------
    model : a model of the decoder contract (a shipped model, a ``GPT``, an ``HFCausalLM``);
        moved to ``device`` in place.
    device : ``"cpu"``, ``"cuda"`` or ``"cuda:N"``
    batches, tokens : iterables of int >= 1;  contexts : iterable of int >= 0
        The grid (points with ``context + tokens`` beyond the model's ``max_seq_len`` are an error).
    form : ``"constant"``, ``"linear"`` or ``"tabulated"`` (module docstring)
    repeats, warmup : int
        Timed and untimed calls per point; the median of the timed ones is fitted. The grid is
        swept in up to 3 passes (each with its own warm-up), so that a burst of load on a shared
        machine hits every point alike.
    rng : numpy Generator or seed, optional

    Returns
    -------
    CostFit

    Raises
    ------
    ValueError
        Unknown ``device`` or ``form``, an empty or invalid grid.

    Examples
    --------
    >>> from spectheory.decoder.model import GPT, GPTConfig
    >>> m = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64)).eval()
    >>> fit = fit_cost(m, batches=(1, 4), tokens=(1, 4), contexts=(8,), repeats=3, rng=0)
    >>> len(fit.seconds), fit.form, fit.max_relative_error >= fit.median_relative_error
    (4, 'linear', True)
    """
    form = _check_form(form)
    dev = check_device(device)
    grid = [
        (b, m, L)
        for b in _ints(batches, "batches", 1)
        for m in _ints(tokens, "tokens", 1)
        for L in _ints(contexts, "contexts", 0)
    ]
    gen = np.random.default_rng(rng)
    repeats = check_int(repeats, "repeats", 1)
    passes = min(repeats, 3)  # the grid is swept in passes, so that load on the machine hits all points
    split = [len(c) for c in np.array_split(np.arange(repeats), passes)]
    times = np.concatenate(
        [
            [time_forward(model, b, m, L, dev, repeats=r, warmup=warmup, rng=gen) for b, m, L in grid]
            for r in split
        ],
        axis=1,
    )
    B, M, Lc = (np.array([g[i] for g in grid], dtype=np.int64) for i in range(3))
    med = np.median(times, axis=1)
    return CostFit(
        fit_form(form, B, M, Lc, med),
        form,
        str(dev),
        B,
        M,
        Lc,
        med,
        times.min(axis=1),
        times.max(axis=1),
    )

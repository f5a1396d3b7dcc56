"""Definitions of the acceptance metrics engines report, as functions of per-request counters.

:class:`RequestCounters` holds a run's per-request counters (each request's histogram of
accepted counts, emitted and drafted tokens); :data:`DEFINITIONS` lists the ways engines turn
them into an "acceptance length", an "acceptance rate" and per-position rates, each a
:class:`MetricDefinition` that :func:`spectheory.testing.metrics.check_metrics` evaluates on the
counters and exactly on a chain.

Examples
--------
>>> import numpy as np
>>> from spectheory.testing.metric_definitions import DEFINITIONS, RequestCounters
>>> c = RequestCounters(np.array([[1, 0, 2], [3, 1, 0]]))       # 2 requests, gamma = 2
>>> c.steps.tolist(), c.accepted.tolist()
([3, 4], [4, 1])
>>> pooled = next(d for d in DEFINITIONS if d.name == "pooled_plus_one")
>>> num, den = pooled.fn({"steps": c.steps, "accepted": c.accepted}, 2, 0.0)
>>> float(num.sum() / den.sum())                                 # 1 + 5 / 7
1.7142857142857142
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["RequestCounters", "MetricDefinition", "DEFINITIONS", "FAMILIES"]

FAMILIES = ("acceptance_length", "acceptance_rate", "per_position")


@dataclass(frozen=True)
class RequestCounters:
    """Per-request counters of an engine run.

    Attributes
    ----------
    histograms : ndarray of int, shape (R, gamma + 1)
        ``histograms[r, j]``: steps of request ``r`` that accepted ``j`` drafts.
    emitted : ndarray of int, shape (R,), or None
        Tokens each request emitted (None: the horizon ``T`` of :func:`check_metrics`).
    drafted : ndarray of int, shape (R,), or None
        Draft tokens each request proposed (None: unknown; the definitions that need it are skipped).
    """

    histograms: np.ndarray
    emitted: np.ndarray | None = None
    drafted: np.ndarray | None = None

    def __post_init__(self) -> None:
        h = np.asarray(self.histograms)
        if h.ndim != 2 or h.shape[0] < 2 or h.shape[1] < 2:
            raise ValueError(f"histograms: expected shape (R >= 2, gamma + 1 >= 2), got {h.shape}")
        if h.dtype.kind not in "iu" or np.any(h < 0):
            raise ValueError("histograms: expected non-negative integer counts")
        if np.any(h.sum(1) == 0):
            raise ValueError("histograms: every request needs at least one step")
        object.__setattr__(self, "histograms", h.astype(np.int64))
        for name in ("emitted", "drafted"):
            v = getattr(self, name)
            if v is not None:
                v = np.asarray(v)
                if v.shape != (h.shape[0],) or v.dtype.kind not in "iu" or np.any(v < 0):
                    raise ValueError(f"{name}: expected {h.shape[0]} non-negative integers, got {v!r}")
                object.__setattr__(self, name, v.astype(np.int64))

    @property
    def steps(self) -> np.ndarray:
        """Steps (target calls) per request, ``[R]``."""
        return self.histograms.sum(1)

    @property
    def accepted(self) -> np.ndarray:
        """Accepted drafts per request, ``[R]``."""
        return self.histograms @ np.arange(self.histograms.shape[1])

    @classmethod
    def from_simulation(cls, res: Any) -> RequestCounters:
        """The counters of a :class:`~spectheory.rounds.SimulationResult` (each run a request)."""
        R = res.n_runs
        return cls(res.accepted_counts, np.full(R, res.horizon), np.asarray(res.draft_tokens))

    @classmethod
    def from_vllm(cls, records: Sequence[dict], emitted: Sequence[int] | None = None) -> RequestCounters:
        """From vLLM's per-request ``metrics["speculative_decoding"]`` dicts
        (``acceptance_histogram``, ``num_draft_tokens``); ``emitted``: completion tokens."""
        hist = np.array([r["acceptance_histogram"] for r in records])
        drafted = (
            np.array([r["num_draft_tokens"] for r in records]) if "num_draft_tokens" in records[0] else None
        )
        return cls(hist, None if emitted is None else np.asarray(emitted), drafted)


@dataclass(frozen=True)
class MetricDefinition:
    """One way to compute a metric from per-request counters.

    ``fn(c, gamma, D)`` gets per-request arrays ``c`` (``steps``, ``accepted``, ``emitted``,
    ``drafted`` ``[R]``; ``hist`` ``[R, gamma + 1]``) and returns ``(num, den)`` (``pooled``:
    the metric is ``sum(num) / sum(den)``) or the per-request values (their mean)."""

    name: str
    metric: str
    text: str
    pooled: bool
    needs: tuple[str, ...]
    fn: Callable[[dict, int, float], Any]


def _beyond(hist: np.ndarray, offset: int) -> np.ndarray:
    """``[R, gamma]``: steps accepting more than ``i - offset`` drafts, ``i = 0..gamma-1``."""
    tail = np.cumsum(hist[:, ::-1], axis=1)[:, ::-1]  # tail[:, j] = steps accepting >= j
    G = hist.shape[1] - 1
    return tail[:, 1 - offset : G + 1 - offset]


#: Every definition :func:`check_metrics` knows, by metric.
DEFINITIONS = (
    MetricDefinition(
        "pooled",
        "acceptance_length",
        "total emitted / total steps",
        True,
        ("emitted",),
        lambda c, g, D: (c["emitted"], c["steps"]),
    ),
    MetricDefinition(
        "pooled_plus_one",
        "acceptance_length",
        "1 + total accepted / total steps (vLLM's Prometheus formula)",
        True,
        (),
        lambda c, g, D: (c["accepted"] + c["steps"], c["steps"]),
    ),
    MetricDefinition(
        "mean_of_request_means",
        "acceptance_length",
        "mean over requests of 1 + accepted / steps (vLLM's per-request mean_acceptance_length; #42508)",
        False,
        (),
        lambda c, g, D: 1.0 + c["accepted"] / c["steps"],
    ),
    MetricDefinition(
        "mean_of_request_means_emitted",
        "acceptance_length",
        "mean over requests of emitted / steps",
        False,
        ("emitted",),
        lambda c, g, D: c["emitted"] / c["steps"],
    ),
    MetricDefinition(
        "per_drafted",
        "acceptance_rate",
        "total accepted / total drafted tokens",
        True,
        ("drafted",),
        lambda c, g, D: (c["accepted"], c["drafted"]),
    ),
    MetricDefinition(
        "per_step_gamma",
        "acceptance_rate",
        "total accepted / (total steps x gamma)",
        True,
        (),
        lambda c, g, D: (c["accepted"], g * c["steps"]),
    ),
    MetricDefinition(
        "per_step_gamma_plus_one",
        "acceptance_rate",
        "total accepted / (total steps x (gamma + 1)) (SGLang's num_steps + 1 before PR #13212)",
        True,
        (),
        lambda c, g, D: (c["accepted"], (g + 1) * c["steps"]),
    ),
    MetricDefinition(
        "per_step_draft_tokens",
        "acceptance_rate",
        "total accepted / (total steps x D), D = draft_tokens_per_step (SGLang's num_draft_tokens)",
        True,
        ("draft_tokens_per_step",),
        lambda c, g, D: (c["accepted"], D * c["steps"]),
    ),
    MetricDefinition(
        "mean_of_request_rates",
        "acceptance_rate",
        "mean over requests of accepted / (steps x gamma) (vLLM's per-request draft_acceptance_rate)",
        False,
        (),
        lambda c, g, D: c["accepted"] / (g * c["steps"]),
    ),
    MetricDefinition(
        "per_position_per_step",
        "per_position",
        "steps accepting position i / total steps (vLLM's num_accepted_tokens_per_pos / num_drafts)",
        True,
        ("hist",),
        lambda c, g, D: (_beyond(c["hist"], 0), np.broadcast_to(c["steps"][:, None], (len(c["steps"]), g))),
    ),
    MetricDefinition(
        "per_position_conditional",
        "per_position",
        "steps accepting position i / steps accepting position i - 1 (the conditional rate)",
        True,
        ("hist",),
        lambda c, g, D: (_beyond(c["hist"], 0), _beyond(c["hist"], 1)),
    ),
)

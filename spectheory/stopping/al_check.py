r"""Check a committed acceptance-length table AL(K): rows no drafter of a stated class can produce.

Cross-engine benchmarks commit one "golden" acceptance length per draft length K and compare
engines against it. :func:`check_al_table` reads such a table (and, when given, each request's
histogram of accepted counts) and flags:

* **impossible rows** (any drafter, token verification): :math:`AL(K) < 1` or
  :math:`AL(K) > K + 1` (``bonus=False``: :math:`> K`), since every call emits between 1 and
  K + 1 tokens;
* **falls** (``drafter="prefix"``: drafters whose law depends only on the output prefix, every
  autoregressive draft model): :math:`AL(K') < AL(K)` for some :math:`K' > K` by more than
  ``z`` standard errors of the difference. The monotonicity theorem
  (:mod:`spectheory.stopping.al_curves`, ``docs/acceptance_length.md``) says the true curve
  never falls for this class. ``drafter="round_start"`` (block / parallel drafters whose law at
  depth k depends on the round's start) checks the range only: the theorem does not cover
  them.

Standard errors come from a cluster bootstrap over requests (the requests are the independent
units; the steps of one request are not). Without histograms no SE exists, and a fall is
reported as *unquantified* rather than flagged.

Examples
--------
>>> from spectheory.stopping.al_check import check_al_table
>>> report = check_al_table({1: 1.8, 2: 2.4, 3: 2.3, 4: 5.5})
>>> [(r.k, r.verdict) for r in report.rows]
[(1, 'ok'), (2, 'ok'), (3, 'fall (unquantified: no per-request data)'), (4, 'impossible: AL > K + 1 = 5')]
>>> report.ok
False
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import ArrayLike

from .._guards import check_int

__all__ = ["check_al_table", "ALTableReport", "ALRow", "request_means", "DRAFTER_CLASSES"]

#: The drafter classes :func:`check_al_table` knows, with what the theory says of each.
DRAFTER_CLASSES = {
    "prefix": "draft law depends only on the output prefix: AL(K) is non-decreasing in K",
    "round_start": "draft law depends on the round's start (block drafters): range only",
}


@dataclass(frozen=True)
class ALRow:
    """One row of the table: K, the committed AL, its SE (NaN without data), the verdict."""

    k: int
    al: float
    se: float
    verdict: str
    pooled: float = float("nan")  # from the histograms: sum tokens / sum steps
    mean_of_means: float = float("nan")  # from the histograms: mean over requests of tokens/steps

    @property
    def flagged(self) -> bool:
        return self.verdict != "ok" and not self.verdict.endswith("(unquantified: no per-request data)")


@dataclass(frozen=True)
class ALTableReport:
    """What :func:`check_al_table` found; ``ok`` when no row is flagged."""

    drafter: str
    z: float
    rows: list[ALRow] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """No row flagged (an unquantified fall is not a flag: it says that data are missing)."""
        return not any(r.flagged for r in self.rows)

    def __str__(self) -> str:
        head = f"AL table, drafter class {self.drafter!r} ({DRAFTER_CLASSES[self.drafter]}), falls at z = {self.z}"
        lines = [head, f"{'K':>3} {'AL':>8} {'SE':>8} {'pooled':>8} {'mean/req':>8}  verdict"]
        for r in self.rows:
            lines.append(
                f"{r.k:>3} {r.al:>8.4f} {r.se:>8.4f} {r.pooled:>8.4f} {r.mean_of_means:>8.4f}  {r.verdict}"
            )
        return "\n".join(lines)


def request_means(hist: ArrayLike, bonus: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Per-request (tokens, steps) from histograms of accepted counts.

    Parameters
    ----------
    hist : array ``[R, K + 1]``; ``hist[r, a]`` = steps of request ``r`` that accepted ``a`` drafts
    bonus : a step accepting all K drafts emits K + 1 tokens (else K); any other step emits
        ``a + 1`` (the accepted drafts and the resampled token)

    Examples
    --------
    >>> request_means([[1, 0, 1], [0, 2, 0]])
    (array([4., 4.]), array([2., 2.]))
    """
    h = np.asarray(hist, dtype=float)
    if h.ndim != 2 or h.shape[1] < 2 or np.any(h < 0):
        raise ValueError(f"hist: expected non-negative counts of shape [R, K + 1] with K >= 1, got {h.shape}")
    k = h.shape[1] - 1
    emitted = np.arange(1, k + 2, dtype=float)
    if not bonus:
        emitted[-1] = k
    steps = h.sum(1)
    if np.any(steps == 0):
        raise ValueError("hist: a request has no steps")
    return h @ emitted, steps


def _bootstrap_se(tokens: np.ndarray, steps: np.ndarray, n_boot: int, rng: np.random.Generator) -> float:
    r = tokens.size
    idx = rng.integers(0, r, size=(n_boot, r))
    return float(np.std(tokens[idx].sum(1) / steps[idx].sum(1), ddof=1))


def check_al_table(
    table: Mapping[int, float],
    per_request: Mapping[int, ArrayLike] | None = None,
    *,
    drafter: str = "prefix",
    bonus: bool = True,
    z: float = 3.0,
    n_boot: int = 2000,
    rng: int | np.random.Generator | None = 0,
) -> ALTableReport:
    r"""Flag the rows of an AL(K) table that no drafter of the class ``drafter`` can produce.

    Parameters
    ----------
    table : mapping K -> committed AL(K) (tokens per target call, pooled over the benchmark)
    per_request : mapping K -> histograms ``[R, K + 1]`` (:func:`request_means`), optional.
        With them each row gets a cluster-bootstrap SE, its pooled AL and its mean of
        per-request means (the two definitions engines disagree on, vLLM #42508).
    drafter : ``"prefix"`` (default) or ``"round_start"`` (:data:`DRAFTER_CLASSES`)
    bonus : whether full acceptance emits the bonus token (sets the upper bound K + 1 or K)
    z : a fall is flagged when :math:`AL(K) - AL(K') > z\sqrt{SE_K^2 + SE_{K'}^2}` for some
        :math:`K < K'` (the runs of different K are independent). Under the theorem the true
        fall is 0, so each comparison's false-alarm rate is at most about
        :math:`1 - \Phi(z)` (0.13% at z = 3) when the SEs are right.
    n_boot : bootstrap resamples of requests
    rng : seed or Generator of the bootstrap

    Returns
    -------
    ALTableReport
        ``rows`` sorted by K; ``ok``; ``str(report)`` is a table.

    Raises
    ------
    ValueError
        An unknown ``drafter``, a K < 1, a histogram whose width is not K + 1.
    """
    if drafter not in DRAFTER_CLASSES:
        raise ValueError(f"drafter: {drafter!r} is not one of {sorted(DRAFTER_CLASSES)}")
    if not table:
        raise ValueError("table: no rows")
    gen = np.random.default_rng(rng)
    ks = sorted(check_int(k, "K", 1) for k in table)
    per_request = dict(per_request or {})
    stats: dict[int, tuple[float, float, float]] = {}
    for k in ks:
        if k in per_request:
            h = np.asarray(per_request[k])
            if h.ndim != 2 or h.shape[1] != k + 1:
                raise ValueError(
                    f"per_request[{k}]: expected histograms of shape [R, {k + 1}], got {h.shape}"
                )
            tokens, steps = request_means(h, bonus)
            se = _bootstrap_se(tokens, steps, n_boot, gen) if tokens.size > 1 else float("nan")
            stats[k] = (se, float(tokens.sum() / steps.sum()), float(np.mean(tokens / steps)))
        else:
            stats[k] = (float("nan"), float("nan"), float("nan"))
    rows: list[ALRow] = []
    for i, k in enumerate(ks):
        al, (se, pooled, mom) = float(table[k]), stats[k]
        top = k + 1 if bonus else k
        verdict = "ok"
        if al < 1.0:
            verdict = "impossible: AL < 1"
        elif al > top + 1e-12:
            verdict = f"impossible: AL > K{' + 1' if bonus else ''} = {top}"
        elif drafter == "prefix":
            worst = (0.0, 0, 0.0)  # (fall in SE, K of the earlier row, its AL)
            for j, earlier in zip(ks[:i], rows):
                prev, (se_j, _, _) = float(table[j]), stats[j]
                if prev <= al or earlier.verdict.startswith("impossible"):
                    continue
                sd = float(np.hypot(se, se_j))
                if np.isnan(sd):
                    verdict = "fall (unquantified: no per-request data)"
                elif (prev - al) / sd > max(z, worst[0]):
                    worst = ((prev - al) / sd, j, prev)
            if worst[1]:
                verdict = f"falls below AL({worst[1]}) = {worst[2]:.4g} by {worst[0]:.1f} SE"
        rows.append(ALRow(k, al, se, verdict, pooled, mom))
    return ALTableReport(drafter, float(z), rows)

r"""Check an engine's reported acceptance metrics against their exact values, and name the definition behind them.

Engines report an "acceptance length" and an "acceptance rate" with different denominators:
pooled over the steps of all requests, or the mean of per-request means (vLLM issue #42508: the
two differ, by Jensen's inequality, and users compare them across engines); accepted drafts over
drafted tokens, or over ``steps x D`` for a configured ``D`` (SGLang PR #13212 fixed a rate
that divided by ``steps x (num_steps + 1)`` when the draft tokens a step differ from
``num_steps + 1``). :func:`check_metrics` takes an engine run on a toy model (a
:class:`~spectheory.DecodingChain`: requests of ``T`` tokens, ``gamma`` drafts a step), with

* ``counters`` (:class:`RequestCounters`): each request's histogram of accepted counts (rounds
  accepting ``j`` drafts, ``j = 0..gamma``: vLLM's per-request ``acceptance_histogram``), and
  optionally its emitted and drafted tokens; and/or
* ``reported``: the engine's numbers, ``{"acceptance_length": 3.12, "acceptance_rate": 0.7,
  "per_position": [...]}``,

and compares every definition of :data:`DEFINITIONS` with its **exact** value on the chain:
pooled ratios are ratios of the exact expectations of :meth:`~spectheory.DecodingChain.protocol`
(``E[emitted] / E[steps]``; the pooled estimate's ``O(1/R)`` bias is far below its SE), means of
per-request means the exact mean over the request law of :func:`~.metric_laws.request_law`.
Standard errors: exact (delta method on the request law, ``Var(num - rho den) / (R E[den]^2)``,
for the definitions that are functions of a request's steps and accepted count) or, for the
others, estimated from the per-request counters (the same formula with sample moments). A
definition's value on the counters must lie within ``n_se`` SEs of its exact value.

A reported number is **named**: with counters, by the definitions whose value on the counters
equals it (to ``rtol``: the engine computed it from those counters); without, by the
definitions whose exact value lies within ``n_se`` exact SEs of it (at ``n_requests``). The report
says e.g. "your 'acceptance_length' 3.12 matches pooled (exact 3.118 +- 0.01) and not
mean_of_request_means (exact 2.95)".

Examples
--------
>>> import spectheory as st
>>> from spectheory.testing.metrics import RequestCounters, check_metrics
>>> chain = st.DecodingChain.random(3, rng=1)
>>> res = st.simulate(chain, 8, 3, n_runs=2000, rng=0)          # the "engine": 2000 requests of 8 tokens
>>> counters = RequestCounters.from_simulation(res)
>>> al = counters.emitted.sum() / counters.steps.sum()            # the engine's pooled AL
>>> report = check_metrics(chain, 3, 8, counters=counters, reported={"acceptance_length": al})
>>> report.passed, report.named["acceptance_length"]
(True, ['pooled'])
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._guards import check_bool, check_int
from .metric_definitions import DEFINITIONS, FAMILIES, MetricDefinition, RequestCounters
from .metric_laws import RequestLaw, request_law

__all__ = [
    "RequestCounters",
    "MetricDefinition",
    "DEFINITIONS",
    "MetricRow",
    "MetricsReport",
    "check_metrics",
]


def _fmt(x: Any, digits: int = 4) -> str:
    a = np.asarray(x, dtype=np.float64)
    if a.ndim == 0 or a.size == 1:
        return f"{float(a.ravel()[0]):.{digits}g}"
    return "[" + ", ".join(f"{v:.{digits}g}" for v in a.ravel()) + "]"


@dataclass
class MetricRow:
    """One definition: its exact value, and its value on the run's counters, with SEs.

    ``exact_se`` (exact, at the run's number of requests) is None where the request law does
    not determine it (drafted tokens, per-position counts); ``run``/``run_se`` are None without
    counters. ``passed``: ``|run - exact| <= n_se`` SEs (the exact SE when known)."""

    definition: MetricDefinition
    exact: np.ndarray
    exact_se: np.ndarray | None
    run: np.ndarray | None = None
    run_se: np.ndarray | None = None
    n_se: float = 5.0

    @property
    def se(self) -> np.ndarray | None:
        return self.exact_se if self.exact_se is not None else self.run_se

    @property
    def z(self) -> np.ndarray | None:
        """``(run - exact) / se`` (0 where they agree to 1e-9)."""
        if self.run is None or self.se is None:
            return None
        d = self.run - self.exact
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(np.abs(d) <= 1e-9, 0.0, d / self.se)
        return np.where(np.isnan(self.exact) & np.isnan(self.run), 0.0, z)

    @property
    def passed(self) -> bool:
        z = self.z
        return z is None or bool(np.all(np.abs(z) <= self.n_se))

    def __str__(self) -> str:
        d = self.definition
        s = f"{d.name} ({d.text}): exact {_fmt(self.exact)}"
        if self.run is not None:
            z = self.z
            worst = float(np.max(np.abs(z))) if z is not None and z.size else 0.0
            s += f"; run {_fmt(self.run)} +- {_fmt(self.se)} ({worst:.2g} SE) " + (
                "PASS" if self.passed else f"FAIL (> {self.n_se:g} SE)"
            )
        elif self.exact_se is not None:
            s += f" +- {_fmt(self.exact_se)} (SE at the run's requests)"
        return s


@dataclass
class MetricsReport:
    """What :func:`check_metrics` found: a row per definition, and the names behind the reported numbers.

    ``named[metric]`` lists the definitions a reported number matches (empty: none);
    ``passed``: every definition's value on the counters agrees with its exact value, and every
    reported number matches a definition."""

    rows: list[MetricRow]
    named: dict[str, list[str]]
    verdicts: list[str]
    config: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return all(r.passed for r in self.rows) and all(self.named.values())

    def __getitem__(self, name: str) -> MetricRow:
        for r in self.rows:
            if r.definition.name == name:
                return r
        raise KeyError(name)

    def __str__(self) -> str:
        c = self.config
        head = (
            f"spectheory.testing metrics: {'PASSED' if self.passed else 'FAILED'} (gamma {c['gamma']}, "
            f"requests of {c['horizon']} tokens, {c['requests']} requests, {c['verifier']})"
        )
        return "\n".join([head, *("  " + v for v in self.verdicts), *("  " + str(r) for r in self.rows)])


def _exact_rows(
    chain: Any, gamma: int, T: int, verifier: Any, bonus: bool, D: float, R: int, n_se: float, have: set[str]
) -> list[MetricRow]:
    res = chain.protocol(T, gamma, bonus=bonus, verifier=verifier)
    law: RequestLaw = request_law(chain, gamma, horizon=T, verifier=verifier, bonus=bonus)
    expected = {
        "steps": np.array([res.target_calls]),
        "accepted": np.array([res.accepted]),
        "drafted": np.array([res.draft_tokens]),
        "emitted": np.array([float(T)]),
        "hist": np.asarray(res.accepted_counts, dtype=np.float64)[None, :],
    }
    cells = np.nonzero(law.prob > 0)
    p = law.prob[cells]
    grid = {"steps": cells[0].astype(np.float64), "accepted": cells[1].astype(np.float64)}
    grid["emitted"] = np.full_like(grid["steps"], float(T))
    rows = []
    for d in DEFINITIONS:
        if not set(d.needs) <= have:
            continue
        on_grid = set(d.needs) <= {"emitted"}
        se = None
        with np.errstate(divide="ignore", invalid="ignore"):
            if d.pooled:
                num, den = d.fn(expected, gamma, D)
                exact = np.asarray(num, dtype=np.float64)[0] / np.asarray(den, dtype=np.float64)[0]
                if on_grid:
                    gn, gd = d.fn(grid, gamma, D)
                    En, Ed = float(p @ gn), float(p @ gd)
                    var = float(p @ (gn - En / Ed * gd) ** 2)
                    se = np.asarray(np.sqrt(var / R) / Ed)
            else:
                v = d.fn(grid, gamma, D)
                exact = np.asarray(p @ v)
                se = np.asarray(np.sqrt(float(p @ (v - exact) ** 2) / R))
        rows.append(MetricRow(d, np.asarray(exact, dtype=np.float64), se, n_se=n_se))
    return rows


def _run_values(row: MetricRow, c: dict, gamma: int, D: float) -> None:
    d = row.definition
    R = len(c["steps"])
    with np.errstate(divide="ignore", invalid="ignore"):
        if d.pooled:
            num, den = (np.asarray(x, dtype=np.float64) for x in d.fn(c, gamma, D))
            v = num.sum(0) / den.sum(0)
            resid = num - v * den
            se = np.sqrt((resid**2).sum(0) / (R * (R - 1))) / den.mean(0)
        else:
            vals = np.asarray(d.fn(c, gamma, D), dtype=np.float64)
            v, se = vals.mean(0), vals.std(0, ddof=1) / np.sqrt(R)
    row.run, row.run_se = np.asarray(v), np.asarray(se)


def check_metrics(
    chain: Any,
    gamma: int,
    horizon: int,
    *,
    counters: RequestCounters | None = None,
    reported: dict[str, Any] | None = None,
    n_requests: int | None = None,
    verifier: Any = "token",
    bonus: bool = True,
    draft_tokens_per_step: float | None = None,
    n_se: float = 5.0,
    rtol: float = 1e-3,
) -> MetricsReport:
    """Compare an engine's acceptance metrics with their exact values and name its definitions.

    Parameters
    ----------
    chain : DecodingChain
        The toy model the engine ran (target and draft laws).
    gamma, horizon : int
        Drafts per step; tokens per request ``T`` (every request).
    counters : RequestCounters, optional
        The run's per-request counters.
    reported : dict, optional
        The engine's numbers by metric: ``"acceptance_length"``, ``"acceptance_rate"`` (floats),
        ``"per_position"`` (``gamma`` floats).
    n_requests : int, optional
        Requests behind ``reported`` when no counters are given (for the exact SEs).
    verifier, bonus
        The rule and protocol the engine runs (default token verification with the bonus token).
    draft_tokens_per_step : float, optional
        The engine's configured draft tokens a step (adds ``per_step_draft_tokens``).
    n_se : float
        Tolerance in standard errors (5: a false failure about 6e-7 per value, normal approximation).
    rtol : float
        Relative tolerance of a reported number against a definition's value on the counters
        (give the engine's number to at least 4 significant digits), or its rounding against
        an exact value.

    Returns
    -------
    MetricsReport
    """
    gamma = check_int(gamma, "gamma", 1)
    T = chain.check_horizon(horizon)
    bonus = check_bool(bonus, "bonus")
    reported = dict(reported or {})
    for k in reported:
        if k not in FAMILIES:
            raise ValueError(f"reported: keys must be among {FAMILIES}, got {k!r}")
    if counters is None and n_requests is None:
        raise ValueError(
            "counters, n_requests: give the run's counters, or the number of requests behind reported"
        )
    if counters is not None and counters.histograms.shape[1] != gamma + 1:
        raise ValueError(
            f"counters: histograms need gamma + 1 = {gamma + 1} columns, got {counters.histograms.shape[1]}"
        )
    R = counters.histograms.shape[0] if counters is not None else check_int(n_requests, "n_requests", 1)
    have = {"emitted", "hist"}
    if counters is not None and counters.drafted is not None:
        have.add("drafted")
    if draft_tokens_per_step is not None:
        have.add("draft_tokens_per_step")
    D = float(draft_tokens_per_step or 0.0)
    rows = _exact_rows(chain, gamma, T, verifier, bonus, D, R, n_se, have)
    if counters is not None:
        c = {
            "steps": counters.steps,
            "accepted": counters.accepted,
            "emitted": counters.emitted if counters.emitted is not None else np.full(R, T),
            "drafted": counters.drafted,
            "hist": counters.histograms,
        }
        for row in rows:
            _run_values(row, c, gamma, D)
    named, verdicts = _name(reported, rows, counters is not None, n_se, rtol)
    bad = [r.definition.name for r in rows if not r.passed]
    if bad:
        verdicts.append(f"the run's {', '.join(bad)} disagree with their exact values (> {n_se:g} SE)")
    name = getattr(verifier, "name", verifier)
    config = {"gamma": gamma, "horizon": T, "requests": R, "verifier": name, "bonus": bonus, "n_se": n_se}
    return MetricsReport(rows, named, verdicts, config)


def _name(
    reported: dict[str, Any], rows: list[MetricRow], by_counters: bool, n_se: float, rtol: float
) -> tuple[dict[str, list[str]], list[str]]:
    named: dict[str, list[str]] = {}
    verdicts = []
    for metric, value in reported.items():
        v = np.asarray(value, dtype=np.float64)
        cands = [r for r in rows if r.definition.metric == metric]
        match: list[MetricRow] = []
        other: list[MetricRow] = []
        for r in cands:
            ref = r.run if by_counters else r.exact
            if ref is None or np.shape(ref) != v.shape or (not by_counters and r.exact_se is None):
                continue
            spread = 0.0 if by_counters or r.exact_se is None else n_se * r.exact_se
            tol = rtol * np.abs(ref) + spread + 1e-12
            (match if bool(np.all(np.abs(v - ref) <= tol)) else other).append(r)
        named[metric] = [r.definition.name for r in match]

        def say(r: MetricRow) -> str:
            where = f"on your counters {_fmt(r.run)}, " if by_counters else ""
            se = "" if r.se is None else f" +- {_fmt(r.se, 2)}"
            return f"{r.definition.name} ({where}exact {_fmt(r.exact)}{se})"

        head = f"your {metric!r} {_fmt(v)}"
        if match:
            s = f"{head} matches {' and '.join(say(r) for r in match)}"
            s += f" and not {', '.join(say(r) for r in other)}" if other else ""
        else:
            s = f"{head} matches no known definition: {', '.join(say(r) for r in other)}"
        verdicts.append(s)
    return named, verdicts

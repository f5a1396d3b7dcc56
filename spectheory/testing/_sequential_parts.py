r"""The parts of the sequential exercise (:mod:`spectheory.testing.sequential`): its sizes, the
tiny chain and its exact law, and the statistics of pairs of consecutive calls."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from scipy import stats

from .._guards import check_int, check_prob
from .._typing import RNGLike
from ._plan import seed_sequence
from .report import CheckResult, Finding, Report
from .stat_tests import TestOutcome, chi2_test

STEPS, BATCH, CHAIN_STEPS = 64, 32, 256
CHAIN_V, CHAIN_K, CHAIN_L = 3, 2, 4

#: check name -> (what it tests, kind)
SEQUENTIAL_CHECKS = {
    "calls_independent": (
        "first tokens of consecutive calls (same row): joint law = product of their exact laws",
        "lossless",
    ),
    "acceptance_serial": (
        "acceptance at consecutive calls (same row) independent: no serial correlation (Fisher exact)",
        "lossless",
    ),
    "sequence_across_calls": (
        "law of each request's first tokens generated across calls on a tiny chain = the chain's",
        "lossless",
    ),
}


def tiny_chain(rng: RNGLike, V: int = CHAIN_V) -> tuple[np.ndarray, np.ndarray]:
    """A tiny homogeneous chain ``(P, Q)``, ``[V, V]`` each: target rows with one exact zero, draft half target.

    >>> P, Q = tiny_chain(0)
    >>> P.shape, bool(np.allclose(P.sum(1), 1)), bool((P == 0).any())
    ((3, 3), True, True)
    """
    r = np.random.default_rng(seed_sequence(rng))
    V = check_int(V, "V", 2)
    P = r.dirichlet(np.full(V, 0.8), size=V)
    P[np.arange(V), (np.arange(V) + 1) % V] = 0.0  # after s, token s+1 never follows
    P /= P.sum(1, keepdims=True)
    Q = 0.5 * P + 0.5 * r.dirichlet(np.full(V, 0.8), size=V)
    return P, Q


def chain_law(P: np.ndarray, L: int, s0: int = 0) -> np.ndarray:
    """Exact law of ``L`` tokens of the chain ``P`` from token ``s0``, shape ``(V,) * L``."""
    law = P[s0]
    for _ in range(1, L):
        law = law[..., :, None] * P
    return law


# ------------------------------------------------------------------------- the statistics
def fisher_serial(first: np.ndarray, second: np.ndarray, alpha: float) -> TestOutcome:
    """Fisher's exact test that two boolean sequences of i.i.d. pairs are independent (two-sided)."""
    a, b = np.asarray(first, bool), np.asarray(second, bool)
    table = [[int(np.sum(a & b)), int(np.sum(a & ~b))], [int(np.sum(~a & b)), int(np.sum(~a & ~b))]]
    if min(a.sum(), (~a).sum(), b.sum(), (~b).sum()) == 0:
        return TestOutcome(0.0, np.inf, 1.0, True, f"constant acceptance: nothing to test (table {table})")
    odds, p = stats.fisher_exact(table)
    p = float(p)
    return TestOutcome(
        float(odds),
        np.nan,
        p,
        p >= alpha,
        f"odds ratio {odds:.3g} (table {table}, n = {a.size}, p = {p:.3g})",
    )


def _pairs(values: np.ndarray, valid: np.ndarray, steps: int, batch: int) -> tuple[np.ndarray, np.ndarray]:
    """Disjoint pairs (call ``2m``, call ``2m+1``) of the same row, both valid: ``(first, second)``."""
    S2 = steps - steps % 2
    v = values[: S2 * batch].reshape(S2, batch)
    ok = valid[: S2 * batch].reshape(S2, batch)
    keep = ok[0::2] & ok[1::2]
    return v[0::2][keep], v[1::2][keep]


def _pair_findings(name, size, y0, accepted, valid, law0, V, steps, batch, a_i, what):
    """The ``calls_independent`` and ``acceptance_serial`` findings of one driven instance."""
    a, b = _pairs(y0, valid, steps, batch)
    counts = np.bincount(a * V + b, minlength=V * V)
    res = chi2_test(counts, np.outer(law0, law0).ravel(), a_i)
    ex = ""
    if not res.passed:
        obs = counts.reshape(V, V)
        ex = (
            f"instance {name}: {steps} calls of {batch} rows in sequence; first tokens of calls 2m "
            f"(rows) and 2m+1 (columns), observed\n{obs}\nexpected (product of the exact laws)\n"
            f"{np.round(np.outer(law0, law0) * counts.sum(), 1)}"
        )
    inds = Finding.of_test(name, res, ex, size, summary=f"{res.summary}; {a.size} pairs {what}")
    fa, fb = _pairs(accepted, valid, steps, batch)
    res2 = fisher_serial(fa, fb, a_i)
    ex2 = "" if res2.passed else f"instance {name}: acceptance at calls 2m and 2m+1 of each row {what}"
    serial = Finding.of_test(name, res2, ex2, size, summary=f"{res2.summary}; {what}")
    return inds, serial


def _chain_finding(seqs, P, L, a_i, note):
    V = P.shape[0]
    law = chain_law(P, L).ravel()
    name = f"tiny chain V={V}"
    if isinstance(seqs, str):  # a failure before any law could be tested
        return Finding(name, False, summary=seqs, example=note, size=V * L)
    idx = np.zeros(len(seqs), dtype=np.int64)
    for j in range(L):
        idx = idx * V + seqs[:, j]
    counts = np.bincount(idx, minlength=law.size)
    res = chi2_test(counts, law, a_i)
    zero = counts[law == 0].sum()
    if zero:
        res = TestOutcome(np.inf, res.threshold, 0.0, False, f"{zero} requests with a token of probability 0")
    ex = "" if res.passed else f"{note}\nP = {np.round(P, 4).tolist()}"
    return Finding.of_test(name, res, ex, V * L, summary=f"{res.summary}; {len(seqs)} requests ({note})")


def sizes(sequential: bool | tuple[int, int]) -> tuple[int, int]:
    """``(steps, batch)`` of a kit entry's ``sequential=`` argument: True (the defaults) or a pair."""
    if sequential is True:
        return STEPS, BATCH
    try:
        steps, batch = sequential  # type: ignore[misc]
    except (TypeError, ValueError):
        raise ValueError(f"sequential: expected True or (steps, batch), got {sequential!r}") from None
    return check_int(steps, "steps", 2), check_int(batch, "batch", 1)


def add_sequential(report: Report, checks: Sequence[CheckResult], config: dict[str, Any]) -> Report:
    """``report`` with the sequential checks appended and ``config["sequential"]`` set (in place; returned)."""
    report.checks.extend(checks)
    report.config["sequential"] = config
    return report


def _args(steps, batch, alpha, chain_steps):
    return (
        check_int(steps, "steps", 2),
        check_int(batch, "batch", 1),
        float(check_prob(alpha, "alpha", open_low=True, open_high=True)),
        check_int(chain_steps, "chain_steps", 1),
    )

r"""Statistical tests of the conformance kit, each with a threshold at a given level ``alpha``.

* :func:`chi2_test` -- Pearson's goodness of fit with small cells pooled (cells sorted by
  expected count and merged until every bin expects at least ``min_expected`` samples), so
  the chi-square approximation is sound far in the tail; cells of probability 0 are left
  out (the kit checks them exactly).
* :func:`binomial_test` -- exact two-sided binomial test (no normal approximation).
* :func:`bernstein_lower_test` -- one-sided test that a mean of variables in ``[0, b]``
  with known variance is not below its expected value, from Bernstein's inequality
  :math:`P(\bar X - \mu \le -\varepsilon) \le \exp(-n\varepsilon^2 / (2\sigma^2 + 2b\varepsilon/3))`
  (valid for every ``n``, no approximation); :func:`bernstein_upper_test` is its mirror.

**Power by effect size** (``TestOutcome.detectable``): the smallest effect each test detects
with probability at least 1/2 at its ``n`` and level.

* chi-square (:func:`detectable_tv`): a law :math:`p'` at total variation
  :math:`\delta = \tfrac12 \sum |p'-p|` from :math:`p` has
  :math:`\chi^2(p'\|p) = \sum (p'-p)^2/p \ge (\sum |p'-p|)^2 = 4\delta^2` (Cauchy-Schwarz),
  and Pearson's statistic is then approximately noncentral chi-square with ``dof`` degrees of
  freedom and noncentrality :math:`\lambda = n\chi^2(p'\|p) \ge 4n\delta^2`. With
  :math:`\lambda^*` the noncentrality at which the test fails with probability 1/2,
  :math:`\delta^* = \tfrac12\sqrt{\lambda^*/n}`: every law at TV :math:`\ge \delta^*` (on
  the pooled bins) is detected with probability :math:`\ge 1/2`, and the law
  :math:`p' = p(1 + 2\delta^* s)` (``s = +-1`` splitting ``p`` in halves) at exactly
  :math:`\delta^*`.
* binomial: the rate shift (= the TV between the two Bernoulli laws) to the farther edge of
  the accepted band;
* Bernstein: the allowed deficit (excess) :math:`\varepsilon_\alpha` of the mean; a mean
  shift :math:`\varepsilon` of a count in ``[0, b]`` needs TV :math:`\ge \varepsilon / b`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

__all__ = [
    "TestOutcome",
    "chi2_test",
    "binomial_test",
    "bernstein_lower_test",
    "bernstein_upper_test",
    "detectable_tv",
]


@dataclass
class TestOutcome:
    """Result of one statistical test: its statistic, the critical value, p-value and verdict."""

    statistic: float
    threshold: float
    p_value: float
    passed: bool
    summary: str
    detectable: float = np.nan  # smallest effect detected with probability >= 1/2 (module docstring)


def detectable_tv(dof: int, n: int, alpha: float) -> float:
    r"""Smallest TV a chi-square test with ``dof`` degrees of freedom detects w.p. >= 1/2 at ``n``.

    :math:`\delta^* = \tfrac12\sqrt{\lambda^*/n}`, :math:`\lambda^*` solving
    :math:`P(\chi^2_{dof}(\lambda^*) > c_\alpha) = 1/2` (see the module docstring).

    Examples
    --------
    >>> from spectheory.testing.stat_tests import detectable_tv
    >>> round(detectable_tv(4, 20_000, 1e-6), 4)
    0.0195
    """
    if n <= 0 or dof < 1:
        return float("inf")
    return 0.5 * float(np.sqrt(_half_power_noncentrality(int(dof), float(alpha)) / n))


@functools.lru_cache(maxsize=256)
def _half_power_noncentrality(dof: int, alpha: float) -> float:
    from scipy.optimize import brentq

    crit = float(stats.chi2.isf(alpha, dof))
    hi = 1.0
    while stats.ncx2.sf(crit, dof, hi) < 0.5:
        hi *= 2.0
    return float(brentq(lambda lam: stats.ncx2.sf(crit, dof, lam) - 0.5, 1e-9, hi, xtol=1e-10))


def pool_cells(expected: np.ndarray, min_expected: float) -> np.ndarray:
    """Bin label of each cell (``-1`` for cells of expected count 0) after pooling small cells."""
    labels = np.full(expected.shape, -1, dtype=np.int64)
    pos = np.flatnonzero(expected > 0)
    if pos.size == 0:
        return labels
    order = pos[np.argsort(expected[pos], kind="stable")]
    e = expected[order]
    n_small = int(np.searchsorted(e, min_expected, side="left"))
    bins = np.empty(order.size, dtype=np.int64)
    b, acc = 0, 0.0
    for i in range(n_small):  # greedy over the small cells (sorted ascending)
        bins[i] = b
        acc += e[i]
        if acc >= min_expected:
            b, acc = b + 1, 0.0
    if acc > 0 and n_small < order.size:
        # leftover small cells join the smallest large cell
        bins[n_small:] = b + np.arange(order.size - n_small)
    else:
        if acc > 0 and b > 0:
            bins[:n_small][bins[:n_small] == b] = b - 1
            b -= 1
        elif acc == 0:
            b -= 1
        bins[n_small:] = b + 1 + np.arange(order.size - n_small)
    labels[order] = bins
    return labels


def chi2_test(counts: ArrayLike, probs: ArrayLike, alpha: float, min_expected: float = 20.0) -> TestOutcome:
    r"""Pearson chi-square goodness of fit of ``counts`` to ``probs`` at level ``alpha``.

    Parameters
    ----------
    counts : array_like of int, shape (C,)
    probs : array_like, shape (C,)
        Exact cell probabilities (sum 1).
    alpha : float
        Level: the test fails when the p-value is below ``alpha``.
    min_expected : float
        Every pooled bin expects at least this many samples.

    Examples
    --------
    >>> from spectheory.testing.stat_tests import chi2_test
    >>> chi2_test([480, 520], [0.5, 0.5], alpha=1e-6).passed
    True
    >>> chi2_test([300, 700], [0.5, 0.5], alpha=1e-6).passed
    False
    """
    counts = np.asarray(counts, dtype=np.float64).ravel()
    probs = np.asarray(probs, dtype=np.float64).ravel()
    n = counts.sum()
    expected = n * probs
    labels = pool_cells(expected, min_expected)
    nb = int(labels.max()) + 1 if labels.size else 0
    if nb < 2 or n == 0:
        return TestOutcome(0.0, np.inf, 1.0, True, "single bin: nothing to test")
    keep = labels >= 0
    obs = np.bincount(labels[keep], weights=counts[keep], minlength=nb)
    exp = np.bincount(labels[keep], weights=expected[keep], minlength=nb)
    x2 = float(np.sum((obs - exp) ** 2 / exp))
    dof = nb - 1
    p = float(stats.chi2.sf(x2, dof))
    crit = float(stats.chi2.isf(alpha, dof))
    return TestOutcome(
        x2,
        crit,
        p,
        bool(p >= alpha),
        f"chi2 = {x2:.4g} vs critical {crit:.4g} (dof {dof}, n = {int(n)}, p = {p:.3g})",
        detectable_tv(dof, int(n), alpha),
    )


def binomial_test(successes: int, n: int, prob: float, alpha: float) -> TestOutcome:
    """Exact two-sided binomial test that ``successes`` out of ``n`` have probability ``prob``.

    Examples
    --------
    >>> from spectheory.testing.stat_tests import binomial_test
    >>> binomial_test(5000, 10000, 0.5, 1e-6).passed, binomial_test(4000, 10000, 0.5, 1e-6).passed
    (True, False)
    """
    prob = float(np.clip(prob, 0.0, 1.0))
    if n == 0:
        return TestOutcome(np.nan, np.nan, 1.0, True, "no samples")
    lo = float(stats.binom.cdf(successes, n, prob))
    hi = float(stats.binom.sf(successes - 1, n, prob))
    p = float(min(1.0, 2.0 * min(lo, hi)))
    lo_c = float(stats.binom.ppf(alpha / 2, n, prob)) / n
    hi_c = float(stats.binom.isf(alpha / 2, n, prob)) / n
    rate = successes / n
    return TestOutcome(
        rate,
        prob,
        p,
        bool(p >= alpha),
        f"rate {rate:.5f} vs optimum {prob:.5f} (accepted band [{lo_c:.5f}, {hi_c:.5f}], "
        f"n = {n}, p = {p:.3g})",
        max(hi_c - prob, prob - lo_c),
    )


def bernstein_lower_test(
    mean: float, n: int, mu: float, var: float, bound: float, alpha: float
) -> TestOutcome:
    r"""One-sided test that a sample mean of ``n`` variables in ``[0, bound]`` is not below ``mu``.

    Fails when :math:`\mu - \bar X > \varepsilon_\alpha`, the deficit at which Bernstein's bound
    equals ``alpha``: :math:`\varepsilon_\alpha = (\tfrac23 L b + \sqrt{(\tfrac23 L b)^2 + 8 n L \sigma^2})/(2n)`,
    :math:`L = \ln(1/\alpha)`. The reported p-value is the Bernstein bound at the observed deficit.

    Examples
    --------
    >>> from spectheory.testing.stat_tests import bernstein_lower_test
    >>> bernstein_lower_test(1.49, 10000, 1.5, 0.25, 2, 1e-6).passed
    True
    >>> bernstein_lower_test(1.40, 10000, 1.5, 0.25, 2, 1e-6).passed
    False
    """
    if n == 0:
        return TestOutcome(np.nan, np.nan, 1.0, True, "no samples")
    L = np.log(1.0 / alpha)
    a = 2.0 * L * bound / 3.0
    eps = (a + np.sqrt(a * a + 8.0 * n * L * var)) / (2.0 * n)
    deficit = mu - mean
    p = 1.0 if deficit <= 0 else float(np.exp(-n * deficit**2 / (2 * var + 2 * bound * deficit / 3)))
    return TestOutcome(
        float(deficit),
        float(eps),
        p,
        bool(deficit <= eps),
        f"mean {mean:.5f} vs optimum {mu:.5f} (deficit {deficit:.5f}, allowed {eps:.5f}, "
        f"n = {n}, p <= {p:.3g})",
        float(eps),
    )


def bernstein_upper_test(
    mean: float, n: int, mu: float, var: float, bound: float, alpha: float
) -> TestOutcome:
    r"""One-sided test that a sample mean of ``n`` variables in ``[0, bound]`` is not above ``mu``.

    The mirror of :func:`bernstein_lower_test` (the variables ``bound - X``): fails when
    :math:`\bar X - \mu > \varepsilon_\alpha`. ``var`` must bound the variance of every law
    of mean ``<= mu`` the null allows (e.g. :math:`\mu(b - \mu)` for :math:`\mu \le b/2`).

    Examples
    --------
    >>> from spectheory.testing.stat_tests import bernstein_upper_test
    >>> bernstein_upper_test(1.51, 10000, 1.5, 0.25, 2, 1e-6).summary
    'mean 1.51000 vs lossless optimum 1.50000 (excess 0.01000, allowed 0.02722, n = 10000, p <= 0.143)'
    >>> bernstein_upper_test(1.60, 10000, 1.5, 0.25, 2, 1e-6).passed
    False
    """
    low = bernstein_lower_test(bound - mean, n, bound - mu, var, bound, alpha)
    if n == 0:
        return low
    excess = mean - mu
    return TestOutcome(
        low.statistic,
        low.threshold,
        low.p_value,
        low.passed,
        f"mean {mean:.5f} vs lossless optimum {mu:.5f} (excess {excess:.5f}, allowed "
        f"{low.threshold:.5f}, n = {n}, p <= {low.p_value:.3g})",
        low.detectable,
    )

r"""Verdicts the kit derives from how a sampler used randomness, and how severe a forced finding is.

* :func:`randomness_findings` -- from the :class:`~spectheory.testing.randomness.RandomRecord`
  of every run on one instance: ``uncontrolled_randomness`` (draws outside the kit's rng and
  routing: a failure for numpy's and Python's global states, a note for torch's global
  generators) and ``reseeding`` (a source seeded twice with the same value in one run, so
  every position draws the same uniforms).
* :func:`severity` -- what a forced-uniform finding costs in practice. Forcing every uniform to
  0 (or to its largest value below 1) shows *that* a wrong token can come out; a real uniform
  takes that value with probability :math:`\pi` per draw (:func:`event_probability`):
  :math:`2^{-b}`, ``b`` the mantissa width of the dtype drawn (53 float64, 24 float32, 11
  float16, 8 bfloat16), except ``u = 0`` in float16 and bfloat16, which ``torch.rand`` hits
  with probability :math:`2^{-(b+1)}` (it rounds a finer uniform; measured: 2^-9 for
  bfloat16). To first order, with ``m`` such draws a round, a fraction ``f`` of the forced
  rounds wrong and :math:`\bar L` tokens emitted a round, the rate of wrong tokens is
  :math:`10^6 \, f \, m \, \pi / \bar L` per million emitted.
* :func:`above_optimum` -- block verification (Sun et al. 2024) accepts the most drafts on
  average of all lossless single-path rules, so a mean accepted count significantly above its
  exact value (:meth:`~spectheory.testing.Instance.block_accepted_law`) proves a loss:
  "accepts more than the lossless optimum: cannot be lossless". One-sided Bernstein test with
  the largest variance a count in ``[0, k]`` of mean :math:`\le \mu` can have
  (:math:`\mu(k-\mu)` for :math:`\mu \le k/2`, else :math:`k^2/4`, by Bhatia-Davis:
  :math:`\mathrm{Var} X \le m(k-m)` at mean :math:`m`), valid for every lossless rule.
* :func:`loss_finding` -- a rule declared lossy (``check_verifier(..., lossy=True)``) is told
  how large its loss is instead of failing the law tests: the TV of the law of its first ``L``
  tokens (completed by the target) from the target's, with a confidence interval, and the drafts
  it accepts per round beyond token verification and beyond block verification. With ``n``
  rounds, cell laws ``p_c`` and the plug-in estimate
  :math:`\widehat{TV} = \tfrac12\sum_c |\hat p_c - p_c|`:
  :math:`E\widehat{TV} \ge TV` (Jensen), :math:`E\widehat{TV} \le TV + \tfrac12\sum_c
  \sqrt{p_c(1-p_c)/n}`, and :math:`\widehat{TV}` moves by at most ``1/n`` per round
  (McDiarmid: deviation :math:`t = \sqrt{\ln(2/\alpha)/(2n)}` w.p. :math:`\ge 1-\alpha`), so
  :math:`TV \in [\widehat{TV} - t - \tfrac12\sum_c\sqrt{p_c(1-p_c)/n},\ \widehat{TV} + t]`.

>>> from spectheory.testing._verdicts import severity
>>> severity({24: 32}, 16, 1.0, 3, 2.0)
'P(u = 0) = 2^-24 per float32 draw; about 0.0596 wrong tokens per million emitted on this instance (first order: 2 draws a round, 100% of forced rounds wrong, 2 tokens a round)'
>>> severity({8: 48}, 16, 0.5, 3, 2.0, "high")[:81]
'P(u = 1 - 2^-8) = 2^-8 per bfloat16 draw; about 2.93e+03 wrong tokens per million'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from .randomness import FAILING_SOURCES, RandomRecord, repeated_seeds
from .report import Finding
from .round_instance import Instance
from .stat_tests import bernstein_upper_test
from .torch_random import BITS

if TYPE_CHECKING:
    from ..verifiers.round_law_rule import RoundLawRule

__all__ = [
    "randomness_findings",
    "severity",
    "event_probability",
    "above_optimum",
    "loss_finding",
    "measured_tv",
    "declare_lossy",
    "DTYPE_OF_BITS",
]

DTYPE_OF_BITS = {b: name for name, b in BITS.items()}


def randomness_findings(records: Sequence[RandomRecord], instance: str, size: int) -> dict[str, Finding]:
    """``{"uncontrolled_randomness": Finding, "reseeding": Finding}`` over the runs of one instance."""
    sources: dict[str, str] = {}
    for rec in records:
        sources.update(rec.uncontrolled)
    failing = [s for s in sources if s in FAILING_SOURCES]
    noted = [s for s in sources if s not in FAILING_SOURCES]
    if failing:
        unc = Finding(
            instance,
            False,
            summary="uncontrolled randomness: " + "; ".join(sources[s] for s in failing),
            example=f"instance {instance}: the global state moved while the sampler ran",
            size=size,
        )
    else:
        unc = Finding(instance, True, size=size)
    if noted:
        unc.note = "uncontrolled randomness: " + "; ".join(sources[s] for s in noted)
    rep = None
    for rec in records:
        r = repeated_seeds(rec.reseeds)
        if r:
            rep = r[0]
            break
    if rep is None:
        seed = Finding(instance, True, size=size)
    else:
        fn, value, count = rep
        seed = Finding(
            instance,
            False,
            summary=(
                f"reseeds inside a call: {fn}({value}) called {count} times in one run; each call "
                "restarts the same stream, so every position (and round) draws the same uniforms"
            ),
            example=f"instance {instance}: {fn}({value}) called {count} times while the kit ran it",
            size=size,
        )
    return {"uncontrolled_randomness": unc, "reseeding": seed}


def event_probability(bits: int, which: str) -> tuple[int, str]:
    """``(e, event)``: a uniform of mantissa width ``bits`` equals the forced value w.p. ``2**-e``.

    >>> event_probability(8, "low"), event_probability(24, "low"), event_probability(8, "high")
    ((9, 'u = 0'), (24, 'u = 0'), (8, 'u = 1 - 2^-8'))
    """
    if which == "low":
        return (bits + 1 if bits in (8, 11) else bits), "u = 0"
    return bits, f"u = 1 - 2^-{bits}"


def severity(
    bits: dict, n_rounds: int, wrong_fraction: float, k: int, mean_emitted: float, which: str = "low"
) -> str:
    """The per-draw probability of a forced event and its first-order rate of wrong tokens.

    Parameters
    ----------
    bits : dict
        Routed torch draws of the forced run per mantissa width (empty: numpy float64 uniforms).
    n_rounds : int
        Rounds of the forced run.
    wrong_fraction : float
        Fraction of the forced rounds with a wrong output.
    k : int
        Draft length (numpy draws a round are taken as ``k``, the acceptance uniforms).
    mean_emitted : float
        Tokens emitted per round in the sampled run.
    which : {"low", "high"}
        The forced value.
    """
    if bits:
        b = min(bits)
        m = max(bits[b] / max(n_rounds, 1), 1.0)
    else:
        b, m = 53, float(k)
    e, event = event_probability(b, which)
    rate = 1e6 * wrong_fraction * m * 2.0**-e / max(mean_emitted, 1.0)
    return (
        f"P({event}) = 2^-{e} per {DTYPE_OF_BITS.get(b, 'float64')} draw; about {rate:.3g} "
        f"wrong tokens per million emitted on this instance (first order: {m:.3g} draws a round, "
        f"{wrong_fraction:.0%} of forced rounds wrong, {mean_emitted:.3g} tokens a round)"
    )


def above_optimum(inst: Instance, acc: np.ndarray, a_i: float, size: int) -> Finding | None:
    """The ``above_optimum`` finding for accepted counts ``acc`` on ``inst`` (None: too many blocks)."""
    block = inst.block_accepted_law()
    if block is None:
        return None
    k = inst.k
    mu = float(np.arange(k + 1) @ block)
    var = mu * (k - mu) if mu <= k / 2 else k * k / 4.0
    res = bernstein_upper_test(float(np.mean(acc)), int(acc.size), mu, var, k, a_i)
    example = ""
    if not res.passed:
        example = (
            f"instance {inst.name}\naccepted-count histogram observed "
            f"{np.bincount(acc, minlength=k + 1).tolist()}, block verification "
            f"{np.round(block, 5).tolist()}\n" + inst.describe()
        )
    verdict = "" if res.passed else "accepts more than the lossless optimum: cannot be lossless; "
    return Finding.of_test(inst.name, res, example, size, summary=verdict + res.summary)


def measured_tv(counts: np.ndarray, law: np.ndarray, alpha: float) -> tuple[float, float, float, int]:
    r"""``(tv, lo, hi, n)``: the plug-in TV of ``counts`` from ``law`` and the interval that holds
    the true TV with probability at least ``1 - alpha`` (module docstring:
    :math:`[\widehat{TV} - t - \tfrac12\sum_c\sqrt{p_c(1-p_c)/n},\ \widehat{TV} + t]`).

    >>> tv, lo, hi, n = measured_tv(np.array([50, 50]), np.array([0.5, 0.5]), 0.01)
    >>> tv, lo, round(hi, 4), n
    (0.0, 0.0, 0.1628, 100)
    """
    n = max(int(counts.sum()), 1)
    tv = 0.5 * float(np.abs(counts / n - law).sum())
    bias = 0.5 * float(np.sqrt(law * (1 - law) / n).sum())
    t = float(np.sqrt(np.log(2.0 / alpha) / (2 * n)))
    return tv, max(tv - t - bias, 0.0), min(tv + t, 1.0), n


def loss_finding(
    inst: Instance,
    law: Instance,
    counts: np.ndarray,
    seq: np.ndarray,
    length: int,
    acc: np.ndarray,
    alpha: float,
    size: int,
    stop_token: int | None = None,
    rule: RoundLawRule | None = None,
) -> Finding:
    """The ``loss`` finding of a declared-lossy rule on one instance (module docstring).

    With ``rule`` (an object with a round law, :mod:`spectheory.testing.exact_loss`) the finding
    states the exact TV, and fails when the measured interval excludes it (the sampler is not
    that rule)."""
    tv, lo, hi, n = measured_tv(counts, seq, alpha)
    k = inst.k
    mean = float(np.mean(acc)) if acc.size else 0.0
    token = float(np.arange(k + 1) @ inst.accepted_count_law(stop_token))
    block = inst.block_accepted_law() if stop_token is None else None
    gain = f"accepts {mean - token:+.4f} drafts a round beyond token verification"
    if block is not None:
        gain += f", {mean - float(np.arange(k + 1) @ block):+.4f} beyond block verification (the lossless optimum)"
    measured = f"TV of the first {length} tokens from the target {tv:.4f} (in [{lo:.4f}, {hi:.4f}] w.p. >= 1 - {alpha:.2g}, n = {n})"
    if rule is None:
        return Finding(inst.name, True, tv, summary=f"{measured}; {gain}", size=size)
    from .exact_loss import exact_output_tv

    exact = float(exact_output_tv(inst, rule, length))
    ok = lo - 1e-12 <= exact <= hi + 1e-12
    summary = f"exact TV of {rule.name!r} {exact:.6f} (enumerated, Fractions); measured {measured}; {gain}"
    if not ok:
        summary = (
            f"measured TV excludes the exact TV of {rule.name!r}: the sampler is not {rule.name!r}; "
            + summary
        )
    return Finding(inst.name, ok, exact, summary=summary, size=size)


def declare_lossy(results: list, found: dict) -> list:
    """A declared-lossy run's results: law failures become notes, ``loss`` lists every instance.

    So does a failed ``acceptance_rate`` (a lossy rule may accept more often than the lossless
    optimum); ``mean_accepted`` still fails a rule that accepts less than token verification."""
    from .report import CheckResult

    out = []
    for c in results:
        if c.name == "loss":
            rows = [f"{f.instance}: {f.summary}" for f in found["loss"]]
            bad = [f for f in found["loss"] if not f.passed]
            c = CheckResult(
                c.name,
                c.description,
                c.kind,
                not bad,
                f"{len(rows)} instances measured"
                + (f", {len(bad)} inconsistent with the named rule" if bad else ""),
                "declared lossy: measured, not judged (a rule with a round law: its exact TV must lie in the interval)",
                bad[0].summary if bad else None,
                c.findings,
                "\n         ".join(rows),
            )
        elif (c.kind == "lossless" or c.name == "acceptance_rate") and not c.passed:
            c = CheckResult(
                c.name,
                c.description,
                c.kind,
                True,
                c.statistic,
                c.threshold,
                c.failing_instance,
                c.findings,
                "declared lossy: the law test fails, as a lossy rule may (see loss)",
                c.detectable,
            )
        out.append(c)
    return out

r"""What the conformance kit reports: :class:`Finding`, :class:`CheckResult`, :class:`Report`.

A *finding* is one test of one check on one instance (a statistical test, or an exact
verdict); a check's line counts the instances it ran on and its findings separately
(``"1 of 9 instances violate it (2 findings)"``), so an instance with two failed findings
(say, sampled rounds and forced uniforms) is not counted twice.

>>> from spectheory.testing.report import Finding, summarise
>>> f = [Finding("a", True), Finding("b", False, summary="bad"), Finding("b", False, summary="worse")]
>>> summarise("x", "demo", "exact", f, 1e-4, 10, 1e-3).statistic
'1 of 2 instances violate it (2 of 3 findings); e.g. bad'
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["Finding", "CheckResult", "Report", "summarise"]


@dataclass
class Finding:
    """One test of one check on one instance."""

    instance: str
    passed: bool
    statistic: float = np.nan
    threshold: float = np.nan
    p_value: float = np.nan
    summary: str = ""
    example: str = ""  # a minimal failing instance, when failed
    size: int = 0  # V * (k+1) of the instance, to choose the smallest failure
    note: str = ""  # said even when passed (e.g. draws the kit could not route)
    detectable: float = np.nan  # smallest effect the test detects w.p. >= 1/2 (stats.TestOutcome)

    @classmethod
    def of_test(
        cls, instance: str, res: Any, example: str = "", size: int = 0, summary: str | None = None
    ) -> Finding:
        """The finding of one statistical test ``res`` (a :class:`~spectheory.testing.stat_tests.TestOutcome`)."""
        return cls(
            instance,
            res.passed,
            res.statistic,
            res.threshold,
            res.p_value,
            res.summary if summary is None else summary,
            example,
            size,
            detectable=res.detectable,
        )


@dataclass
class CheckResult:
    """Outcome of one check over all instances.

    Attributes
    ----------
    name, description : str
    kind : str
        ``"exact"``, ``"lossless"`` or ``"efficiency"``.
    passed : bool
    statistic : str
        How many instances and findings failed, and the worst finding.
    threshold : str
    failing_instance : str or None
        A minimal failing instance (smallest vocabulary and draft length among the failures),
        with what to call to reproduce it.
    findings : list of Finding
    note : str
        Something the user should know even when the check passed ("" if nothing).
    detectable : str
        The smallest effect (per instance) the check detects with probability >= 1/2 at this
        sample size and level, for the statistical checks (:mod:`spectheory.testing.stat_tests`).
    """

    name: str
    description: str
    kind: str
    passed: bool
    statistic: str
    threshold: str
    failing_instance: str | None
    findings: list = field(default_factory=list)
    note: str = ""
    detectable: str = ""

    def __str__(self) -> str:
        mark = ("NOTE" if self.note else "PASS") if self.passed else "FAIL"
        lines = [
            f"[{mark}] {self.name}: {self.description}",
            f"       statistic: {self.statistic}",
            f"       threshold: {self.threshold}",
        ]
        if self.detectable:
            lines.append(f"       detects: {self.detectable}")
        if self.note:
            lines.append(f"       note: {self.note}")
        if self.failing_instance:
            lines.append("       minimal failing instance:")
            lines += ["         " + ln for ln in self.failing_instance.splitlines()]
        return "\n".join(lines)


@dataclass
class Report:
    """What :func:`~spectheory.testing.check_verifier` found. ``str(report)`` is the readable version.

    ``passed`` covers every check run; ``lossless_passed`` only the exact and lossless ones
    (robustness and the law of the output), ``efficiency_passed`` only the efficiency ones.
    """

    verifier: str
    checks: list
    config: dict
    n_tests: int
    alpha: float

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    @property
    def lossless_passed(self) -> bool:
        return all(c.passed for c in self.checks if c.kind != "efficiency")

    @property
    def efficiency_passed(self) -> bool:
        return all(c.passed for c in self.checks if c.kind == "efficiency")

    @property
    def notes(self) -> dict:
        """Check name -> note, for the checks that carry one (passed or not)."""
        return {c.name: c.note for c in self.checks if c.note}

    @property
    def failed(self) -> list:
        """Names of the failed checks."""
        return [c.name for c in self.checks if not c.passed]

    def __getitem__(self, name: str) -> CheckResult:
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self) -> dict:
        return {
            "verifier": self.verifier,
            "passed": self.passed,
            "config": self.config,
            "n_tests": self.n_tests,
            "alpha": self.alpha,
            "checks": {
                c.name: {
                    "passed": c.passed,
                    "kind": c.kind,
                    "statistic": c.statistic,
                    "threshold": c.threshold,
                    "note": c.note,
                    "detectable": c.detectable,
                    "min_p_value": float(
                        min((f.p_value for f in c.findings if np.isfinite(f.p_value)), default=np.nan)
                    ),
                }
                for c in self.checks
            },
        }

    def __str__(self) -> str:
        cfg = self.config
        proto = cfg.get("protocol", {})
        proto_s = ", ".join(f"{k}={v}" for k, v in proto.items())
        head = (
            f"spectheory.testing report for {self.verifier}: "
            f"{'PASSED' if self.passed else 'FAILED (' + ', '.join(self.failed) + ')'}\n"
            f"  {cfg['n_instances']} instances x {cfg['n_samples']} samples, rng {cfg['rng']}"
            + (f"; protocol {proto_s}" if proto_s else "")
            + f"; torch draws routed: "
            f"{cfg.get('torch_random', False)}\n"
            f"  {self.n_tests} statistical tests at level {self.alpha:g}/{self.n_tests} = "
            f"{self.alpha / max(self.n_tests, 1):.3g} each (Bonferroni)"
        )
        rows = [
            f"  row {r['row']} {r['label']}: "
            + ("passed" if r["passed"] else "FAILED " + ", ".join(r["failed"]))
            for r in cfg.get("rows", [])
        ]
        hostile = [
            f"  hostile {h['instance']}: "
            + ("passed" if h["passed"] else "BROKE it (" + ", ".join(h["failed"]) + ")")
            + f"; requires: {h['requires']}"
            for h in cfg.get("hostile", [])
        ]
        first = next((h["example"] for h in cfg.get("hostile", []) if "example" in h), None)
        if first:
            hostile += ["  first broken hostile input:", *("    " + ln for ln in first.splitlines())]
        return "\n".join([head, *rows, *hostile, *(str(c) for c in self.checks)])


def _instances(findings: Sequence[Finding]) -> list:
    seen = []
    for f in findings:
        base = f.instance.split(" pos ")[0]
        if base not in seen:
            seen.append(base)
    return seen


def summarise(
    name: str, desc: str, kind: str, findings: Sequence[Finding], a_i: float, M: int, alpha: float
) -> CheckResult:
    """Fold the findings of one check into a :class:`CheckResult` (instances and findings counted apart)."""
    fails = [f for f in findings if not f.passed]
    passed = not fails
    minimal = min(fails, key=lambda f: f.size) if fails else None
    n_inst = len(_instances(findings))
    bad_inst = len(_instances(fails))
    exact = kind == "exact" or (findings and not any(np.isfinite(f.p_value) for f in findings))
    if exact:
        stat = (
            f"{bad_inst} of {n_inst} instances violate it ({len(fails)} of {len(findings)} findings); "
            f"e.g. {minimal.summary}"
            if minimal is not None
            else f"0 violations on {n_inst} instances"
        )
        thr = "no violation allowed"
    else:
        ps = [f for f in findings if np.isfinite(f.p_value)]
        if not findings:
            stat = "not run (the verifier raised or returned nothing usable)"
        elif minimal is not None:
            stat = (
                f"{len(fails)} of {len(findings)} tests fail on {bad_inst} of {n_inst} instances; "
                f"smallest failing {minimal.instance}: {minimal.summary}"
            )
        else:
            worst = min(ps, key=lambda f: f.p_value)
            stat = (
                f"0 of {len(findings)} tests fail on {n_inst} instances; smallest p-value on "
                f"{worst.instance}: {worst.summary}"
            )
        thr = f"p < {a_i:.3g} fails (alpha {alpha:g} / {M} tests, Bonferroni)"
    notes = [f for f in findings if f.note]
    note = ""
    if notes:
        on = _instances(notes)
        note = f"{notes[0].note} (on {len(on)} of {n_inst} instances)"
    return CheckResult(
        name,
        desc,
        kind,
        passed,
        stat,
        thr,
        minimal.example if minimal else None,
        list(findings),
        note,
        _detectable(name, findings),
    )


#: check -> the effect its statistical tests measure (see spectheory.testing.stat_tests)
EFFECTS = {
    "first_token_law": "TV",
    "position_laws": "TV",
    "sequence_law": "TV",
    "acceptance_rate": "shift of the first-draft acceptance rate (its TV)",
    "mean_accepted": "shift of E[accepted drafts] (TV >= shift / k)",
    "above_optimum": "excess of E[accepted drafts] (TV >= excess / k)",
}


def _detectable(name: str, findings: Sequence[Finding]) -> str:
    d = [f.detectable for f in findings if np.isfinite(f.detectable)]
    if not d:
        return ""
    what = EFFECTS.get(name, "effect")
    best = min((v for v in d if v > 0), default=0.0)
    return (
        f"{what} >= {max(d):.3g} on every instance ({best:.3g} on the most sensitive), "
        f"with probability >= 1/2 at this sample size and level"
    )

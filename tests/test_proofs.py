"""The symbolic proofs in proofs/: every check() passes, and the checks can fail.

The negative controls break one ingredient of a proof (a wrong residual, a wrong weight
law, a non-identity) and require AssertionError, so a check that cannot fail would be caught.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import sympy as sp

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # proofs/ is a top-level folder, not an installed package
    sys.path.insert(0, str(ROOT))

import proofs  # noqa: E402
from proofs import _sym  # noqa: E402


@pytest.mark.parametrize("name", proofs.PROOFS)
def test_check_passes(name):
    module = importlib.import_module(f"proofs.{name}")
    module.check()  # raises AssertionError if sympy fails to reduce


def test_run_all_reports_every_proof():
    results = proofs.run_all(["acceptance_tv", "pareto_line"])
    assert [r.name for r in results] == ["acceptance_tv", "pareto_line"]
    assert all(r.ok and r.seconds >= 0 and r.message == "" for r in results)
    with pytest.raises(ValueError, match="name"):
        proofs.run_one("no_such_proof")


def test_assert_zero_rejects_a_non_identity():
    p, q = sp.symbols("p q", positive=True)
    _sym.assert_equal((p**2 - q**2) / (p - q), p + q, "true identity")
    with pytest.raises(AssertionError, match="wrong"):
        _sym.assert_equal(p + q, p - q, "wrong")


def test_resolve_refuses_an_uncertified_comparison():
    p, q, r = sp.symbols("p q r", positive=True)
    signs = {sp.expand(p - q): 1}
    assert _sym.resolve(sp.Min(p, q), signs) == q
    assert _sym.resolve(sp.Max(q - p, 0), signs) == 0
    assert _sym.resolve(sp.Abs(q - p), signs) == p - q
    with pytest.raises(AssertionError, match="cannot certify"):
        _sym.resolve(sp.Min(p, r), signs)


def test_one_step_check_fails_with_a_wrong_residual(monkeypatch):
    mod = importlib.import_module("proofs.one_step_law")

    def buggy_step_law(target, draft):  # residual from max(q - p, 0): a classic bug
        accept = [q * sp.Min(1, p / q) for p, q in zip(target, draft)]
        rho = sum(q - a for q, a in zip(draft, accept))
        excess = [sp.Max(q - p, 0) for p, q in zip(target, draft)]
        mass = sum(sp.Max(p - q, 0) for p, q in zip(target, draft))
        return [a + rho * e / mass for a, e in zip(accept, excess)], mass, rho

    monkeypatch.setattr(mod, "step_law", buggy_step_law)
    with pytest.raises(AssertionError):
        mod.check()


def test_theorem1_check_fails_with_draft_weighted_prefixes(monkeypatch):
    mod = importlib.import_module("proofs.theorem1_chain")
    original = mod.theorem1_sum
    # prefixes weighted by the draft's law instead of the target's: not Theorem 1
    monkeypatch.setattr(
        mod, "theorem1_sum", lambda target, draft, horizon, vocab=2: original(draft, target, horizon, vocab)
    )
    with pytest.raises(AssertionError):
        mod._check(2, (1,))


def test_command_line_prints_one_line_per_result():
    out = subprocess.run(
        [sys.executable, "-m", "proofs", "acceptance_tv", "one_step_law"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 and all(line.startswith("PASS") for line in lines)
    bad = subprocess.run(
        [sys.executable, "-m", "proofs", "nope"], cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert bad.returncode == 2 and "unknown proof" in bad.stderr

"""A rule defined in this file only gets its exact loss from the kit: the kit reads ``lossless``.

The rule is *square-root acceptance*: accept draft token ``x`` with ``min(1, sqrt(p(x)/q(x)))``
and after a rejection emit from ``norm((p - q)_+)`` (p = target, q = draft), token
verification's residual -- so it accepts more often than token verification and is lossy. The
class declares ``lossless = False`` and its own :meth:`round_law` (the package's step walker with
its one-position step). Nothing in the package knows it, yet the conformance kit reports it lossy
with its exact TV (not failed), the claimed-vs-exact table settles it, and a lossless control and
a wrong declaration are judged as such.
"""

import math
from fractions import Fraction

import numpy as np
import pytest

from spectheory.analysis.verdicts import RuleClaim, settle_claims
from spectheory.laws.sampling import residual_weights, sample_categorical
from spectheory.testing import check_verifier, make_instance
from spectheory.testing.exact_loss import exact_output_tv
from spectheory.verifiers import Verifier
from spectheory.verifiers.stepwise import ratio_step, stepwise_round_law

KIT = dict(n_samples=4000, rng=3, vocab_sizes=(3,), gammas=(2,), efficiency=False, progress=False)


def _sqrt(ratio):
    """``sqrt`` as the exact rational of the float both forms use (Fractions stay exact)."""
    return Fraction(math.sqrt(float(ratio)))


class SqrtAcceptance(Verifier):
    """Accept with ``min(1, sqrt(p(x)/q(x)))``, residual ``norm((p - q)_+)``: lossy."""

    name = "sqrt_acceptance_test"
    lossless = False

    def _rule(self, t, d, x, k, u_accept, u_final):
        R, g, _ = d.shape
        tx = np.take_along_axis(t[:, :g], x[..., None], axis=-1)[..., 0]
        dx = np.take_along_axis(d, x[..., None], axis=-1)[..., 0]
        b = np.minimum(1.0, np.sqrt(tx / dx))  # x ~ q: dx > 0
        ok = (u_accept < b) & (np.arange(g)[None, :] < k[:, None])
        j = np.cumprod(ok, axis=1).sum(axis=1).astype(np.int64)
        rows, jc = np.arange(R), np.minimum(j, g - 1)
        law = np.where((j < k)[:, None], residual_weights(t[rows, jc], d[rows, jc]), t[rows, k])
        return j, sample_categorical(law, u_final)

    def round_law(self, target_fn, draft_fn, vocab_size, gamma, prefix=()):
        def step(p, q, x):
            _, residual, total = ratio_step(p, q, x)
            return min(1, _sqrt(p[x] / q[x])), residual, total

        return stepwise_round_law(step, target_fn, draft_fn, vocab_size, gamma, prefix)


class TokenAgain(SqrtAcceptance):
    """The lossless control: token verification's acceptance, written the same way."""

    name = "token_again_test"
    lossless = True

    def _rule(self, t, d, x, k, u_accept, u_final):
        from spectheory.verifiers.token import token_rule

        return token_rule(t, d, x, k, u_accept, u_final)

    def round_law(self, target_fn, draft_fn, vocab_size, gamma, prefix=()):
        return stepwise_round_law(ratio_step, target_fn, draft_fn, vocab_size, gamma, prefix)


def test_the_rules_own_round_law_gives_its_exact_loss():
    inst = make_instance("markov", 3, 2, rng=0)
    assert SqrtAcceptance().has_round_law and exact_output_tv(inst, SqrtAcceptance()) > Fraction(1, 100)
    assert exact_output_tv(inst, TokenAgain()) == 0


def test_kit_reports_a_declared_lossy_rule_with_its_exact_loss_not_failed():
    rule = SqrtAcceptance()
    report = check_verifier(rule, **KIT)
    assert report.passed, str(report)
    assert report.config["protocol"]["lossy"] == rule.name
    note = report["loss"].note
    assert f"exact TV of {rule.name!r}" in note
    exact = [f.statistic for f in report["loss"].findings]
    assert max(exact) > 0.01
    for f in report["loss"].findings:  # each instance: the TV enumerated from the rule's own law
        inst = next(i for i in _instances(report) if i.name == f.instance)
        assert f.statistic == pytest.approx(float(exact_output_tv(inst, rule)), abs=1e-12)
    # a law test that failed became a note: the loss is measured, not judged
    assert any("declared lossy" in (c.note or "") for c in report.checks if c.kind == "lossless")


def test_a_lossless_control_passes_and_a_wrong_declaration_fails():
    control = check_verifier(TokenAgain(), **KIT)
    assert control.passed and control.config["protocol"]["lossy"] is False
    assert "loss" not in [c.name for c in control.checks]
    liar = SqrtAcceptance()
    liar.lossless = True  # declares lossless: the law tests judge it
    failed = set(check_verifier(liar, **KIT).failed)
    assert failed & {"first_token_law", "position_laws", "sequence_law"}


def test_the_sampler_must_be_its_round_law():
    class Mislabelled(SqrtAcceptance):  # samples square-root acceptance, declares token's law
        round_law = TokenAgain.round_law

    report = check_verifier(Mislabelled(), **KIT)
    assert not report.passed and "loss" in report.failed
    assert "the sampler is not" in str(report["loss"].failing_instance)


def test_claimed_vs_exact_settles_the_new_rule():
    p, q = (lambda c: [Fraction(1, 3), Fraction(2, 3)]), (lambda c: [Fraction(2, 3), Fraction(1, 3)])
    claims = [
        RuleClaim(SqrtAcceptance(), "this file", False, "token_again_test"),
        RuleClaim(TokenAgain(), "x", True),
    ]
    with pytest.raises(ValueError, match="unknown verifier 'token_again_test'"):  # versus: not registered
        settle_claims([("sun", p, q, 2, 2)], claims)
    claims[0] = RuleClaim(SqrtAcceptance(), "this file", False, TokenAgain(), ">")
    rows = settle_claims([("sun", p, q, 2, 2)], claims)
    assert rows[0]["verdict"] == "biased, as declared; accepts > token_again_test: holds"
    assert rows[1]["verdict"] == "lossless, as claimed"


def _instances(report):
    from spectheory.testing._plan import _plan

    insts, _ = _plan(KIT["vocab_sizes"], KIT["gammas"], report.config["families"], KIT["rng"])
    return insts


def test_a_sampler_that_is_not_a_verifier_may_declare_it_too():
    from spectheory.testing.gallery_engines import longest_joint_ratio_prefix

    def verify(*args):
        return longest_joint_ratio_prefix(*args)

    verify.lossless = False
    report = check_verifier(verify, n_samples=500, rng=0, progress=False)
    assert report.config["protocol"]["lossy"] is True  # no round law: a Monte Carlo estimate
    assert "loss" in [c.name for c in report.checks] and report.lossless_passed
    assert (
        check_verifier(verify, n_samples=500, rng=0, progress=False, lossy=False).config["protocol"]["lossy"]
        is False
    )

"""A new verification rule, defined in this file only, runs through every engine.

The rule is *scaled token verification* (lossless, not optimal): accept draft token ``x`` with
probability ``s * min(1, p(x)/q(x))`` and after a rejection emit from the unique law that keeps
the output unbiased, ``(p - s min(p, q)) / (1 - s sum min(p, q))`` (p = target, q = draft).
Nothing in the package knows it: one class gives the pure rule, the exact masses and (through the
default adapter) the torch form, and the exact engine, ``simulate``, the real decoder on a shipped
model and the conformance kit all run it.
"""

import numpy as np
import pytest
from _helpers import assert_within_se

import spectheory as st
from spectheory.laws.sampling import sample_categorical
from spectheory.verifiers import Verifier

SCALE = 0.6


class ScaledToken(Verifier):
    name = "scaled_token_test"
    lossless = True

    def __init__(self, scale=SCALE):
        self.scale = scale

    def _correction(self, t, d):
        """Rejection mass ``p - s min(p, q)`` (unnormalised law after a rejection)."""
        return np.maximum(t - self.scale * np.minimum(t, d), 0.0)

    def _rule(self, t, d, x, k, u_accept, u_final):
        R, g, _ = d.shape
        tx = np.take_along_axis(t[:, :g], x[..., None], axis=-1)[..., 0]
        dx = np.take_along_axis(d, x[..., None], axis=-1)[..., 0]
        ok = (u_accept * dx < self.scale * np.minimum(tx, dx)) & (np.arange(g)[None, :] < k[:, None])
        j = np.cumprod(ok, axis=1).sum(axis=1)
        rows, jc = np.arange(R), np.minimum(j, g - 1)
        law = np.where((j < k)[:, None], self._correction(t[rows, jc], d[rows, jc]), t[rows, k])
        return j, sample_categorical(law, u_final)

    def phase_masses(self, chain):
        cache = {}

        def masses(n, i):
            key = 0 if chain.is_homogeneous else n
            if key not in cache:
                t, d = chain.kernels(n)
                cache[key] = (self.scale * np.minimum(t, d), self._correction(t, d))
            return cache[key]

        return (lambda n, i: masses(n, i)[0]), (lambda n, i: masses(n, i)[1]), False


RULE = ScaledToken()


def test_exact_engine_runs_the_new_rule_and_it_is_lossless():
    chain = st.DecodingChain.random(3, concentration=0.7, rng=4)
    res = chain.protocol(5, 2, verifier=RULE)
    token = chain.protocol(5, 2)
    assert res.rejections > token.rejections  # lossless but not optimal (Theorem 2)
    np.testing.assert_allclose(
        chain.sequence_law(5, 2, verifier=RULE), chain.sequence_law(5, method="target"), atol=1e-13
    )
    # scale 1 is token verification itself
    np.testing.assert_allclose(
        chain.protocol(5, 2, verifier=ScaledToken(1.0)).target_calls, token.target_calls, rtol=1e-13
    )


@pytest.mark.parametrize("bonus", [True, False])
def test_simulate_runs_the_new_rule_and_agrees_with_exact(bonus):
    chain = st.DecodingChain.random(4, concentration=0.6, rng=2)
    exact = chain.protocol(12, 3, bonus=bonus, verifier=RULE)
    sim = st.simulate(chain, 12, 3, 20_000, rng=9, bonus=bonus, verifier=RULE)
    assert sim.verifier == RULE.name
    for name in ("target_calls", "rejections", "draft_tokens", "accepted"):
        assert_within_se(*sim.mean_se(name), getattr(exact, name), name)  # 5 SE, seed fixed


def test_real_decoder_runs_the_new_rule_losslessly():
    pytest.importorskip("torch")
    from spectheory.decoder import load_model
    from spectheory.validation import exact_two_token_law, lossless_check

    target, draft = load_model("target"), load_model("draft-tiny")
    prompt = list(b"def ")
    law = exact_two_token_law(target, prompt)
    res = lossless_check(target, draft, prompt, 3000, 2, seed=5, rule=RULE, law=law)
    assert res["rule"] == RULE.name
    assert res["pvalue"] > 1e-6, res  # a correct rule fails with probability 1e-6


def test_conformance_kit_runs_the_new_rule():
    from spectheory.testing import check_verifier

    report = check_verifier(RULE, n_samples=4000, rng=3, efficiency=False)
    assert report.passed, str(report)


def test_registering_makes_the_new_rule_available_by_name():
    from spectheory.verifiers import get_verifier, list_verifiers, register_verifier

    rule = register_verifier(ScaledToken(0.5), replace=True)
    assert get_verifier("scaled_token_test") is rule and "scaled_token_test" in list_verifiers()
    with pytest.raises(ValueError, match="already registered"):
        register_verifier(ScaledToken(0.7))
    with pytest.raises(ValueError, match="unknown verifier"):
        get_verifier("no_such_rule")

"""The package's rules and round kinds through ``parametrize_with_checks``: a new one is one line.

Each object gets the checks of the engines it declares it supports (``Round.tags()``, and for a
rule its exact engine and round law): exact vs Monte Carlo (5 SE), exact vs a Fraction
enumeration of its round law, the decoder's law (chi-square) and the conformance kit. Rules and a
round kind defined here, in one file, go through the same line; a broken rule fails each check.
"""

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

import spectheory as st
from spectheory.laws.sampling import sample_categorical
from spectheory.rounds import Round, RoundOutcome
from spectheory.stopping import FixedGamma, PolicyRound
from spectheory.testing import parametrize_with_checks
from spectheory.testing.checks_by_tags import checks_for
from spectheory.testing.engine_checks import (
    check_decoder_law,
    check_exact_vs_enumeration,
    check_exact_vs_monte_carlo,
    check_kit,
    torch_available,
)
from spectheory.trees import DraftTree, TreeRound
from spectheory.verifiers import TokenVerifier, Verifier, list_verifiers

SLOW = pytest.mark.slow


# ------------------------------------------------------------------ rules defined in this file
class ScaledToken(Verifier):
    """``docs/verifiers.md``'s example: accept with ``s min(1, p/q)``, correct from
    ``p - s min(p, q)`` (lossless), with its exact engine and its round law."""

    name, lossless = "scaled_token_test", True

    def __init__(self, scale=0.5):
        self.scale = scale

    def _correction(self, t, d):
        return np.maximum(t - self.scale * np.minimum(t, d), 0.0)

    def _rule(self, t, d, x, k, u_accept, u_final):
        R, g, _ = d.shape
        tx = np.take_along_axis(t[:, :g], x[..., None], -1)[..., 0]
        dx = np.take_along_axis(d, x[..., None], -1)[..., 0]
        ok = (u_accept * dx < self.scale * np.minimum(tx, dx)) & (np.arange(g) < k[:, None])
        j = np.cumprod(ok, axis=1).sum(axis=1)
        rows, jc = np.arange(R), np.minimum(j, g - 1)
        law = np.where((j < k)[:, None], self._correction(t[rows, jc], d[rows, jc]), t[rows, k])
        return j, sample_categorical(law / law.sum(-1, keepdims=True), u_final)

    def phase_masses(self, chain):
        def acc(n, i):
            return self.scale * np.minimum(*chain.kernels(n))

        def rej(n, i):
            return self._correction(*chain.kernels(n))

        return acc, rej, False

    def _rejected(self, p, q):  # what a rejection emits, joint with the rejection
        s = Fraction(self.scale)
        return [p[y] - s * min(p[y], q[y]) for y in range(len(p))]

    def _accepted(self, p, q, x):  # P(draft x and accept it)
        return Fraction(self.scale) * min(p[x], q[x])

    def round_law(self, target_fn, draft_fn, vocab_size, gamma, prefix=()):
        out = {}

        def add(key, w):
            if w:
                out[key] = out.get(key, 0) + w

        def walk(drafted, prob):
            p = target_fn(tuple(prefix) + drafted)
            if len(drafted) == gamma:
                for y in range(vocab_size):
                    add(drafted + (y,), prob * p[y])
                return
            q = draft_fn(tuple(prefix) + drafted)
            for x in range(vocab_size):
                if self._accepted(p, q, x):
                    walk(drafted + (x,), prob * self._accepted(p, q, x))
            for y, w in enumerate(self._rejected(p, q)):
                add(drafted + (y,), prob * w)

        walk((), 1)
        return out


class ResampleFromTarget(ScaledToken):
    """Lossy on purpose: token verification's acceptance, but a rejection emits from ``p``
    (not the residual), so it over-weights the tokens the draft likes."""

    name, lossless = "resample_from_target_test", False

    def __init__(self):
        super().__init__(1.0)

    def _correction(self, t, d):  # joint mass of a rejection and its token: (1 - sum min) p
        return (1.0 - np.minimum(t, d).sum(-1, keepdims=True)) * t

    def _rejected(self, p, q):
        r = 1 - sum(min(a, b) for a, b in zip(p, q))
        return [r * v for v in p]


class AcceptAll(TokenVerifier):
    """A bug: it accepts every draft yet keeps token verification's exact engine."""

    name = "accept_all_bug"
    torch_rule = Verifier.torch_rule  # the decoder and the simulator run the (buggy) numpy rule
    fused_round = Verifier.fused_round

    def _rule(self, t, d, x, k, u_accept, u_final):
        return k.copy(), sample_categorical(t[np.arange(len(k)), k], u_final)


class OneToken(Round):
    """A round kind the package never imports: draft one token, verify it by token verification,
    in every engine (Monte Carlo by hand, exact values, the decoder's and the kit's visitors)."""

    name, max_depth, verifier_name = "one_token_test", 1, "token"

    def play(self, sampler, runs, rng):
        horizon, n, state = runs.horizon, runs.n, runs.state
        x = sampler.sample_draft(n, state, rng.random(n.size))
        p, q = sampler.probs(sampler.target, n, state, x), sampler.probs(sampler.draft, n, state, x)
        ok = rng.random(n.size) * q < p
        s1, u = sampler.next_state[state, x], rng.random(n.size)
        y = np.where(
            ok,
            sampler.sample_target(np.minimum(n + 1, horizon - 1), s1, u),
            sampler.sample_residual(n, state, u),
        )
        one = np.ones(n.size, dtype=np.int64)
        path = x[:, None] if runs.keep_path else None
        return RoundOutcome(ok.astype(np.int64), y, ~ok, one, np.where(ok, s1, state), path)

    def exact(self, chain, horizon, *, bonus=True, cost=None, **options):
        return chain.protocol(horizon, 1, bonus=bonus, cost=cost, **options)

    def decode(self, loops, target, draft, prompts, max_new_tokens, options):
        return loops.path(target, draft, prompts, max_new_tokens, 1, verifier="token", **options)

    def check_plan(self, kit, options):
        return kit.verifier("token", gammas=(1,), **options)


# ------------------------------------------------------------------ the package's own, one line each
FAST_RULES = [n for n in list_verifiers() if n != "hsd_naive"]


@parametrize_with_checks(
    [
        *FAST_RULES,
        pytest.param("hsd_naive", marks=SLOW),  # its Monte Carlo plays every forward pass
        st.PathRound(3, "hsd"),
        TreeRound(DraftTree.from_branching([3]), "tree_rrs_wo"),
        pytest.param(TreeRound(DraftTree.from_branching([2, 2]), "traversal"), marks=SLOW),  # its kit: ~1 min
        st.BatchRound(2, 2),
        st.BatchRound(2, 2, reading="gls"),
        st.BatchRound(2, 2, reading="tree"),
        PolicyRound(FixedGamma(2)),
    ]
)
def test_package_rules_and_rounds(obj, check):
    check(obj)


@parametrize_with_checks([ScaledToken(), ResampleFromTarget(), OneToken()])
def test_rules_and_a_round_kind_defined_in_a_user_file(obj, check):
    check(obj)


# ------------------------------------------------------------------ what is chosen, and that it can fail
def test_checks_follow_the_declared_capabilities():
    names = lambda obj: [c.__name__ for c in checks_for(obj)]  # noqa: E731
    assert names(ScaledToken())[:2] == ["check_exact_vs_monte_carlo", "check_exact_vs_enumeration"]
    assert "check_exact_vs_enumeration" not in names("tree_rrs")  # no round law for a tree

    class NoExact(st.PathRound):
        def tags(self):
            off = dict.fromkeys(("exact", "decoder", "kit"), False)
            return replace(super().tags(), **off, why_not=dict.fromkeys(off, "a test"))

    class Everything(st.PathRound):
        def tags(self):
            return replace(super().tags(), decoder=True, kit=True)

    assert not [n for n in names(NoExact(2)) if "exact" in n]  # refused: no check, not a skip
    got = names(Everything(2))
    assert "check_kit" in got and ("check_decoder_law" in got) == torch_available()

    class NoEngine(Verifier):  # a rule without an exact engine: Monte Carlo has nothing to match
        name = "no_engine_test"

    assert names(NoEngine()) == [c for c in names(NoEngine()) if "exact" not in c]
    # the decoder's path loop samples its drafts; it and the kit's path plan play one-call rounds
    assert "check_decoder_law" not in names("argmax_soft") and "check_kit" not in names("hsd_naive")
    assert "check_decoder_law" not in names("hsd_naive")
    mark = parametrize_with_checks([pytest.param("token", marks=SLOW, id="tok")])
    assert [p.id for p in mark.args[1]][:1] == ["tok-exact_vs_monte_carlo"]
    assert all([m.name for m in p.marks] == ["slow"] for p in mark.args[1])


def test_a_broken_rule_fails_the_engine_checks():
    with pytest.raises(AssertionError, match="exact .* vs Monte Carlo"):
        check_exact_vs_monte_carlo(AcceptAll())

    class WrongLaw(ScaledToken):  # its round law is token verification's, its engine is not
        name = "wrong_law_test"

        def _accepted(self, p, q, x):
            return min(p[x], q[x])

        def _rejected(self, p, q):
            return [max(a - b, 0) for a, b in zip(p, q)]

    with pytest.raises(AssertionError, match="enumeration of the round law"):
        check_exact_vs_enumeration(WrongLaw())
    with pytest.raises(AssertionError, match="declared lossless"):
        check_kit(AcceptAll())


def test_the_kit_check_on_lossless_and_lossy_rules():
    check_kit("token")
    check_kit(ResampleFromTarget())  # reported lossy (or, by an older kit, flagged)
    check_kit(st.BatchRound(2, 2))


@pytest.mark.skipif(not torch_available(), reason="the decoder needs torch")
def test_the_decoder_check_follows_the_law_and_catches_a_biased_rule():
    check_decoder_law("token")
    check_decoder_law(ResampleFromTarget())  # the decoder follows the rule's own (biased) law
    with pytest.raises(AssertionError, match="exact law"):
        check_decoder_law(AcceptAll())

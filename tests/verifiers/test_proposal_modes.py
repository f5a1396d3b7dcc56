"""Proposal modes (point-mass, sample-and-match, argmax drafting): exact, Monte Carlo, kit.

Exact = the Fraction enumeration of each algorithm (``round_laws.proposal_round_law``) against
the closed forms of ``docs/proposal_modes.md``; the float engines (``chain.protocol``,
``chain.sequence_law``) against the enumeration; Monte Carlo within 5 SE; the kit's verdicts.
"""

import re
from fractions import Fraction as F
from pathlib import Path

import numpy as np
import pytest
from _helpers import assert_within_se

import spectheory as st
from spectheory.testing import check_verifier
from spectheory.testing.instances import make_instance
from spectheory.verifiers import get_verifier
from spectheory.verifiers.block_exact import block_emission_law
from spectheory.verifiers.round_laws import (
    PROPOSAL_MODES,
    first_token_law,
    generation_law,
    mean_accepted,
    proposal_round_law,
)

P, Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]
SUN_T, SUN_D = (lambda c: P), (lambda c: Q)
LOSSLESS = ("token", "point_mass", "sample_match", "argmax_onehot")
DOC = Path(__file__).resolve().parents[2] / "docs" / "proposal_modes.md"


def per_position_acceptance(mode, p, q):
    """The closed forms of docs/proposal_modes.md (Propositions 1-3)."""
    star = max(range(len(q)), key=lambda v: (q[v], -v))
    return {
        "token": sum(min(a, b) for a, b in zip(p, q)),
        "point_mass": sum(a * b for a, b in zip(p, q)),
        "sample_match": sum(a * b for a, b in zip(p, q)),
        "argmax_onehot": p[star],
        "argmax_soft": min(F(1), p[star] / q[star]),
    }[mode]


def fraction_chain(rng, V):
    """First-order Fraction laws (rows from integer weights) and the matching float chain."""

    def table():
        w = rng.integers(0, 4, size=(V, V)) + (rng.random((V, V)) < 0.5)
        w[w.sum(1) == 0, 0] = 1
        return [[F(int(x), int(r.sum())) for x in r] for r in w]

    t, d = table(), table()
    fn = lambda tab: lambda c: tab[c[-1]] if c else tab[0]  # noqa: E731 - state 0 at the start
    chain = st.DecodingChain(np.array(t, float), np.array(d, float), initial=np.eye(V)[0])
    return fn(t), fn(d), chain


def target_law(target_fn, V, L):
    law = {(): F(1)}
    for _ in range(L):
        law = {s + (y,): w * target_fn(s)[y] for s, w in law.items() for y in range(V) if target_fn(s)[y]}
    return law


@pytest.mark.parametrize("gamma", [2, 3])
@pytest.mark.parametrize("mode", PROPOSAL_MODES)
def test_sun_example_closed_forms_by_fraction_enumeration(mode, gamma):
    a = per_position_acceptance(mode, P, Q)
    law = proposal_round_law(mode, SUN_T, SUN_D, 2, gamma)
    assert sum(law.values()) == 1
    assert mean_accepted(law) == sum(a**i for i in range(1, gamma + 1))
    first3 = generation_law(lambda c, k: proposal_round_law(mode, SUN_T, SUN_D, 2, k, c), gamma, 3)
    if mode in LOSSLESS:
        assert first3 == target_law(SUN_T, 2, 3)
    else:  # argmax_soft: the first token is a fair coin (Proposition 3); later ones mix in bonus tokens
        assert first_token_law(first3, 2) == [F(1, 2), F(1, 2)]
        assert first3 != target_law(SUN_T, 2, 3)


def test_the_docs_table_is_the_enumeration():
    rows = [
        r
        for r in DOC.read_text().splitlines()
        if re.match(r"\| (token|point_mass|sample_match|argmax_\w+) \|", r)
    ]
    rows = [r for r in rows if r.count("|") == 7]
    assert len(rows) == len(PROPOSAL_MODES)
    for row in rows:
        mode, acc, g2, g3, first, lossless = (c.strip() for c in row.strip("|").split("|"))
        assert F(acc) == per_position_acceptance(mode, P, Q)
        for g, want in ((2, g2), (3, g3)):
            assert F(want) == mean_accepted(proposal_round_law(mode, SUN_T, SUN_D, 2, g))
        law = first_token_law(proposal_round_law(mode, SUN_T, SUN_D, 2, 2), 2)
        assert first == "(" + ", ".join(str(x) for x in law) + ")"
        assert (lossless == "yes") == get_verifier(mode).lossless == (law == P)
    # block verification's values quoted under the table
    assert [mean_accepted(block_emission_law(SUN_T, SUN_D, 2, g)) for g in (2, 3)] == [F(11, 9), F(5, 3)]


def test_point_mass_and_sample_match_are_one_law_and_lossless_on_random_chains():
    rng = np.random.default_rng(3)
    for _ in range(3):
        tf, df, _ = fraction_chain(rng, 3)
        for g in (1, 2):
            for c in ((), (1,), (2, 0)):
                assert proposal_round_law("point_mass", tf, df, 3, g, c) == proposal_round_law(
                    "sample_match", tf, df, 3, g, c
                )
        for mode in LOSSLESS:
            law = generation_law(
                lambda c, k, m=mode, tf=tf, df=df: proposal_round_law(m, tf, df, 3, k, c), 2, 3
            )
            assert law == target_law(tf, 3, 3), mode


@pytest.mark.parametrize("mode", PROPOSAL_MODES)
def test_float_engine_equals_the_enumeration_with_the_horizon(mode):
    # the phase masses (chain.sequence_law) against the literal algorithm, horizon truncation included
    tf, df, chain = fraction_chain(np.random.default_rng(11), 3)
    T, g = 4, 2
    law = generation_law(lambda c, k: proposal_round_law(mode, tf, df, 3, k, c), g, T, horizon=T)
    dense = chain.sequence_law(T, g, verifier=mode)
    want = np.zeros((3,) * T)
    for s, w in law.items():
        want[s] = float(w)
    np.testing.assert_allclose(dense, want, atol=1e-12)
    if mode == "argmax_soft":
        assert np.abs(dense - chain.sequence_law(T, method="target")).sum() > 1e-3  # biased here


@pytest.mark.parametrize("mode", PROPOSAL_MODES[1:])
def test_monte_carlo_within_5_se_of_the_exact_engine(mode):
    chain = st.DecodingChain.random(4, concentration=0.6, rng=5)
    exact = chain.protocol(12, 3, verifier=mode)
    sim = st.simulate(chain, 12, st.PathRound(3, mode), 6000, rng=2)
    for name in ("target_calls", "rejections", "accepted"):
        assert_within_se(*sim.mean_se(name), getattr(exact, name), f"{mode} {name}")


def test_argmax_drafting_drafts_the_mode_of_q_in_simulate_and_the_kit():
    # target = one-hot at the draft's argmax: greedy drafts are always accepted, sampled ones not
    draft = st.DecodingChain.random(3, concentration=0.5, rng=1).draft
    from spectheory.verifiers.proposal import argmax_onehot

    chain = st.DecodingChain(argmax_onehot(draft), draft)
    greedy = st.simulate(chain, 12, st.PathRound(3, "argmax_onehot"), 200, rng=0)
    sampled = st.simulate(chain, 12, st.PathRound(3, "point_mass"), 200, rng=0)
    assert greedy.rejections.sum() == 0 and sampled.rejections.sum() > 0
    assert chain.protocol(12, 3, verifier="argmax_onehot").rejections == 0
    inst = make_instance("zeros", 4, 2, rng=0)
    tp, dp, x = inst.sample_drafts(50, 0, "argmax")
    assert (x == dp.argmax(-1)).all()
    with pytest.raises(NotImplementedError, match="greedy drafting"):
        get_verifier("argmax_soft").torch_rule()


def test_exact_match_claim_is_refuted_by_the_smallest_instance():
    # Proposition 4: V = 2, p(x*) - sum q p = (1 - c)(2a - 1); Sun's example is a counterexample
    assert (
        per_position_acceptance("argmax_onehot", P, Q)
        == F(1, 3)
        < F(4, 9)
        == per_position_acceptance("sample_match", P, Q)
    )
    for a in (F(k, 12) for k in range(13)):
        for c in (F(k, 12) for k in range(6, 12)):
            p, q = [a, 1 - a], [c, 1 - c]
            gap = per_position_acceptance("argmax_onehot", p, q) - per_position_acceptance(
                "sample_match", p, q
            )
            assert gap == (1 - c) * (2 * a - 1)
            assert (gap < 0) == (a < F(1, 2))
    # rounds: argmax drafting + exact match accepts fewer drafts for gamma = 1, 2, 3
    for g in (1, 2, 3):
        greedy = mean_accepted(proposal_round_law("argmax_onehot", SUN_T, SUN_D, 2, g))
        sampled = mean_accepted(proposal_round_law("sample_match", SUN_T, SUN_D, 2, g))
        assert greedy < sampled


@pytest.mark.parametrize("mode", ["point_mass", "sample_match", "argmax_onehot", "argmax_soft"])
def test_kit_verdicts(mode):
    report = check_verifier(mode, n_samples=3000, rng=0, vocab_sizes=(3,), gammas=(2,))
    failed = set(report.failed)
    lossless_checks = {"first_token_law", "position_laws", "sequence_law"}
    if get_verifier(mode).lossless:
        assert not failed & lossless_checks, report.failed
        assert "acceptance_rate" in failed  # lossless but inefficient (Propositions 1-2)
    else:  # declared lossy (lossless = False): reported with its exact loss, not failed
        assert report.lossless_passed and report.config["protocol"]["lossy"] == mode, report.failed
        assert "exact TV of" in report["loss"].note and max(f.statistic for f in report["loss"].findings) > 0
        strict = check_verifier(mode, n_samples=3000, rng=0, vocab_sizes=(3,), gammas=(2,), lossy=False)
        assert set(strict.failed) & lossless_checks, strict.failed


@pytest.mark.slow
@pytest.mark.parametrize("rule", ["point_mass", "sample_match"])
def test_real_decoder_runs_the_lossless_modes(rule):
    # the decoder drafts by sampling, so the sampled-draft modes run there (torch adapter)
    pytest.importorskip("torch")
    from spectheory.decoder import load_model
    from spectheory.validation import exact_two_token_law, lossless_check

    target, draft = load_model("target"), load_model("draft-tiny")
    prompt = list(b"def ")
    res = lossless_check(
        target, draft, prompt, 3000, 2, seed=5, rule=rule, law=exact_two_token_law(target, prompt)
    )
    assert res["rule"] == rule
    assert res["pvalue"] > 1e-6, res  # a correct rule fails with probability 1e-6

"""Hierarchical Speculative Decoding: the paper's equations are block verification; its listing is biased.

Exact = the literal Fraction enumeration (``hsd_round_law``) against block verification's
(``block_emission_law``) and the target's law; the vectorised rule and the exact engine against
them; Monte Carlo within 5 SE; the kit's verdicts (``docs/sequence_rules.md``).
"""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_within_se

import spectheory as st
from spectheory.testing import check_verifier
from spectheory.verifiers import get_verifier
from spectheory.verifiers.block import block_weights
from spectheory.verifiers.block_exact import block_emission_law
from spectheory.verifiers.hsd import hsd_round_law, hsd_weights
from spectheory.verifiers.round_laws import first_token_law, generation_law, mean_accepted

P, Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]
SUN_T, SUN_D = (lambda c: P), (lambda c: Q)


def fraction_chain(rng, V):
    def table():
        w = rng.integers(0, 4, size=(V, V)) + (rng.random((V, V)) < 0.5)
        w[w.sum(1) == 0, 0] = 1
        return [[F(int(x), int(r.sum())) for x in r] for r in w]

    t, d = table(), table()
    fn = lambda tab: lambda c: tab[c[-1]] if c else tab[0]  # noqa: E731
    return fn(t), fn(d), st.DecodingChain(np.array(t, float), np.array(d, float), initial=np.eye(V)[0])


def target_law(target_fn, V, L):
    law = {(): F(1)}
    for _ in range(L):
        law = {s + (y,): w * target_fn(s)[y] for s, w in law.items() for y in range(V) if target_fn(s)[y]}
    return law


def hsd_gen(tf, df, V, gamma, L, variant, horizon=None):
    return generation_law(lambda c, k: hsd_round_law(tf, df, V, k, c, variant), gamma, L, horizon)


def test_the_papers_hsd_is_block_verification_exactly():
    for g in (1, 2, 3):
        assert hsd_round_law(SUN_T, SUN_D, 2, g) == block_emission_law(SUN_T, SUN_D, 2, g)
    rng = np.random.default_rng(0)
    for V, g in ((2, 2), (3, 2), (2, 3), (3, 3)):
        tf, df, _ = fraction_chain(rng, V)
        for c in ((), (1,)):
            assert hsd_round_law(tf, df, V, g, c) == block_emission_law(tf, df, V, g, c)


def test_same_uniforms_same_output_as_block():
    rng = np.random.default_rng(1)
    R, g, V = 400, 4, 3
    t = rng.dirichlet(np.full(V, 0.7), size=(R, g + 1))
    d = rng.dirichlet(np.full(V, 0.7), size=(R, g))
    x = np.stack([[rng.choice(V, p=d[r, i]) for i in range(g)] for r in range(R)])
    k = rng.integers(1, g + 1, size=R)
    for a, b in zip(hsd_weights(t, d, x, k), block_weights(t, d, x, k)):
        np.testing.assert_allclose(a, b, atol=1e-12)
    ua, uf = rng.random((R, g)), rng.random(R)
    for a, b in zip(
        get_verifier("hsd").rule(t, d, x, k, ua, uf), get_verifier("block").rule(t, d, x, k, ua, uf)
    ):
        np.testing.assert_array_equal(a, b)


def test_the_listing_is_biased_on_the_smallest_instance():
    # gamma = 1: no prefix to cap, the listing is the paper's rule (token verification)
    assert hsd_round_law(SUN_T, SUN_D, 2, 1, variant="listing") == hsd_round_law(SUN_T, SUN_D, 2, 1)
    # gamma = 2: block (1, 0) is fully accepted with r = 1 instead of r* = 1/2 (docs/sequence_rules.md)
    law = hsd_gen(SUN_T, SUN_D, 2, 2, 2, "listing")
    assert law == {(0, 0): F(1, 9), (0, 1): F(2, 9), (1, 0): F(1, 3), (1, 1): F(1, 3)}
    assert hsd_gen(SUN_T, SUN_D, 2, 2, 2, "paper") == target_law(SUN_T, 2, 2)
    assert first_token_law(law, 2) == P  # the first token is right; the second is not
    # it accepts more than block verification, the optimum of lossless rules
    assert [mean_accepted(hsd_round_law(SUN_T, SUN_D, 2, g, variant="listing")) for g in (2, 3)] == [
        F(4, 3),
        F(16, 9),
    ]
    assert hsd_gen(SUN_T, SUN_D, 2, 3, 2, "listing")[(1, 0)] == F(7, 27)


def test_lossless_and_biased_on_random_chains():
    rng = np.random.default_rng(2)
    biased = 0
    for _ in range(4):
        tf, df, _ = fraction_chain(rng, 3)
        assert hsd_gen(tf, df, 3, 2, 3, "paper") == target_law(tf, 3, 3)
        biased += hsd_gen(tf, df, 3, 2, 3, "listing") != target_law(tf, 3, 3)
    assert biased >= 3


@pytest.mark.parametrize("variant", ["paper", "listing"])
def test_exact_round_transition_equals_the_enumeration(variant):
    # the engine's Q[s, j, s'] (state = last token) against the literal algorithm from each state
    tf, df, chain = fraction_chain(np.random.default_rng(5), 3)
    name = "hsd" if variant == "paper" else "hsd_listing"
    for g in (1, 2, 3):
        Q = get_verifier(name).round_transition(chain)(0, g, True)
        for s in range(3):
            want = np.zeros((g + 1, 3))
            for emitted, w in hsd_round_law(tf, df, 3, g, (s,), variant).items():
                want[len(emitted) - 1, emitted[-1]] += float(w)
            np.testing.assert_allclose(Q[s], want, atol=1e-12)


def test_monte_carlo_within_5_se():
    chain = st.DecodingChain.random(4, concentration=0.6, rng=5)
    for name in ("hsd", "hsd_listing"):
        exact = chain.protocol(12, 3, verifier=name)
        sim = st.simulate(chain, 12, st.PathRound(3, name), 6000, rng=3)
        for stat in ("target_calls", "rejections", "accepted"):
            assert_within_se(*sim.mean_se(stat), getattr(exact, stat), f"{name} {stat}")
    hsd, block = chain.protocol(12, 3, verifier="hsd"), chain.protocol(12, 3, verifier="block")
    assert abs(hsd.accepted - block.accepted) < 1e-12


def test_kit_verdicts():
    kw = dict(n_samples=3000, rng=0, vocab_sizes=(3,), gammas=(2,))
    assert check_verifier("hsd", **kw).passed
    listing = check_verifier("hsd_listing", **kw)  # lossless = False: measured, with its exact TV
    assert listing.passed and "exact TV of 'hsd_listing'" in listing["loss"].note
    failed = set(check_verifier("hsd_listing", lossy=False, **kw).failed)
    assert failed & {"position_laws", "sequence_law"}


def test_variant_is_checked():
    with pytest.raises(ValueError, match="variant"):
        hsd_weights(np.ones((1, 2, 2)) / 2, np.ones((1, 1, 2)) / 2, [[0]], [1], "clever")
    assert list(itertools.islice(hsd_round_law(SUN_T, SUN_D, 2, 1), 1))  # runs on one draft


def test_the_docs_table_is_the_enumeration():
    from pathlib import Path

    from spectheory.verifiers.round_laws import proposal_round_law

    doc = Path(__file__).resolve().parents[2] / "docs" / "sequence_rules.md"
    laws = {
        "token": lambda c, k: proposal_round_law("token", SUN_T, SUN_D, 2, k, c),
        "block": lambda c, k: block_emission_law(SUN_T, SUN_D, 2, k, c),
        "hsd (equations)": lambda c, k: hsd_round_law(SUN_T, SUN_D, 2, k, c),
        "hsd_listing": lambda c, k: hsd_round_law(SUN_T, SUN_D, 2, k, c, "listing"),
    }
    rows = [r for r in doc.read_text().splitlines() if r.startswith("| ") and r.count("|") == 6]
    seen = set()
    for row in rows:
        name, g2, g3, first2, lossless = (c.strip() for c in row.strip("|").split("|"))
        if name not in laws:
            continue
        seen.add(name)
        law = laws[name]
        assert [F(g2), F(g3)] == [mean_accepted(law((), g)) for g in (2, 3)]
        two = generation_law(law, 2, 2)
        assert [F(v) for v in first2.split(", ")] == [
            two.get(s, 0) for s in itertools.product(range(2), repeat=2)
        ]
        assert lossless.startswith("yes") == (two == target_law(SUN_T, 2, 2))
    assert seen == set(laws)


@pytest.mark.slow
def test_real_decoder_runs_hsd_losslessly():
    pytest.importorskip("torch")
    from spectheory.decoder import load_model
    from spectheory.validation import exact_two_token_law, lossless_check

    target, draft = load_model("target"), load_model("draft-tiny")
    prompt = list(b"def ")
    res = lossless_check(
        target, draft, prompt, 3000, 2, seed=5, rule="hsd", law=exact_two_token_law(target, prompt)
    )
    assert res["pvalue"] > 1e-6, res

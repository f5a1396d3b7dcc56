"""Greedy multi-path block verification (GBV): lossless exactly, block verification at K = 1.

Exact = the literal Fraction enumeration of one round (``gbv_round_law``) and the tree engine's
enumeration with the verifier's outcome law; Monte Carlo within 5 SE; the kit and the decoder
(docs/sequence_rules.md).
"""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_within_se

import spectheory as st
from spectheory.children import IID
from spectheory.kinds.tree.enumerate import enumerate_realisations
from spectheory.testing import check_round
from spectheory.trees import DraftTree, TreeRound, tree_sequence_law
from spectheory.trees.gbv_tree import GBV
from spectheory.verifiers.block_exact import block_emission_law
from spectheory.verifiers.gbv import gbv_round_law, gbv_skew
from spectheory.verifiers.round_laws import first_token_law, generation_law, mean_accepted

P, Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]
SUN_T, SUN_D = (lambda c: P), (lambda c: Q)

#: E[accepted drafts per round] on Sun et al.'s example, (K, gamma) -> exact value (K = 1: block).
SUN_TABLE = {
    (1, 2): F(11, 9),
    (1, 3): F(5, 3),
    (2, 2): F(131, 81),
    (2, 3): F(1621, 729),
    (3, 2): F(1289, 729),
    (3, 3): F(47933, 19683),
}


def target_law(target_fn, V, L):
    law = {(): F(1)}
    for _ in range(L):
        law = {s + (y,): w * target_fn(s)[y] for s, w in law.items() for y in range(V) if target_fn(s)[y]}
    return law


def fraction_chain(rng, V):
    def table():
        w = rng.integers(0, 4, size=(V, V)) + (rng.random((V, V)) < 0.5)
        w[w.sum(1) == 0, 0] = 1
        return [[F(int(x), int(r.sum())) for x in r] for r in w]

    t, d = table(), table()
    return (lambda c: t[c[-1]] if c else t[0]), (lambda c: d[c[-1]] if c else d[0])


@pytest.mark.parametrize("K,gamma", sorted(SUN_TABLE))
def test_sun_table_and_lossless(K, gamma):
    law = gbv_round_law(SUN_T, SUN_D, 2, K, gamma)
    assert sum(law.values()) == 1
    assert mean_accepted(law) == SUN_TABLE[(K, gamma)]
    assert first_token_law(law, 2) == P
    gen = generation_law(lambda c, k: gbv_round_law(SUN_T, SUN_D, 2, K, k, c), gamma, 3)
    assert gen == target_law(SUN_T, 2, 3)


def test_k1_is_block_verification_and_more_paths_accept_more():
    for gamma in (1, 2, 3):
        assert gbv_round_law(SUN_T, SUN_D, 2, 1, gamma) == block_emission_law(SUN_T, SUN_D, 2, gamma)
    for gamma in (2, 3):
        means = [SUN_TABLE[(K, gamma)] for K in (1, 2, 3)]
        assert means == sorted(means) and means[0] < means[1]


@pytest.mark.parametrize("seed", range(6))
def test_random_chains_lossless_exactly(seed):
    rng = np.random.default_rng(seed)
    V = 2 + seed % 2
    t, d = fraction_chain(rng, V)
    gen = generation_law(lambda c, k: gbv_round_law(t, d, V, 2, k, c), 2, 3)
    assert gen == target_law(t, V, 3)


def test_skew_is_the_law_of_the_maximum_path():
    """One position: q~ is the law of the largest of K i.i.d. draws under the (p/q, index) order."""
    p, q = [F(1, 2), F(1, 4), F(1, 4)], [F(1, 8), F(1, 2), F(3, 8)]
    order = sorted(range(3), key=lambda x: (p[x] / q[x], x))
    for K in (1, 2, 3):
        law = [F(0)] * 3
        for draws in itertools.product(range(3), repeat=K):
            pr = F(1)
            for x in draws:
                pr *= q[x]
            law[max(draws, key=order.index)] += pr
        assert gbv_skew(p, q, F(0), F(1), K) == law


def test_tree_engine_outcome_law_equals_round_enumeration():
    """The verifier's outcome law through the tree enumeration equals the literal round law."""
    tgt = np.array([P], dtype=object)
    drf = np.array([Q], dtype=object)
    ns = np.zeros((1, 2), dtype=np.int64)
    tree = DraftTree.paths(2, 2)
    real = enumerate_realisations(tgt, drf, ns, tree, IID(), 0, [0])
    acc, fin = GBV.outcome_law(tree, real["tokens"], real["target_laws"], real["draft_laws"])
    got: dict = {}
    for r in range(real["tokens"].shape[0]):
        for v in range(tree.n_nodes):
            if acc[r, v] == 0:
                continue
            path = tuple(int(real["tokens"][r, i]) for i in tree.path_to(v))
            for y in range(2):
                if fin[r, v, y]:
                    got[path + (y,)] = got.get(path + (y,), 0) + real["prob"][r] * acc[r, v] * fin[r, v, y]
    assert got == gbv_round_law(SUN_T, SUN_D, 2, 2, 2)


def test_sequence_law_on_dyadic_chain_is_target():
    rng = np.random.default_rng(3)
    kern = lambda: np.array([rng.multinomial(8, np.ones(3) / 3) / 8 for _ in range(3)])  # noqa: E731
    chain = st.DecodingChain(kern(), kern())
    law = tree_sequence_law(chain, 3, DraftTree.paths(2, 2), GBV, exact=True)
    ref = tree_sequence_law(chain, 3, DraftTree.from_branching([1]), "token", exact=True)
    assert law == ref


def test_protocol_k1_is_block_and_monte_carlo_within_5_se():
    chain = st.DecodingChain.random(3, rng=0)
    one = chain.protocol(8, TreeRound(DraftTree.paths(1, 3), GBV))
    blk = chain.protocol(8, 3, verifier="block")
    np.testing.assert_allclose(one.target_calls, blk.target_calls, atol=1e-12)
    for K in (2, 3):
        rnd = TreeRound(DraftTree.paths(K, 2), GBV)
        ex = chain.protocol(8, rnd)
        sim = st.simulate(chain, 8, rnd, 3000, rng=K)
        for name in ("target_calls", "accepted", "rejections"):
            m, se = sim.mean_se(name)
            assert_within_se(m, se, getattr(ex, name), name)


def test_kit_passes_gbv_lossless_and_flags_its_deficit_on_a_close_draft():
    """Every lossless check passes; the kit's efficiency check flags the "near" instance, where
    GBV accepts less than recursive rejection on the same paths (docs: the selection overshoots)."""
    rep = check_round(TreeRound(DraftTree.paths(2, 2), GBV), n_samples=3000, rng=0)
    assert rep.failed == ["mean_accepted"]
    assert all(r["law_passed"] for r in rep.rows)
    assert [bool(r["mean_accepted"]) for r in rep.rows] == [False, False, True]
    assert rep.rows[2]["instance"].startswith("near")


def test_needs_a_paths_tree():
    with pytest.raises(ValueError, match="paths"):
        st.simulate(
            st.DecodingChain.random(2, rng=0), 4, TreeRound(DraftTree.from_branching([2, 2]), GBV), 10, rng=0
        )


def test_decoder_two_token_law():
    torch = pytest.importorskip("torch")  # noqa: F841
    from _torch_models import gpt

    from spectheory.decoder.tree_decode import tree_generate
    from spectheory.validation.lossless import exact_two_token_law, pooled_chisquare
    from spectheory.validation.tree_decoding import tree_two_token_samples

    target, draft = gpt(2, n_layer=2, n_embd=16, vocab=8, scale=5.0), gpt(3, vocab=8, scale=5.0)
    prompt = [1, 2, 3]
    law = exact_two_token_law(target, prompt)
    tree = DraftTree.paths(2, 2)
    s = tree_two_token_samples(
        lambda pr, sd: tree_generate(target, draft, pr, 2, tree, GBV, seed=sd), prompt, 2000, seed=11
    )
    assert pooled_chisquare(s, law)["pvalue"] > 1e-6


def test_smallest_instance_where_gbv_accepts_less_than_block():
    """V = 2, gamma = 1, K = 2: block (= token) verification accepts 9/10, GBV 43/50 (docs)."""
    p, q = [F(1, 2), F(1, 2)], [F(2, 5), F(3, 5)]
    t, d = (lambda c: p), (lambda c: q)
    assert gbv_skew(p, q, F(0), F(1), 2) == [F(16, 25), F(9, 25)]
    got = [mean_accepted(gbv_round_law(t, d, 2, K, 1)) for K in (1, 2, 3)]
    assert got == [F(9, 10), F(43, 50), F(179, 250)]
    assert got[0] == mean_accepted(block_emission_law(t, d, 2, 1))

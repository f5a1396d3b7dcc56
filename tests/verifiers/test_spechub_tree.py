"""SpecHub as a tree round: the hub child policy and the transport-plan tree rule.

Exact = Fractions (the plan of ``spechub_plan``, the binary-tree round laws, the tree engine's
enumeration with the rule's outcome law); the per-node engine against the enumeration; Monte
Carlo within 5 SE; the conformance kit through ``check_round``; the rule on hand-given uniforms
against the authors' staged loop (``spechub_rule``).
"""

import itertools
from fractions import Fraction as F

import numpy as np
import pytest
from _helpers import assert_within_se

import spectheory as st
from spectheory.kinds.tree.enumerate import enumerate_realisations
from spectheory.testing import check_round
from spectheory.trees import DraftTree, TreeRound, tree_protocol, tree_sequence_law
from spectheory.verifiers.round_laws import generation_law, mean_accepted, target_law
from spectheory.verifiers.spechub import spechub_plan, spechub_tuple_law
from spectheory.verifiers.spechub_rounds import rrs_binary_round_law, rrs_node_law, spechub_round_law
from spectheory.verifiers.spechub_sampling import spechub_rule
from spectheory.verifiers.spechub_tree import SPECHUB, HubChildren

P, Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]
SUN_T, SUN_D = (lambda c: P), (lambda c: Q)
SHAPES = [
    DraftTree.from_branching([2]),
    DraftTree.from_branching([2, 2]),
    DraftTree.from_parents([-1, 0, 1, 1, 0, 4]),
]


def fraction_chain(rng, V):
    def table():
        w = rng.integers(0, 4, size=(V, V))
        w[w.sum(1) == 0, 0] = 1
        return [[F(int(x), int(r.sum())) for x in r] for r in w]

    t, d = table(), table()
    return t, d, (lambda c: t[c[-1]] if c else t[0]), (lambda c: d[c[-1]] if c else d[0])


def test_node_laws_are_the_plan_exactly():
    """A_0 + A_1 = the plan's accepted mass per token, R its correction; A_0 + A_1 + R = p."""
    rng = np.random.default_rng(0)
    for _ in range(20):
        V = int(rng.integers(2, 5))
        p = [F(int(x), 12) for x in rng.multinomial(12, np.ones(V) / V)]
        q = [F(int(x), 12) for x in rng.multinomial(12, np.ones(V) / V)]
        tup, _, plan = spechub_plan(p, q)
        A, R = SPECHUB.node_laws(np.array([p], float), np.array([q], float), 2)
        np.testing.assert_allclose(A.sum(0)[0] + R[0], np.array(p, float), atol=1e-15)
        for j in range(2):  # slot j's accepted mass at x: pairs holding x in slot j
            want = [sum((plan[n, x] for n in range(len(tup)) if tup[n, j] == x), F(0)) for x in range(V)]
            np.testing.assert_allclose(A[j, 0], np.array(want, float), atol=1e-15)


def test_outcome_law_through_enumeration_equals_the_literal_round_law():
    """The tree engine's enumeration (child policy + outcome law, Fractions) equals the binary-tree
    round law built from spechub_plan, on Sun et al.'s example and a random chain."""
    rng = np.random.default_rng(1)
    t, d, tf, df = fraction_chain(rng, 3)
    for tgt, drf, ns, fn_t, fn_d, V in (
        (np.array([P], dtype=object), np.array([Q], dtype=object), np.zeros((1, 2), int), SUN_T, SUN_D, 2),
        (np.array(t, dtype=object), np.array(d, dtype=object), np.tile(np.arange(3), (3, 1)), tf, df, 3),
    ):
        tree = DraftTree.from_branching([2, 2])
        real = enumerate_realisations(tgt, drf, ns, tree, SPECHUB.children, 0, [0])
        acc, fin = SPECHUB.outcome_law(tree, real["tokens"], real["target_laws"], real["draft_laws"])
        got: dict = {}
        for r in range(real["tokens"].shape[0]):
            for v in range(tree.n_nodes):
                if acc[r, v] == 0:
                    continue
                path = tuple(int(real["tokens"][r, i]) for i in tree.path_to(v))
                for y in range(V):
                    if fin[r, v, y]:
                        got[path + (y,)] = (
                            got.get(path + (y,), 0) + real["prob"][r] * acc[r, v] * fin[r, v, y]
                        )
        assert got == spechub_round_law(fn_t, fn_d, V, 2)


def test_round_laws_lossless_and_the_sun_table():
    """Exactly lossless (first gamma + 1 tokens); Sun et al.'s example: SpecHub accepts gamma
    (the pair is the vocabulary), RRS on the same binary tree 112/81 and 1351/729."""
    for g, rrs in ((2, F(112, 81)), (3, F(1351, 729))):
        assert mean_accepted(spechub_round_law(SUN_T, SUN_D, 2, g)) == g
        assert mean_accepted(rrs_binary_round_law(SUN_T, SUN_D, 2, g)) == rrs
    rng = np.random.default_rng(2)
    for V in (2, 3):
        _, _, tf, df = fraction_chain(rng, V)
        for law in (spechub_round_law, rrs_binary_round_law):
            gen = generation_law(lambda c, k, law=law, tf=tf, df=df, V=V: law(tf, df, V, k, c), 2, 3)
            assert gen == target_law(tf, V, 3)


def test_rrs_beats_spechub_when_the_hub_is_useless():
    """p = 1_2, q uniform (hub 0 on the tie): SpecHub drafts token 2 with probability 1/2, two
    i.i.d. draws with 5/9, so the claim "accepts more than RRS" fails at gamma = 1 (docs)."""
    p, q = (lambda c: [F(0), F(0), F(1)]), (lambda c: [F(1, 3)] * 3)
    assert mean_accepted(spechub_round_law(p, q, 3, 1)) == F(1, 2)
    assert mean_accepted(rrs_binary_round_law(p, q, 3, 1)) == F(5, 9)
    assert sum(rrs_node_law([F(1, 2), F(1, 2)], [F(1), F(0)])[0]) == F(1, 2)


def test_sequence_law_is_target_exactly():
    rng = np.random.default_rng(3)
    kern = lambda: np.array([rng.multinomial(8, np.ones(3) / 3) / 8 for _ in range(3)])  # noqa: E731
    chain = st.DecodingChain(kern(), kern())
    law = tree_sequence_law(chain, 3, SHAPES[2], SPECHUB, exact=True)
    ref = tree_sequence_law(chain, 3, DraftTree.from_branching([1]), "token", exact=True)
    assert law == ref


@pytest.mark.parametrize("bonus", [True, False])
def test_node_engine_equals_enumeration_and_the_round_law(bonus):
    chain = st.DecodingChain.random(3, horizon=7, rng=2)
    for tree in SHAPES:
        a = tree_protocol(chain, 7, tree, SPECHUB, bonus=bonus)
        e = tree_protocol(chain, 7, tree, SPECHUB, bonus=bonus, method="enumerate")
        for name in ("target_calls", "rejections", "accepted", "draft_tokens"):
            assert getattr(a, name) == pytest.approx(getattr(e, name), abs=1e-12)
        np.testing.assert_allclose(a.rejection_by_position, e.rejection_by_position, atol=1e-12)
    sun = st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3])
    res = sun.protocol(3, TreeRound(SHAPES[1], SPECHUB))  # one round of 2 accepted + the bonus
    assert res.target_calls == pytest.approx(1.0, abs=1e-12) and res.accepted == pytest.approx(2.0, abs=1e-12)


def test_monte_carlo_within_5_se():
    chain = st.DecodingChain.random(4, horizon=9, rng=2)
    for tree in SHAPES[1:]:
        rnd = TreeRound(tree, SPECHUB)
        ex = chain.protocol(9, rnd)
        sim = st.simulate(chain, 9, rnd, 3000, rng=17)
        for name in ("target_calls", "rejections", "accepted"):
            assert_within_se(*sim.mean_se(name), getattr(ex, name), name)


def test_kit_passes_spechub_on_binary_trees():
    for tree in SHAPES[:2]:
        rep = check_round(TreeRound(tree, SPECHUB), n_samples=3000, rng=0)
        assert rep.passed, str(rep)


def test_draw_has_the_hub_tuple_law():
    """The children's pair law is spechub_tuple_law (5 SE per pair, fixed seed)."""
    d = np.array([0.2, 0.45, 0.35])
    n = 20_000
    x = HubChildren().draw(np.tile(d, (n, 1)), 2, np.random.default_rng(4))
    tup, law = spechub_tuple_law(d)
    for pair, pr in zip(tup.tolist(), law):
        freq = np.mean((x[:, 0] == pair[0]) & (x[:, 1] == pair[1]))
        assert abs(freq - pr) <= 5 * np.sqrt(pr * (1 - pr) / n)
    point = HubChildren().draw(np.array([[0.0, 1.0]]), 2, np.random.default_rng(0))
    assert point.tolist() == [[1, -1]]


def test_rule_on_given_uniforms_is_the_authors_staged_loop():
    """Depth 1: the tree rule with child uniforms (u_1, u_2) routed as the authors' loop routes
    them (non-hub test first, then the hub) gives spechub_rule's token on the same uniforms."""
    rng = np.random.default_rng(5)
    tree = SHAPES[0]
    for _ in range(5):
        t, d = rng.dirichlet(np.ones(4)), rng.dirichlet(np.ones(4))
        R = 2000
        x = HubChildren().draw(np.tile(d, (R, 1)), 2, rng)
        u = rng.random((R, 3))
        a = int(np.argmax(d))
        hub_first = x[:, 0] == a
        ua = np.zeros((R, 3))  # node 1 = slot 0, node 2 = slot 1
        ua[:, 1] = np.where(hub_first, u[:, 1], u[:, 0])
        ua[:, 2] = np.where(hub_first, u[:, 0], u[:, 1])
        tok = np.concatenate([np.full((R, 1), -1), x], 1)
        node, y, res = SPECHUB.verify(tree, tok, np.tile(t, (R, 3, 1)), np.tile(d, (R, 3, 1)), ua, u[:, 2])
        ok, want = spechub_rule(t, d, x, u)
        emitted = np.where(node > 0, x[np.arange(R), np.maximum(node - 1, 0)], y)
        np.testing.assert_array_equal(emitted, want)
        np.testing.assert_array_equal(node > 0, ok)
        assert not np.any(res & ok)


def test_more_than_two_children_is_refused():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="at most 2 children"):
        chain.protocol(4, TreeRound(DraftTree.from_branching([3]), SPECHUB))
    with pytest.raises(ValueError, match="at most 2 children"):
        st.simulate(chain, 4, TreeRound(DraftTree.from_branching([3]), SPECHUB), 10, rng=0)


def test_exact_values_match_the_drafting_law_pairs():
    """Sanity of the per-state engine on every 3-token one-hot/ties case: rows sum to p."""
    for p in itertools.product([0.0, 0.5, 1.0], repeat=3):
        if sum(p) != 1:
            continue
        for q in ([1 / 3] * 3, [0.5, 0.5, 0.0], [0.0, 0.0, 1.0]):
            A, R = SPECHUB.node_laws(np.array([p]), np.array([q]), 2)
            np.testing.assert_allclose(A.sum(0) + R, [p], atol=1e-15)
            assert A.min() >= 0 and R.min() >= -1e-15

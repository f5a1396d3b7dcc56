"""Token trees: topologies, tree verifiers, the exact engines and Monte Carlo (issue 11).

Independent methods compared: the per-node engine vs the enumeration engine (exact, 1e-12),
the sequence law by enumeration with fractions.Fraction vs the target's (exact equality),
depth-1 trees vs spectheory.verifiers.multidraft, single paths vs token and block
verification, and Monte Carlo vs exact at 5 standard errors with fixed seeds (a false
failure is about one in a million per comparison).
"""

import itertools
from fractions import Fraction

import numpy as np
import pytest

import spectheory as st
from spectheory.children import IID, TopK, WithoutReplacement
from spectheory.trees import (
    DraftTree,
    tree_protocol,
    tree_round_law,
    tree_sequence_law,
)
from spectheory.verifiers import get_verifier, list_verifiers
from spectheory.verifiers.block_exact import round_accepted_means
from spectheory.verifiers.multidraft import rrs_acceptance, rrs_rule

TREE_VERIFIERS = list_verifiers(trees=True)
SHAPES = [DraftTree.from_branching([2, 1]), DraftTree.from_parents([-1, 0, 1, 1, 0, 4])]


def dyadic_chain(V, seed):
    """A first-order chain with probabilities in 1/8ths (rows sum to 1 exactly as Fractions)."""
    rng = np.random.default_rng(seed)

    def kernel():
        return np.array([rng.multinomial(8, np.ones(V) / V) / 8 for _ in range(V)])

    return st.DecodingChain(kernel(), kernel(), np.full(V, 1.0 / V) if V in (2, 4) else None)


def target_sequence_law(chain, T):
    out = {}
    for seq in itertools.product(range(chain.vocab_size), repeat=T):
        total = Fraction(0)
        for s0 in range(chain.n_states):
            p, s = Fraction(chain.initial[s0]), s0
            for x in seq:
                p *= Fraction(chain.target[s, x])
                s = chain.next_state[s, x]
            total += p
        if total:
            out[seq] = total
    return out


# ------------------------------------------------------------------ topologies
def test_draft_tree_constructors():
    t = DraftTree.from_branching([4, 2, 1])
    assert t.size == 4 + 8 + 8 and t.max_depth == 3
    assert list(t.n_children[t.depth == 1]) == [2] * 4
    p = DraftTree.paths(3, 2)
    assert p.children[0] == (1, 3, 5) and p.path_to(6) == [5, 6]
    assert DraftTree.from_parents([-1, 0, 0, 1]).truncated(1) == DraftTree.from_branching([2])
    with pytest.raises(ValueError, match="parents"):
        DraftTree.from_parents([-1, 0, 2, 1])


# ------------------------------------------------------------------ depth 1 = multidraft
@pytest.mark.parametrize(
    "verifier,replacement", [("tree_rrs", True), ("tree_rrs_wo", False), ("traversal", False)]
)
@pytest.mark.parametrize("k", [1, 2, 4])
def test_depth_one_reproduces_multidraft(verifier, replacement, k):
    chain = st.DecodingChain.random(5, rng=3)
    law = tree_round_law(chain, DraftTree.from_branching([k]), verifier)
    ref = [rrs_acceptance(chain.target[s], chain.draft[s], k, replacement=replacement) for s in range(5)]
    np.testing.assert_allclose(law[:, 1], ref, atol=1e-14)


def test_depth_one_rule_equals_rrs_rule_on_same_uniforms():
    rng = np.random.default_rng(0)
    V, k, R = 4, 3, 500
    t, d = rng.dirichlet(np.ones(V)), rng.dirichlet(np.ones(V))
    cand = rng.choice(V, size=(R, k), p=d)
    ua, uf = rng.random((R, k)), rng.random(R)
    tree = DraftTree.from_branching([k])
    tok = np.concatenate([np.full((R, 1), -1), cand], 1)
    node, y, _ = get_verifier("tree_rrs").verify(
        tree,
        tok,
        np.broadcast_to(t, (R, k + 1, V)),
        np.broadcast_to(d, (R, k + 1, V)),
        np.concatenate([np.zeros((R, 1)), ua], 1),
        uf,
    )
    idx, y_ref = rrs_rule(t, d, cand, ua, uf)
    np.testing.assert_array_equal(node - 1, idx)
    # the tree rule's token follows the accepted path (a bonus after an accepted leaf)
    np.testing.assert_array_equal(y[idx < 0], y_ref[idx < 0])
    np.testing.assert_array_equal(tok[np.arange(R), node][idx >= 0], y_ref[idx >= 0])


def test_topk_node_law_accepts_target_mass_of_topk():
    chain = st.DecodingChain.random(6, rng=4)
    A, R = TopK().node_laws(chain.target, chain.draft, 3)
    top = np.argsort(-chain.draft, 1, kind="stable")[:, :3]
    np.testing.assert_allclose(A.sum((0, 2)), np.take_along_axis(chain.target, top, 1).sum(1), atol=1e-15)
    np.testing.assert_allclose(A.sum(0) + R, chain.target, atol=1e-15)


# ------------------------------------------------------------------ single path
def test_single_path_traversal_is_block_and_rrs_is_token():
    chain = st.DecodingChain.iid([1 / 3, 2 / 3], [2 / 3, 1 / 3])
    path = DraftTree.from_branching([1, 1])
    assert tree_round_law(chain, path, "traversal")[0] @ [0, 1, 2] == pytest.approx(11 / 9, abs=1e-14)
    assert tree_round_law(chain, path, "tree_rrs")[0] @ [0, 1, 2] == pytest.approx(10 / 9, abs=1e-14)
    rand = st.DecodingChain.random(4, horizon=6, rng=5)
    path3 = DraftTree.from_branching([1, 1, 1])
    block, token = round_accepted_means(rand, 1, 3)
    np.testing.assert_allclose(
        tree_round_law(rand, path3, "traversal", n0=1, horizon=6) @ np.arange(4), block, atol=1e-13
    )
    np.testing.assert_allclose(
        tree_round_law(rand, path3, "tree_rrs", n0=1, horizon=6) @ np.arange(4), token, atol=1e-13
    )


@pytest.mark.parametrize("bonus", [True, False])
def test_single_path_protocol_equals_chain_protocol(bonus):
    chain = st.DecodingChain.random(3, horizon=9, rng=6)
    res = tree_protocol(chain, 9, DraftTree.from_branching([1, 1, 1]), "tree_rrs", bonus=bonus)
    assert res.target_calls == pytest.approx(chain.expected_target_calls(9, 3, bonus=bonus), abs=1e-12)
    assert res.rejections == pytest.approx(chain.expected_rejections(9, 3, bonus=bonus), abs=1e-12)
    blk = tree_protocol(chain, 9, DraftTree.from_branching([1, 1, 1]), "traversal", bonus=bonus)
    assert blk.target_calls == pytest.approx(
        chain.expected_target_calls(9, 3, bonus=bonus, verifier="block"), abs=1e-12
    )


# ------------------------------------------------------------------ losslessness
@pytest.mark.parametrize("verifier", TREE_VERIFIERS)
@pytest.mark.parametrize("V,shape", [(2, 0), (3, 1)])
def test_sequence_law_is_target_exactly(verifier, V, shape):
    chain = dyadic_chain(V, seed=V)
    law = tree_sequence_law(chain, 3, SHAPES[shape], verifier, bonus=(shape == 0), exact=True)
    assert law == target_sequence_law(chain, 3)


def test_sequence_law_float_on_inhomogeneous_chain():
    chain = st.DecodingChain.random(3, horizon=4, rng=8)
    ref = chain.sequence_law(4, method="target")
    for verifier in ("tree_rrs_wo", "traversal"):
        law = tree_sequence_law(chain, 4, SHAPES[1], verifier)
        got = np.zeros_like(ref)
        for seq, p in law.items():
            got[seq] += p
        np.testing.assert_allclose(got, ref, atol=1e-12, rtol=0)


def test_outcome_law_rows_sum_to_one_and_match_target():
    chain = st.DecodingChain.random(3, rng=9)
    from spectheory.kinds.tree.enumerate import enumerate_realisations

    tree = SHAPES[1]
    for verifier in map(get_verifier, TREE_VERIFIERS):
        real = enumerate_realisations(
            chain.target, chain.draft, chain.next_state, tree, verifier.children, 0, [0]
        )
        a, fin = verifier.outcome_law(tree, real["tokens"], real["target_laws"], real["draft_laws"])
        np.testing.assert_allclose(a.sum(1), 1.0, atol=1e-13)
        # first emitted token: the root's child on the path, or the root's final token
        first = real["prob"] @ (a[:, 0, None] * fin[:, 0])
        for c in tree.children[0]:
            sub = [v for v in range(tree.n_nodes) if tree.path_to(v)[:1] == [c]]
            np.add.at(first, real["tokens"][:, c], real["prob"] * a[:, sub].sum(1))
        np.testing.assert_allclose(first, chain.target[0], atol=1e-13)


# ------------------------------------------------------------------ engines agree
@pytest.mark.parametrize("verifier", ["tree_rrs", "tree_rrs_wo", "tree_topk"])
@pytest.mark.parametrize("bonus", [True, False])
def test_node_engine_equals_enumeration(verifier, bonus):
    chain = st.DecodingChain.random(3, horizon=7, rng=2)
    for tree in SHAPES:
        a = tree_protocol(chain, 7, tree, verifier, bonus=bonus)
        e = tree_protocol(chain, 7, tree, verifier, bonus=bonus, method="enumerate")
        for name in ("target_calls", "rejections", "accepted", "draft_tokens"):
            assert getattr(a, name) == pytest.approx(getattr(e, name), abs=1e-12)
        for name in ("accepted_counts", "accepted_count_law", "rejection_by_position", "round_starts"):
            np.testing.assert_allclose(getattr(a, name), getattr(e, name), atol=1e-12, err_msg=name)
        assert a.tokens_per_call == pytest.approx(7 / a.target_calls)


def test_non_first_order_chain():
    base = st.DecodingChain.random(3, n_states=4, rng=11)
    tree = DraftTree.from_branching([2, 1])
    for verifier in ("tree_rrs", "traversal"):
        a = tree_protocol(base, 6, tree, verifier)
        e = tree_protocol(base, 6, tree, verifier, method="enumerate")
        assert a.target_calls == pytest.approx(e.target_calls, abs=1e-12)


def test_bad_arguments():
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="tree"):
        tree_protocol(chain, 5, [1, 1], "tree_rrs")
    with pytest.raises(ValueError, match="verifier"):
        tree_protocol(chain, 5, SHAPES[0], "nope")
    with pytest.raises(ValueError, match="method"):
        tree_protocol(chain, 5, SHAPES[0], "traversal", method="nodes")


# ------------------------------------------------------------------ Monte Carlo
@pytest.mark.parametrize("verifier", TREE_VERIFIERS)
def test_monte_carlo_agrees_with_exact(verifier):
    # 5 standard errors, fixed seed: a false failure is about one in a million per quantity
    chain = st.DecodingChain.random(4, horizon=9, rng=2)
    tree = SHAPES[1]
    for bonus in (True, False):
        exact = tree_protocol(chain, 9, tree, verifier, bonus=bonus)
        sim = st.simulate(chain, 9, tree, 3000, 17, verifier=verifier, bonus=bonus)
        for name in ("target_calls", "rejections", "accepted"):
            m, se = sim.mean_se(name)
            assert abs(m - getattr(exact, name)) <= 5 * se + 1e-12, (name, m, se, getattr(exact, name))


def test_monte_carlo_tokens_follow_target_marginals():
    # first-token law: 5 SE per cell on 6000 runs (fixed seed)
    chain = st.DecodingChain.random(3, rng=12)
    sim = st.simulate(chain, 3, SHAPES[0], 6000, 3, verifier="traversal", return_tokens=True)
    law = chain.sequence_law(3, method="target").sum((1, 2))
    freq = np.bincount(sim.tokens[:, 0], minlength=3) / 6000
    assert np.all(np.abs(freq - law) <= 5 * np.sqrt(law * (1 - law) / 6000))


def test_topk_telescoping_symbolically():
    """Deterministic top-k children: slot j is accepted with probability exactly target(x_j)."""
    sympy = pytest.importorskip("sympy")
    t = sympy.symbols("t1:5", positive=True)
    reach, used = 1, 0
    for j in range(4):
        r_j = t[j] / (1 - used)  # target with x_1..x_{j-1} zeroed, renormalised
        assert sympy.simplify(reach * r_j - t[j]) == 0
        reach, used = reach * (1 - r_j), used + t[j]
    assert sympy.simplify(reach - (1 - sum(t))) == 0  # all rejected: the rest of the target mass


def test_draw_children_policies():
    rng = np.random.default_rng(0)
    from spectheory.children.laws import draw_children

    d = np.array([[0.5, 0.0, 0.3, 0.2]] * 200)
    wo = draw_children(d, 4, WithoutReplacement(), rng)
    assert np.all(wo[:, 3] == -1) and np.all(np.sort(wo[:, :3], 1) == [0, 2, 3])
    np.testing.assert_array_equal(draw_children(d[:1], 5, TopK(), rng), [[0, 2, 3, 1, -1]])
    iid = draw_children(d, 3, IID(), rng)
    assert not np.any(iid == 1)

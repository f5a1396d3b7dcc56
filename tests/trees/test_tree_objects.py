"""Child policies and tree verifiers as objects in the one verifier registry (issue 20).

Independent methods: each child policy's exact node laws against a brute force with
fractions.Fraction (every ordered child sequence with its probability under the policy, then
recursive rejection step by step); the registry's tree verifiers lossless exactly.
"""

import itertools
import warnings
from fractions import Fraction

import numpy as np
import pytest

import spectheory as st
from spectheory.children import IID, ChildPolicy, TopK, WithoutReplacement, get_child_policy
from spectheory.trees import DraftTree, tree_protocol, tree_sequence_law
from spectheory.verifiers import (
    RecursiveRejectionTree,
    TraversalTree,
    TreeVerifier,
    get_verifier,
    list_verifiers,
    register_verifier,
)

F = Fraction
TARGET = [F(1, 2), F(1, 4), F(1, 8), F(1, 8)]
DRAFT = [F(1, 8), F(1, 2), F(1, 4), F(1, 8)]


def _sequences(policy, d, k):
    """Every ordered child sequence (tuple of tokens, ``None`` = not drafted) with its probability."""
    V = len(d)
    if isinstance(policy, IID):
        for seq in itertools.product(range(V), repeat=k):
            p = F(1)
            for x in seq:
                p *= d[x]
            yield seq, p
    elif isinstance(policy, WithoutReplacement):
        support = [x for x in range(V) if d[x] > 0]
        for seq in itertools.permutations(support, min(k, len(support))):
            p, used = F(1), F(0)
            for x in seq:
                p *= d[x] / (1 - used)
                used += d[x]
            yield seq + (None,) * (k - len(seq)), p
    else:  # TopK: deterministic, stable order
        order = sorted(range(V), key=lambda x: (-d[x], x))[:k]
        yield tuple(order) + (None,) * (k - len(order)), F(1)


def _slot(policy, d, seq, j):
    if isinstance(policy, IID):
        return list(d)
    if isinstance(policy, TopK):
        return [F(int(z == seq[j])) for z in range(len(d))]
    rem = [F(0) if z in seq[:j] else d[z] for z in range(len(d))]
    tot = sum(rem)
    return [r / tot for r in rem]


def brute_node_laws(policy, t, d, k):
    """Recursive rejection at one node, exactly: accept[j][x], residual[y]."""
    V = len(t)
    A = [[F(0)] * V for _ in range(k)]
    R = [F(0)] * V
    for seq, prob in _sequences(policy, d, k):
        r, reach = list(t), F(1)
        for j, x in enumerate(seq):
            if x is None:
                break
            s = _slot(policy, d, seq, j)
            a = min(F(1), r[x] / s[x]) if s[x] > 0 else F(0)
            A[j][x] += prob * reach * a
            reach *= 1 - a
            ex = [max(r[z] - s[z], F(0)) for z in range(V)]
            Z = sum(ex)
            r = [e / Z for e in ex] if Z > 0 else r
        for y in range(V):
            R[y] += prob * reach * r[y]
    return np.array(A, dtype=float), np.array(R, dtype=float)


# ------------------------------------------------------------------ child policies
@pytest.mark.parametrize("policy", [IID(), WithoutReplacement(), TopK()])
@pytest.mark.parametrize("k", [1, 2, 3])
def test_node_laws_equal_brute_force(policy, k):
    A, R = brute_node_laws(policy, TARGET, DRAFT, k)
    got_A, got_R = policy.node_laws(np.array([TARGET], float), np.array([DRAFT], float), k)
    np.testing.assert_allclose(got_A[:, 0], A, atol=1e-14)
    np.testing.assert_allclose(got_R[0], R, atol=1e-14)
    np.testing.assert_allclose(got_A.sum(0)[0] + got_R[0], np.array(TARGET, float), atol=1e-14)


def test_node_laws_with_a_draft_zero_without_replacement():
    d = [F(1, 2), F(1, 2), F(0), F(0)]  # support exhausted after two children
    A, R = brute_node_laws(WithoutReplacement(), TARGET, d, 3)
    got_A, got_R = WithoutReplacement().node_laws(np.array([TARGET], float), np.array([d], float), 3)
    np.testing.assert_allclose(got_A[:, 0], A, atol=1e-14)
    np.testing.assert_allclose(got_R[0], R, atol=1e-14)
    assert np.all(got_A[2] == 0)


@pytest.mark.parametrize("policy", [IID(), WithoutReplacement(), TopK()])
def test_draw_matches_the_sequence_law(policy):
    """Monte Carlo draws of 3 children: frequencies of the ordered sequences at 5 SE (fixed seed)."""
    d = np.array(DRAFT, float)
    n = 20_000
    x = policy.draw(np.tile(d, (n, 1)), 3, np.random.default_rng(5))
    assert x.shape == (n, 3) and x.dtype == np.int64
    for seq, p in _sequences(policy, DRAFT, 3):
        key = [-1 if z is None else z for z in seq]
        freq = np.mean(np.all(x == key, 1))
        p = float(p)
        assert abs(freq - p) <= 5 * np.sqrt(p * (1 - p) / n) + 1e-12, (seq, freq, p)


def test_child_policy_registry():
    assert get_child_policy("iid") == IID() and get_child_policy("wo") == WithoutReplacement()
    assert get_child_policy(TopK()) == TopK() and TopK() != IID()
    assert isinstance(get_child_policy("topk"), ChildPolicy)
    with pytest.raises(ValueError, match="children"):
        get_child_policy("nope")
    with pytest.raises(ValueError, match="iid"):  # forcing a branch needs a random policy
        TopK().force(np.ones((1, 2)) / 2, np.array([0]), 2, 0, np.random.default_rng(0))


# ------------------------------------------------------------------ one registry
def test_one_registry_holds_paths_and_trees():
    names = list_verifiers()
    trees = list_verifiers(trees=True)
    assert {"token", "block"} <= set(list_verifiers(trees=False))
    assert {"tree_rrs", "tree_rrs_wo", "tree_topk", "traversal", "traversal_iid"} <= set(trees)
    assert set(trees) <= set(names)
    for name in trees:
        v = get_verifier(name)
        assert isinstance(v, TreeVerifier) and v.accepts_trees and not v.accepts_paths
        assert v.for_tree() is v and v.name == name
    assert isinstance(get_verifier("tree_rrs"), RecursiveRejectionTree)
    assert isinstance(get_verifier("traversal"), TraversalTree)
    assert get_verifier("tree_rrs_wo").children == WithoutReplacement()
    assert get_verifier("traversal").node_local is False and get_verifier("tree_topk").node_local


def test_token_names_one_object_and_its_tree_form_is_rrs():
    token = get_verifier("token")
    assert not isinstance(token, TreeVerifier) and token.accepts_paths
    assert token.for_tree() is get_verifier("tree_rrs")
    chain = st.DecodingChain.random(3, rng=1)
    tree = DraftTree.from_branching([2, 1])
    a = tree_protocol(chain, 8, tree, "token")
    b = tree_protocol(chain, 8, tree, "tree_rrs")
    assert a.target_calls == b.target_calls
    with pytest.raises(ValueError, match="no tree form"):
        get_verifier("block").for_tree()


def test_tree_verifier_on_a_path_says_it_needs_a_tree():
    chain = st.DecodingChain.random(3, rng=2)
    with pytest.raises(ValueError, match="tree="):
        get_verifier("tree_rrs").require_path()
    with pytest.raises(ValueError, match="tree="):
        chain.protocol(6, 2, verifier="tree_rrs")
    with pytest.raises(ValueError, match="tree="):
        st.simulate(chain, 6, 2, 10, 0, verifier="traversal")
    with pytest.raises(ValueError, match="tree="):
        st.PathRound(2, "tree_topk")
    assert get_verifier("token").require_path() is get_verifier("token")


def test_a_new_tree_verifier_registers_and_runs_everywhere():
    """A rule defined outside the library: traversal on top-k children (unregistered before)."""
    v = TraversalTree("test_traversal_topk", TopK())
    try:
        register_verifier(v)
        assert get_verifier("test_traversal_topk") is v and "test_traversal_topk" in list_verifiers(
            trees=True
        )
        chain = st.DecodingChain.random(3, horizon=6, rng=3)
        tree = DraftTree.from_branching([2, 1])
        ex = tree_protocol(chain, 6, tree, "test_traversal_topk")
        sim = st.simulate(chain, 6, tree, 3000, 4, verifier=v)
        m, se = sim.mean_se("target_calls")
        assert abs(m - ex.target_calls) <= 5 * se
        dyadic = st.DecodingChain.iid([0.25, 0.75], [0.5, 0.5])
        law = tree_sequence_law(dyadic, 3, tree, v, exact=True)
        assert law == tree_sequence_law(dyadic, 3, DraftTree.from_branching([1]), "token", exact=True)
    finally:
        from spectheory.verifiers import base

        base._REGISTRY.pop("test_traversal_topk", None)


def test_objects_need_no_deprecated_name():
    """The library's own tree paths raise no DeprecationWarning (they use the objects)."""
    chain = st.DecodingChain.random(3, horizon=5, rng=6)
    tree = DraftTree.from_branching([2, 1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        for name in list_verifiers(trees=True):
            tree_protocol(chain, 5, tree, name)
            st.simulate(chain, 5, tree, 20, 1, verifier=name)

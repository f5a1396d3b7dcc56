"""The torch tree rule (issue 22: the tree decoder's rule on the device) against the numpy rule."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from spectheory.children import IID, ChildPolicy, Greedy, TopK, WithoutReplacement  # noqa: E402
from spectheory.trees import DraftTree  # noqa: E402
from spectheory.verifiers import get_verifier  # noqa: E402
from spectheory.verifiers.tree_torch import recursive_rejection_torch, torch_categorical  # noqa: E402

RULES = ("tree_rrs", "tree_rrs_wo", "tree_topk", "tree_greedy")
SHAPES = ([1], [2], [3, 1], [2, 2], [1, 1, 1], [3, 2, 1], [2, 1, 2])
CHILDREN = (IID(), WithoutReplacement(), TopK(), Greedy())


def _laws(rng, R, N, V, holes):
    w = rng.random((R, N, V)) * (rng.random((R, N, V)) > holes)
    w[..., 0] += 1e-3 * (w.sum(-1) == 0)  # every law has mass somewhere
    return w / w.sum(-1, keepdims=True)


def _instance(seed, branching, V=4, R=64):
    rng = np.random.default_rng(seed)
    tree = DraftTree.from_branching(branching)
    N = tree.n_nodes
    tokens = rng.integers(-1, V, size=(R, N))
    tokens[:, 0] = -1
    holes = rng.choice([0.0, 0.4])
    t, d = _laws(rng, R, N, V, holes), _laws(rng, R, N, V, holes)
    # exact ties and identical laws, where several rules are fragile
    d[: R // 8] = t[: R // 8]
    ua, uf = rng.random((R, N)), rng.random(R)
    return tree, tokens, t, d, ua, uf


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), shape=st.sampled_from(SHAPES), rule=st.sampled_from(RULES))
def test_torch_rule_is_the_numpy_rule(seed, shape, rule):
    tree, tokens, t, d, ua, uf = _instance(seed, shape)
    v = get_verifier(rule)
    node, token, residual = v.verify(tree, tokens, t, d, ua, uf)
    tn, tt, tr = recursive_rejection_torch(
        tree, v.children, *(torch.as_tensor(a) for a in (tokens, t, d, ua, uf))
    )
    assert tn.tolist() == np.asarray(node).tolist()
    assert tr.tolist() == np.asarray(residual).tolist()
    assert tt.tolist() == np.asarray(token).tolist()


def test_torch_categorical_counts_cdf_entries_at_most_u():
    w = torch.tensor([[0.2, 0.0, 0.8], [0.2, 0.0, 0.8], [1.0, 3.0, 0.0]], dtype=torch.float64)
    u = torch.tensor([0.19, 0.2, 0.999], dtype=torch.float64)
    assert torch_categorical(w, u).tolist() == [0, 2, 1]  # never the zero-weight token


def test_a_child_policy_without_a_torch_slot_law_is_refused_by_name():
    """The capability follows the slot law: a subclass that changes ``slot_law`` without its
    torch form has none (and a policy that never had one neither); one that keeps both has it."""

    class Other(IID):
        def slot_law(self, draft_u, tokens, kids, j):
            return draft_u

    class Same(IID):
        pass

    class Bare(ChildPolicy):
        pass

    assert not Other().has_torch_slot_law and not Bare().has_torch_slot_law
    assert Same().has_torch_slot_law and all(c.has_torch_slot_law for c in CHILDREN)
    tree = DraftTree.from_branching([1])
    z = torch.zeros(1, 2, 2, dtype=torch.float64)
    for policy, name in ((Other(), "Other"), (Bare(), "Bare")):
        with pytest.raises(ValueError, match=f"no torch slot law for {name}"):
            recursive_rejection_torch(
                tree, policy, torch.zeros(1, 2, dtype=torch.long), z, z, z[..., 0], z[:, 0, 0]
            )


@pytest.mark.parametrize("rule", RULES)
def test_tree_decoder_gives_the_same_tokens_with_the_rule_on_the_device(rule):
    from spectheory.decoder.tree_decode import tree_generate
    from tests._torch_models import gpt

    target, draft = gpt(0, n_layer=2, n_embd=32, vocab=16), gpt(1, vocab=16)
    tree = DraftTree.from_branching([3, 2, 1])
    prompts = [[1, 2, 3], [4, 5], [6, 7, 8, 9]]
    kw = dict(verifier=rule, seed=11, temperature=1.3)
    host = tree_generate(target, draft, prompts, 24, tree, rule_on_device=False, **kw)
    dev = tree_generate(target, draft, prompts, 24, tree, rule_on_device=True, **kw)
    assert [t.tolist() for t in dev.tokens] == [t.tolist() for t in host.tokens]
    assert [a.tolist() for a in dev.stats.round_accepted] == [a.tolist() for a in host.stats.round_accepted]


def test_tree_decoder_refuses_a_device_rule_it_does_not_have():
    from spectheory.decoder.tree_decode import tree_generate
    from tests._torch_models import gpt

    target, draft = gpt(0, vocab=16), gpt(1, vocab=16)
    with pytest.raises(ValueError, match="rule_on_device"):
        tree_generate(
            target, draft, [[1, 2]], 4, DraftTree.from_branching([2]), "traversal", rule_on_device=True
        )

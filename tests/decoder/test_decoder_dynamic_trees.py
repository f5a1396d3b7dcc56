"""Dynamic draft trees (EAGLE-2, OPT-Tree) in the real decoder: on torch models that are exactly
a chain, the decoder's target calls, accepted tokens and rejections agree with the exact values of
the chain's dynamic tree round (5 SE, fixed seeds); on the shipped models the decoder runs and
is lossless at temperature 0."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spectheory as st  # noqa: E402
from spectheory.decoder import generate  # noqa: E402
from spectheory.decoder.dynamic_tree import dynamic_tree_generate  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402
from spectheory.trees import Eagle2Tree, OptimalTree, OptTree  # noqa: E402

V, T, B = 4, 10, 800
CHAIN = st.DecodingChain.random(V, concentration=0.5, similarity=0.4, rng=21)
CHAIN0 = st.DecodingChain(CHAIN.target, CHAIN.draft, initial=np.eye(V)[0])  # prompts end in token 0
TARGET, DRAFT = chain_models(CHAIN)


@pytest.mark.parametrize(
    "rule", [Eagle2Tree(4, top_k=2, depth=3), OptTree(3, threshold=0.05, max_depth=3)], ids=repr
)
def test_decoder_dynamic_tree_matches_the_exact_chain_round(rule):
    res = dynamic_tree_generate(TARGET, DRAFT, [[0]] * B, T, rule, seed=7)
    exact = CHAIN0.protocol(T, rule)
    for name in ("target_calls", "accepted", "rejections"):
        x = np.asarray(getattr(res.stats, name), dtype=np.float64)
        mean, se = x.mean(), x.std(ddof=1) / np.sqrt(x.size)
        assert abs(mean - getattr(exact, name)) <= 5 * se, (rule, name, mean, getattr(exact, name), se)
    assert all(len(t) == T for t in res.tokens)


def test_generate_dispatches_dynamic_rules_and_refuses_the_optimal_tree():
    kw = dict(prompts=[[0], [1, 2]] * 3, max_new_tokens=8, seed=5)
    rule = Eagle2Tree(4, top_k=2, depth=3)
    a = generate(TARGET, DRAFT, round=rule, **kw)
    b = dynamic_tree_generate(TARGET, DRAFT, rule=rule, **kw)
    assert all(np.array_equal(x, y) for x, y in zip(a.tokens, b.tokens))
    with pytest.raises(ValueError, match="draft-only"):
        generate(TARGET, DRAFT, round=OptimalTree(3), **kw)


def test_shipped_models_greedy_is_the_target_greedy():
    from spectheory.decoder import load_model, speculative_generate

    target, draft = load_model("target"), load_model("draft-tiny")
    prompts = [[1, 2, 3, 4], [5, 6]]
    ref = speculative_generate(target, draft, prompts, 12, 1, temperature=0.0, seed=0)
    for rule in (Eagle2Tree(6, top_k=2, depth=3), OptTree(4, max_depth=3)):
        res = dynamic_tree_generate(target, draft, prompts, 12, rule, temperature=0.0, seed=0)
        assert all(np.array_equal(x, y) for x, y in zip(res.tokens, ref.tokens))
        assert res.stats.tokens_per_call >= 1.0

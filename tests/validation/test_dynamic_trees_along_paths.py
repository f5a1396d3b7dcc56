"""Dynamic trees predicted along target paths (spectheory.validation.dynamic_trees): on torch
models that are exactly a chain the per-path rounds average to the chain's exact dynamic-tree
values (5 SE), and replaying the decoder's own output returns its target calls row by row."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import spectheory as st  # noqa: E402
from spectheory.decoder.dynamic_tree import dynamic_tree_generate  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402
from spectheory.trees import Eagle2Tree, OptTree  # noqa: E402
from spectheory.validation import sample_paths  # noqa: E402
from spectheory.validation.dynamic_trees import dynamic_tree_along_paths  # noqa: E402
from tests._helpers import assert_within_se  # noqa: E402

V, T, N = 4, 10, 600
CHAIN = st.DecodingChain.random(V, concentration=0.5, similarity=0.4, rng=21)
CHAIN0 = st.DecodingChain(CHAIN.target, CHAIN.draft, initial=np.eye(V)[0])  # prompts end in token 0
TARGET, DRAFT = chain_models(CHAIN)


@pytest.mark.parametrize("rule", [Eagle2Tree(5, top_k=2, depth=3), OptTree(4, threshold=0.05, max_depth=3)])
def test_rounds_along_target_paths_match_the_exact_chain_values(rule):
    paths = sample_paths(TARGET, np.zeros((N, 1), dtype=np.int64), T, seed=5)
    got = dynamic_tree_along_paths(DRAFT, paths, 1, rule)
    exact = CHAIN0.protocol(T, rule)
    for name in ("target_calls", "draft_tokens", "accepted"):
        x = got[name]
        assert_within_se(x.mean(), x.std(ddof=1) / np.sqrt(N), getattr(exact, name), name)


def test_replaying_the_decoders_output_returns_its_rounds():
    rule = Eagle2Tree(5, top_k=2, depth=3)
    prompts = [[0]] * 64
    res = dynamic_tree_generate(TARGET, DRAFT, prompts, T, rule, seed=3)
    own = np.concatenate([np.asarray(prompts), np.stack(res.tokens)], axis=1)
    rep = dynamic_tree_along_paths(DRAFT, own, 1, rule)
    assert np.array_equal(rep["target_calls"], np.asarray(res.stats.target_calls, dtype=np.float64))
    assert np.all(rep["accepted"] + rep["target_calls"] >= T)


def test_errors():
    with pytest.raises(ValueError, match="rule"):
        dynamic_tree_along_paths(DRAFT, np.zeros((2, 3), dtype=np.int64), 1, object())
    with pytest.raises(ValueError, match="paths"):
        dynamic_tree_along_paths(DRAFT, np.zeros((2, 1), dtype=np.int64), 1, Eagle2Tree(3))

"""Medusa heads: construction, sparse trees, typical acceptance, greedy equality, theory.

Tiny random-weight GPTs with random heads keep these fast; the shipped heads are checked
for their metadata and size only. Monte Carlo comparisons: fixed seeds, 5 standard errors.
"""

import json
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.decoder.logits import logits_to_probs  # noqa: E402
from spectheory.decoder.medusa import (  # noqa: E402
    HEADS_NAME,
    MedusaHeads,
    load_heads,
    medusa_generate,  # noqa: E402
    sparse_tree,
    typical_rule,
)
from spectheory.decoder.model import GPT, GPTConfig  # noqa: E402
from spectheory.decoder.speculative import autoregressive_generate  # noqa: E402
from spectheory.trees import DraftTree  # noqa: E402
from spectheory.validation.predict import mean_se, sample_paths  # noqa: E402
from spectheory.validation.tree_decoding import medusa_tables, tree_round_dp  # noqa: E402
from spectheory.verifiers.biased import typical_acceptance  # noqa: E402


def model_and_heads(seed=0, vocab=256, scale=1.0, head_scale=0.5):
    with torch.random.fork_rng():
        torch.manual_seed(seed)
        m = GPT(GPTConfig(n_layer=1, n_head=2, n_embd=16, block_size=64, vocab_size=vocab)).eval()
        heads = MedusaHeads(3, 16)
        with torch.no_grad():
            m.wte.weight.mul_(scale)
            heads.w.normal_(0, head_scale)
    return m, heads.eval()


def test_zero_heads_are_the_lm_head():
    m, _ = model_and_heads()
    heads = MedusaHeads(3, 16)
    h = torch.randn(4, 16)
    out = heads(h, m.wte.weight)
    for k in range(3):
        torch.testing.assert_close(out[:, k], h @ m.wte.weight.T)


def test_sparse_tree_closed_and_greedy_by_accuracy():
    acc = np.array([[0.6, 0.2, 0.1], [0.5, 0.15, 0.05], [0.4, 0.1, 0.05]])
    t = sparse_tree(acc, 6)
    assert t.size == 6
    # rank paths by node: children are rank prefixes and parents precede children
    for kids in t.children:
        assert list(t.slot[list(kids)]) == list(range(len(kids)))
    # the 6 best products: (0)=.6 (0,0)=.3 (1)=.2 (0,0,0)=.12 (2)=.1 (1,0)=.1 or (0,1)=.09
    assert t.children[0] == (1, 4, 6)[: len(t.children[0])]
    assert t.max_depth == 3
    with pytest.raises(ValueError):
        DraftTree([-1])


def test_typical_rule_by_hand():
    tree = DraftTree.from_branching([2, 1])  # nodes: 1 (slot 0) -> 2; 3 (slot 1) -> 4
    t = np.tile([0.05, 0.15, 0.8], (1, 5, 1))
    rule = typical_rule(0.09, 0.3)
    # threshold min(0.09, 0.3 exp(-H)) = 0.09: tokens 1 and 2 pass, token 0 fails
    node, tok, res = rule(tree, [[-1, 0, 2, 1, 1]], t, t, np.zeros((1, 5)), [0.99])
    assert node.tolist() == [4] and res.tolist() == [False] and tok.tolist() == [2]
    node, tok, res = rule(tree, [[-1, 0, 2, 1, 0]], t, t, np.zeros((1, 5)), [0.0])
    assert node.tolist() == [3] and res.tolist() == [True] and tok.tolist() == [0]
    # the per-node decision is the library's per-step rule
    b = typical_acceptance(0.09, 0.3)(t[0, 0], t[0, 0])
    assert b.tolist() == [0.0, 1.0, 1.0]


@pytest.mark.parametrize("verifier", ["tree_topk", "tree_rrs", "typical"])
def test_greedy_medusa_equals_autoregressive_ragged(verifier):
    m, heads = model_and_heads(1)
    prompts = [[1, 2, 3], [4, 5], [5, 6, 7, 8, 9]]
    ar = autoregressive_generate(m, prompts, 14, temperature=0)
    v = typical_rule() if verifier == "typical" else verifier
    for tree in (
        DraftTree.from_branching([2, 2, 1]),
        sparse_tree(np.full((3, 3), 0.5) ** np.arange(1, 4), 7),
    ):
        res = medusa_generate(m, heads, prompts, 14, tree, v, temperature=0)
        for a, b in zip(ar.tokens, res.tokens):
            np.testing.assert_array_equal(a, b)
        assert res.stats.batch_draft_calls == 0


def test_medusa_errors():
    m, heads = model_and_heads(1)
    with pytest.raises(ValueError, match="2 tokens"):
        medusa_generate(m, heads, [[1]], 4, DraftTree.from_branching([2]))
    with pytest.raises(ValueError, match="heads"):
        medusa_generate(m, heads, [[1, 2]], 6, DraftTree.from_branching([1, 1, 1, 1]))


def test_medusa_rao_blackwell_prediction_matches_decoder():
    """Exact per-node acceptances of the heads' top-k along target paths (5 SE, fixed seeds)."""
    m, heads = model_and_heads(3, vocab=8, scale=5.0, head_scale=1.0)
    prompts = np.array([[1, 2, 3], [4, 5, 6], [7, 0, 1]])[np.arange(300) % 3]
    T, L = 10, 3
    tree = DraftTree.from_branching([2, 2])
    paths = sample_paths(m, prompts, T, seed=4)
    with torch.inference_mode():
        logits, hid = m(torch.as_tensor(paths[:, :-1]), return_hidden=True)
        tl = logits_to_probs(logits[:, L - 1 :]).numpy()
        hl = logits_to_probs(heads(hid[:, L - 2 : L - 2 + T], m.wte.weight)).numpy()
    pred = tree_round_dp(tree, medusa_tables(tl, hl, paths[:, L:], tree, "topk"), T)
    res = medusa_generate(m, heads, list(prompts), T, tree, "tree_topk", seed=8)
    pm, pse = mean_se(pred["target_calls"])
    mm, mse = mean_se(res.stats.target_calls)
    assert abs(pm - mm) < 5 * np.hypot(pse, mse), (pm, mm)


def test_shipped_heads_metadata_and_size():
    from spectheory.decoder.registry import WEIGHTS_DIR

    path = os.path.join(WEIGHTS_DIR, f"{HEADS_NAME}.json")
    if not os.path.exists(path):
        pytest.skip("heads not shipped yet")
    info = json.load(open(path))
    assert os.path.getsize(os.path.join(WEIGHTS_DIR, info["weights_file"])) < 2_000_000
    assert info["n_heads"] in (3, 4)
    for key in ("top1", "top5"):
        vals = info["heldout"][key]
        assert len(vals) == info["n_heads"] and all(0 <= v <= 1 for v in vals)
    assert all(a <= b for a, b in zip(info["heldout"]["top1"], info["heldout"]["top5"]))
    heads, _ = load_heads()
    assert heads.n_heads == info["n_heads"]

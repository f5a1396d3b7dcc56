"""Tree decoding in the real decoder: tree attention, greedy equality, losslessness, theory.

Tiny random-weight GPTs (vocab 8 where a law is tested) keep these fast; the shipped
models appear only in the greedy-equality test. Monte Carlo comparisons use fixed seeds
and 5 standard errors (a false failure is about one in a million).
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

from spectheory.children import IID, TopK, WithoutReplacement  # noqa: E402
from spectheory.children.laws import draw_children  # noqa: E402
from spectheory.decoder.speculative import autoregressive_generate  # noqa: E402
from spectheory.decoder.tree_attention import TreeLayout, compact_path, new_tree_cache, tree_logits  # noqa: E402
from spectheory.decoder.tree_decode import draw_level, resolve_rule, tree_generate  # noqa: E402
from spectheory.trees import DraftTree  # noqa: E402
from spectheory.validation.lossless import exact_two_token_law, pooled_chisquare  # noqa: E402
from spectheory.validation.predict import mean_se, path_statistics, sample_paths  # noqa: E402
from spectheory.validation.tree_decoding import (  # noqa: E402
    broken_tree_rule,
    draft_tables,
    first_round_prediction,
    tree_round_dp,
    tree_two_token_samples,
)

TREES = [
    DraftTree.from_branching([2, 2, 1]),
    DraftTree.from_branching([1, 1, 1]),
    DraftTree.from_branching([3]),
    DraftTree([-1, 0, 1, 0, 3, 3]),
]
VERIFIERS = ["tree_rrs", "tree_rrs_wo", "tree_topk", "traversal", "traversal_iid"]


@pytest.fixture(scope="module")
def pair():
    return gpt(0, n_layer=2, n_embd=32), gpt(1)


@pytest.fixture(scope="module")
def small_pair():
    """Vocab 8, peaked laws (scaled embeddings), target and draft far apart."""
    return gpt(2, n_layer=2, n_embd=16, vocab=8, scale=5.0), gpt(3, vocab=8, scale=5.0)


def test_layout_and_tree_logits_equal_full_paths(pair):
    target, _ = pair
    tree = DraftTree.from_branching([2, 2])
    lay = TreeLayout(tree)
    assert lay.order.tolist() == [0, 1, 4, 2, 3, 5, 6]
    prefix = torch.tensor([[1, 2, 3, 4, 0, 0, 0], [5, 6, 0, 0, 0, 0, 0]])
    root = torch.tensor([3, 1])  # ragged rows
    cache = new_tree_cache(target, 2, 30, "cpu", torch.float32)
    target(prefix[:, :3], cache=cache, start=torch.tensor([0, 0]))
    nt = torch.randint(0, 256, (2, lay.n_nodes), generator=torch.Generator().manual_seed(0))
    nt[:, 0] = prefix[torch.arange(2), root]
    with torch.no_grad():
        lg = tree_logits(target, cache, prefix, root, nt, lay, 0, lay.n_nodes)
        for b in range(2):
            for o in range(lay.n_nodes):
                path = torch.nonzero(torch.as_tensor(lay.ancestors[o])).flatten()
                full = target(torch.cat([prefix[b, : root[b]], nt[b, path]])[None])[0, -1]
                torch.testing.assert_close(lg[b, o], full, atol=1e-5, rtol=1e-5)
        # keep the path root -> offset 2 (node 4) -> offset 6, then a cached call continues it
        compact_path(target, cache, root, torch.tensor([[2, 6], [1, 3]]), torch.tensor([2, 1]))
        nxt = torch.tensor([[7], [9]])
        start = root + 1 + torch.tensor([2, 1])
        got = target(nxt, cache=cache, start=start)[:, 0]
        for b, path in enumerate(([0, 2, 6], [0, 1])):
            seq = torch.cat([prefix[b, : root[b]], nt[b, path], nxt[b]])
            torch.testing.assert_close(got[b], target(seq[None])[0, -1], atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("tree", TREES, ids=str)
def test_greedy_tree_equals_autoregressive_ragged(pair, tree):
    target, draft = pair
    prompts = [[1, 2, 3], [4], [5, 6, 7, 8, 9]]
    ar = autoregressive_generate(target, prompts, 14, temperature=0)
    for v in VERIFIERS:
        res = tree_generate(target, draft, prompts, 14, tree, v, temperature=0)
        for a, b in zip(ar.tokens, res.tokens):
            np.testing.assert_array_equal(a, b)
        assert res.stats.target_calls.max() <= 14


def test_greedy_tree_equals_autoregressive_shipped_models():
    from spectheory.decoder import load_model

    target, draft, ngram = load_model("target"), load_model("draft-small"), load_model("draft-ngram")
    prompts = [list(b"def main(argv"), list(b"import os\n")]
    ar = autoregressive_generate(target, prompts, 16, temperature=0)
    for d, tree, v in (
        (draft, DraftTree.from_branching([2, 2, 1]), "tree_rrs"),
        (ngram, DraftTree.from_branching([3, 1]), "traversal"),
    ):
        res = tree_generate(target, d, prompts, 16, tree, v, temperature=0)
        for a, b in zip(ar.tokens, res.tokens):
            np.testing.assert_array_equal(a, b)
        single = tree_generate(target, d, prompts[:1], 16, tree, v, temperature=0)
        np.testing.assert_array_equal(single.tokens[0], ar.tokens[0])


def test_draw_level_is_the_torch_form_of_draw_children():
    """topk: identical tokens; iid: identical on hand-picked uniforms (same inverse CDF)."""
    rng = np.random.default_rng(0)
    laws = rng.dirichlet(np.ones(6), size=4)
    tree = DraftTree.from_branching([3])
    lay = TreeLayout(tree)
    u = np.array([[0.0, 0.1, 0.5, 0.93]] * 4)
    present = torch.ones(4, 1, dtype=torch.bool)
    x, ok = draw_level(torch.as_tensor(laws)[:, None], lay, 1, TopK(), torch.as_tensor(u), present)
    np.testing.assert_array_equal(x.numpy(), draw_children(laws, 3, TopK(), rng))

    class Given:  # an "rng" returning the hand-picked uniforms
        def random(self, shape):
            return u[:, 1:].reshape(shape)

    x, _ = draw_level(torch.as_tensor(laws)[:, None], lay, 1, IID(), torch.as_tensor(u), present)
    np.testing.assert_array_equal(x.numpy(), draw_children(laws, 3, IID(), Given()))
    x, ok = draw_level(
        torch.as_tensor(laws)[:, None], lay, 1, WithoutReplacement(), torch.as_tensor(u), present
    )
    assert all(len(set(r)) == 3 for r in x.numpy().tolist())


def test_resolve_rule_errors():
    with pytest.raises(ValueError, match="children"):
        resolve_rule(lambda *a: None)
    with pytest.raises(ValueError, match="children"):
        resolve_rule("tree_rrs", "topk")  # the verifier draws i.i.d. children
    with pytest.raises(ValueError, match="no tree form"):
        resolve_rule("block")
    with pytest.raises(ValueError, match="verifier"):
        resolve_rule("nope")
    with pytest.raises(ValueError, match="tree"):
        tree_generate(None, None, [[1]], 2, [1, 1])


def test_lossless_chisquare_and_broken_rule_flagged(small_pair):
    """Two-token law on a vocab-8 pair: lossless rules pass, the broken rule fails (fixed seeds)."""
    target, draft = small_pair
    prompt = [1, 2, 3]
    law = exact_two_token_law(target, prompt)
    tree = DraftTree.from_branching([2, 1])
    for v in ("tree_rrs", "tree_rrs_wo", "tree_topk", "traversal"):
        s = tree_two_token_samples(
            lambda pr, sd, _v=v: tree_generate(target, draft, pr, 2, tree, _v, seed=sd), prompt, 3000, seed=11
        )
        assert pooled_chisquare(s, law)["pvalue"] > 1e-6, v
    s = tree_two_token_samples(
        lambda pr, sd: tree_generate(
            target, draft, pr, 2, tree, broken_tree_rule("iid"), seed=sd, children="iid"
        ),
        prompt,
        3000,
        seed=11,
    )
    assert pooled_chisquare(s, law)["pvalue"] < 1e-12


def test_rao_blackwell_prediction_matches_decoder(small_pair):
    """Exact per-node acceptances along target paths predict the decoder's calls (5 SE, fixed seeds)."""
    target, draft = small_pair
    prompts = np.array([[1, 2, 3], [4, 5, 6], [7, 0, 1], [2, 2, 5]])[np.arange(300) % 4]
    T = 10
    paths = sample_paths(target, prompts, T, seed=99)
    ps = path_statistics(target, draft, paths, 3, keep_laws=True)
    for tree, v, children in (
        (DraftTree.from_branching([2, 1]), "tree_rrs", "iid"),
        (DraftTree.from_branching([2, 2]), "tree_rrs_wo", "wo"),
        (DraftTree([-1, 0, 1, 0]), "tree_topk", "topk"),
    ):
        pred = tree_round_dp(
            tree, draft_tables(ps.target_laws, ps.draft_laws, paths[:, 3:], tree, children), T
        )
        res = tree_generate(target, draft, list(prompts), T, tree, v, seed=5)
        pm, pse = mean_se(pred["target_calls"])
        mm, mse = mean_se(res.stats.target_calls)
        assert abs(pm - mm) < 5 * np.hypot(pse, mse), (v, pm, mm)
        first = first_round_prediction(
            lambda rule, _t=tree, _p=children: tree_generate(
                target, draft, list(prompts), 3, _t, rule, seed=77, children=_p
            ),
            v,
            tree,
        )
        fm, fse = mean_se([a[0] for a in res.stats.round_accepted])
        assert abs(first.mean() - fm) < 5 * np.hypot(mean_se(first)[1], fse)


def test_tree_round_dp_single_path_is_round_dp():
    from spectheory.validation.predict import round_dp

    rng = np.random.default_rng(1)
    rej = rng.random((5, 9)) * 0.6
    tree = DraftTree.from_branching([1, 1, 1])
    a = np.zeros((1, 5, 9, 3))
    r = np.zeros((5, 9, 3))
    for du in range(3):
        a[0, :, : 9 - du, du] = 1 - rej[:, du:]
        r[:, : 9 - du, du] = rej[:, du:]
    got = tree_round_dp(tree, {1: (a, r)}, 9)
    np.testing.assert_allclose(got["target_calls"], round_dp(rej, 3, True)["target_calls"], rtol=1e-12)


def test_greedy_tree_equals_autoregressive_hf_gpt2():
    """Random-weight Hugging Face GPT-2 pair through the adapter (tree attention through a 4-d
    mask; tests/decoder/test_decoder_trees_hf.py has the rest): greedy tree decoding equals greedy
    autoregressive decoding."""
    transformers = pytest.importorskip("transformers")
    from spectheory.decoder.hf import HFCausalLM

    def tiny(seed):
        cfg = transformers.GPT2Config(n_layer=1, n_embd=32, n_head=2, vocab_size=48, n_positions=64)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            m = transformers.GPT2LMHeadModel(cfg)
            with torch.no_grad():
                m.get_output_embeddings().weight.mul_(20.0)
        return HFCausalLM(m.double())

    target, draft = tiny(0), tiny(1)
    prompts = [[1, 2, 3], [4, 5]]
    ar = autoregressive_generate(target, prompts, 10, temperature=0)
    res = tree_generate(
        target, draft, prompts, 10, DraftTree.from_branching([2, 1]), "tree_rrs", temperature=0
    )
    for a, b in zip(ar.tokens, res.tokens):
        np.testing.assert_array_equal(a, b)

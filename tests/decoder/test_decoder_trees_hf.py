"""Tree attention for Hugging Face models through a 4-d attention mask (random-weight GPT-2, no downloads).

Checks: a tree scored in one call equals each node's full path recomputed; the accepted path
kept in past_key_values continues like a fresh model; greedy tree decoding equals greedy
autoregressive decoding token for token (single and ragged batch, several trees and
verifiers); a draft equal to the target accepts every node (the tree's laws are exact); a
model that refuses 4-d masks falls back to path recomputation, says so, and stays exact.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from spectheory.decoder.hf import HFCausalLM  # noqa: E402
from spectheory.decoder.hf_tree import accepts_tree_mask, hf_keep_path, hf_tree_logits  # noqa: E402
from spectheory.decoder.speculative import autoregressive_generate  # noqa: E402
from spectheory.decoder.tree_attention import TreeLayout, supports_tree_cache  # noqa: E402
from spectheory.decoder.tree_decode import tree_generate  # noqa: E402
from spectheory.decoder.tree_layout import TreeCall  # noqa: E402
from spectheory.trees import DraftTree  # noqa: E402


def gpt2(seed, n_layer=1, cls=None, scale=1.0):
    cfg = transformers.GPT2Config(
        n_layer=n_layer, n_embd=32, n_head=2, vocab_size=48, n_positions=64, bos_token_id=0, eos_token_id=None
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        m = (cls or transformers.GPT2LMHeadModel)(cfg)
        with torch.no_grad():
            m.get_output_embeddings().weight.mul_(scale)
    return HFCausalLM(m.double())


class NoTreeMask(transformers.GPT2LMHeadModel):
    """A model that refuses 4-d attention masks."""

    def forward(self, *args, attention_mask=None, **kwargs):
        if attention_mask is not None and attention_mask.ndim == 4:
            raise TypeError("4-d masks not supported")
        return super().forward(*args, attention_mask=attention_mask, **kwargs)


@pytest.fixture(scope="module")
def pair():
    return gpt2(0, n_layer=2, scale=20.0), gpt2(1, scale=20.0)


def test_installed_gpt2_honours_4d_float_masks(pair):
    assert accepts_tree_mask(pair[0]) and supports_tree_cache(pair[0])


def test_tree_logits_equal_full_paths_and_kept_path_continues(pair):
    lm, _ = pair
    tree = DraftTree.from_branching([2, 2])
    lay = TreeLayout(tree)
    prefix = torch.tensor([[1, 2, 3, 4, 0, 0, 0], [5, 6, 0, 0, 0, 0, 0]])
    root = torch.tensor([3, 1])  # ragged rows
    cache = lm.new_cache(2, 40)
    with torch.inference_mode():
        # row 1 also caches padding at positions 1, 2: the tree call must roll it back
        lm(torch.tensor([[1, 2, 3], [5, 7, 7]]), cache=cache, start=torch.tensor([0, 0]))
        nt = torch.randint(0, 48, (2, lay.n_nodes), generator=torch.Generator().manual_seed(0))
        nt[:, 0] = prefix[torch.arange(2), root]
        lg = hf_tree_logits(lm, cache, TreeCall(lay, root, nt, 0, lay.n_nodes))
        for b in range(2):
            for o in range(lay.n_nodes):
                path = torch.nonzero(torch.as_tensor(lay.ancestors[o])).flatten()
                full = lm(torch.cat([prefix[b, : root[b]], nt[b, path]])[None])[0, -1]
                torch.testing.assert_close(lg[b, o], full, atol=1e-8, rtol=1e-8)
        # keep root -> offset 2 -> offset 6 in row 0 and root -> offset 1 in row 1, continue with a plain call
        hf_keep_path(cache, root, torch.tensor([[2, 6], [1, 3]]), torch.tensor([2, 1]))
        nxt = torch.tensor([[7], [9]])
        start = root + 1 + torch.tensor([2, 1])
        got = lm(nxt, cache=cache, start=start)[:, 0]
        for b, path in enumerate(([0, 2, 6], [0, 1])):
            seq = torch.cat([prefix[b, : root[b]], nt[b, path], nxt[b]])
            torch.testing.assert_close(got[b], lm(seq[None])[0, -1], atol=1e-8, rtol=1e-8)


@pytest.mark.parametrize("branching", [[2, 2, 1], [3]], ids=str)
def test_greedy_tree_equals_autoregressive_single_and_ragged(pair, branching):
    target, draft = pair
    tree = DraftTree.from_branching(branching)
    prompts = [[1, 2, 3], [4], [5, 6, 7, 8, 9]]
    ar = autoregressive_generate(target, prompts, 12, temperature=0)
    for v in ("tree_rrs", "traversal"):
        res = tree_generate(target, draft, prompts, 12, tree, v, temperature=0)
        for a, b in zip(ar.tokens, res.tokens):
            np.testing.assert_array_equal(a, b)
        single = tree_generate(target, draft, prompts[2:], 12, tree, v, temperature=0)
        np.testing.assert_array_equal(single.tokens[0], ar.tokens[2])


def test_draft_equal_to_target_accepts_every_node(pair):
    """Sampling with draft = target: min(1, p/q) = 1 at every node iff the tree's laws are exact."""
    target, _ = pair
    twin = HFCausalLM(target.model)
    tree = DraftTree.from_branching([2, 1, 1])
    res = tree_generate(target, twin, [[1, 2], [3, 4, 5, 6]], 9, tree, "tree_rrs", seed=3)
    for rounds in res.stats.round_accepted:
        assert all(a == 3 for a in rounds[:-1]), rounds  # the last round may be truncated


@pytest.mark.filterwarnings("ignore::FutureWarning")  # the subclass's forward hides its parameter names
def test_model_without_4d_masks_falls_back_with_a_warning():
    target, draft = gpt2(2, cls=NoTreeMask, scale=20.0), gpt2(3, cls=NoTreeMask, scale=20.0)
    with pytest.warns(UserWarning, match="4-d attention mask"):
        assert not supports_tree_cache(target)
    prompts = [[1, 2, 3], [4, 5]]
    ar = autoregressive_generate(target, prompts, 8, temperature=0)
    with pytest.warns(UserWarning, match="4-d attention mask"):  # the draft is probed too
        res = tree_generate(
            target, draft, prompts, 8, DraftTree.from_branching([2, 1]), "tree_rrs", temperature=0
        )
    for a, b in zip(ar.tokens, res.tokens):
        np.testing.assert_array_equal(a, b)

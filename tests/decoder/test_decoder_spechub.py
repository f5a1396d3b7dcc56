"""SpecHub in the real tree decoder: the two-token law is the target's, greedy is autoregressive.

Tiny random-weight GPTs (vocab 8, peaked laws); chi-square with cells expecting fewer than 5
pooled (p > 1e-6, fixed seed); the hub drafting's torch form against its numpy form on
hand-given uniforms.
"""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

from spectheory.decoder.speculative import autoregressive_generate  # noqa: E402
from spectheory.decoder.tree_attention import TreeLayout  # noqa: E402
from spectheory.decoder.tree_decode import draw_level, tree_generate  # noqa: E402
from spectheory.trees import DraftTree  # noqa: E402
from spectheory.validation.lossless import exact_two_token_law, pooled_chisquare  # noqa: E402
from spectheory.validation.tree_decoding import tree_two_token_samples  # noqa: E402
from spectheory.verifiers.spechub_tree import SPECHUB, HubChildren  # noqa: E402

BINARY = DraftTree.from_branching([2, 2])


@pytest.fixture(scope="module")
def small_pair():
    return gpt(2, n_layer=2, n_embd=16, vocab=8, scale=5.0), gpt(3, vocab=8, scale=5.0)


def test_two_token_law_is_the_target(small_pair):
    target, draft = small_pair
    prompt = [1, 2, 3]
    law = exact_two_token_law(target, prompt)
    s = tree_two_token_samples(
        lambda pr, sd: tree_generate(target, draft, pr, 2, BINARY, SPECHUB, seed=sd), prompt, 1500, seed=11
    )
    res = pooled_chisquare(s, law)
    assert res["impossible_samples"] == 0 and res["pvalue"] > 1e-6


def test_greedy_is_autoregressive(small_pair):
    target, draft = small_pair
    prompts = [[1, 2, 3], [4], [5, 6, 7, 0, 1]]
    ar = autoregressive_generate(target, prompts, 10, temperature=0)
    res = tree_generate(target, draft, prompts, 10, BINARY, SPECHUB, temperature=0)
    for a, b in zip(ar.tokens, res.tokens):
        np.testing.assert_array_equal(a, b)
    assert res.stats.verifier == "spechub"


def test_torch_draw_is_the_numpy_draw():
    """Same uniforms, same pairs (inverse CDF; the hub's rest drawn with the second uniform)."""
    rng = np.random.default_rng(0)
    laws = rng.dirichlet(np.ones(5), size=200)
    laws[0] = [0.0, 1.0, 0.0, 0.0, 0.0]  # a point mass on the hub: no second child
    u = rng.random((200, 2))

    class Given:
        def random(self, shape):
            return u.reshape(shape)

    want = HubChildren().draw(laws, 2, Given())
    lay = TreeLayout(DraftTree.from_branching([2]))
    ut = torch.as_tensor(np.concatenate([np.zeros((200, 1)), u], 1))
    x, ok = draw_level(
        torch.as_tensor(laws)[:, None], lay, 1, HubChildren(), ut, torch.ones(200, 1, dtype=bool)
    )
    np.testing.assert_array_equal(np.where(ok.numpy(), x.numpy(), -1), want)

"""Repeated prompts prefilled once (spectheory.validation.shared_prefill): the same logits,
caches and decoder samples as the plain model, whatever the decoder (bitwise at these sizes)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.decoder.medusa import MedusaHeads, medusa_generate  # noqa: E402
from spectheory.decoder.model import GPT, GPTConfig  # noqa: E402
from spectheory.decoder.speculative import autoregressive_generate, speculative_generate  # noqa: E402
from spectheory.decoder.tree_decode import tree_generate  # noqa: E402
from spectheory.trees import DraftTree  # noqa: E402
from spectheory.validation.prefill_view import SharedPrefillGPT, shared_prefill  # noqa: E402


def _gpt(seed, n_embd=32):
    torch.manual_seed(seed)  # test-local model weights only
    return GPT(GPTConfig(n_layer=2, n_head=2, n_embd=n_embd, block_size=64)).eval()


@pytest.fixture(scope="module")
def models():
    return _gpt(0), _gpt(1, n_embd=16)


def _prompts(rng, n_distinct=3, n=12, length=9):
    base = rng.integers(0, 256, size=(n_distinct, length))
    return [base[i % n_distinct].tolist() for i in range(n)]


def test_prefill_logits_and_cache_are_bitwise_equal(models):
    target, _ = models
    ids = torch.as_tensor(_prompts(np.random.default_rng(0)))
    start = torch.zeros(len(ids), dtype=torch.long)
    c1, c2 = target.new_cache(len(ids), 20), target.new_cache(len(ids), 20)
    with torch.inference_mode():
        a, ha = target(ids, cache=c1, start=start, return_hidden=True)
        b, hb = shared_prefill(target)(ids, cache=c2, start=start, return_hidden=True)
    assert torch.equal(a, b) and torch.equal(ha, hb)
    assert torch.equal(c1.k, c2.k) and torch.equal(c1.v, c2.v)


def test_decoders_give_the_same_samples(models):
    target, draft = models
    st, sd = shared_prefill(target), shared_prefill(draft)
    prompts = _prompts(np.random.default_rng(1))
    runs = [
        lambda t, d: speculative_generate(t, d, prompts, 6, 3, seed=4),
        lambda t, d: autoregressive_generate(t, prompts, 5, seed=2),
        lambda t, d: tree_generate(t, d, prompts, 6, DraftTree.from_branching([2, 1]), "tree_rrs", seed=3),
        lambda t, d: medusa_generate(
            t, MedusaHeads(2, 32).eval(), prompts, 5, DraftTree.from_branching([2, 1]), "tree_topk", seed=5
        ),
    ]
    for run in runs:
        torch.manual_seed(7)  # the Medusa heads' weights
        a = run(target, draft)
        torch.manual_seed(7)
        b = run(st, sd)
        assert all(np.array_equal(x, y) for x, y in zip(a.tokens, b.tokens))
        assert np.array_equal(a.stats.target_calls, b.stats.target_calls)


def test_other_models_and_calls_pass_through(models):
    target, _ = models
    other = torch.nn.Linear(2, 2)  # any non-GPT model is returned as it is
    assert shared_prefill(other) is other
    view = shared_prefill(target)
    assert isinstance(view, SharedPrefillGPT) and shared_prefill(view) is view
    assert view.wte.weight is target.wte.weight  # parameters shared, not copied
    ids = torch.as_tensor(_prompts(np.random.default_rng(2), n_distinct=4, n=4))  # all distinct
    with torch.inference_mode():
        assert torch.equal(view(ids), target(ids))  # no cache: the plain call
        cache = target.new_cache(3, 20)
        with pytest.raises(ValueError, match="cache batch_size"):
            view(ids, cache=cache, start=torch.zeros(4, dtype=torch.long))

"""The fixed-shape forward and its compiled path (issue 22, item 2): the same decoder, token for token."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.decoder.compiled import CompiledLM, compile_model  # noqa: E402
from spectheory.decoder.speculative import autoregressive_generate, speculative_generate  # noqa: E402
from spectheory.decoder.tree_decode import tree_generate  # noqa: E402
from spectheory.montecarlo import pooled_chisquare  # noqa: E402
from spectheory.trees import DraftTree  # noqa: E402
from spectheory.validation import exact_two_token_law  # noqa: E402
from tests._torch_models import gpt  # noqa: E402

PROMPTS = [[1, 2, 3, 4, 5], [7], [9, 8, 7]]
P_MIN = 1e-4


def same(a, b):
    return len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b))


def test_static_forward_matches_the_eager_cached_forward():
    m = gpt(0, n_layer=2, n_embd=32)
    cache_a, cache_b = m.new_cache(2, 16), m.new_cache(2, 16)
    ids = torch.tensor([[3, 1, 4, 1], [5, 9, 2, 6]])
    with torch.inference_mode():
        for start, chunk in ((torch.tensor([0, 0]), ids[:, :3]), (torch.tensor([3, 2]), ids[:, 2:])):
            eager = m(chunk, cache=cache_a, start=start)
            static = m.static_forward(chunk, cache_b.k, cache_b.v, start)
            torch.testing.assert_close(static, eager, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("verifier", ["token", "block"])
def test_greedy_decoding_is_identical_on_the_fixed_shape_path(verifier):
    target, draft = gpt(0, n_layer=2, n_embd=32), gpt(1)
    ct, cd = compile_model(target, "static"), compile_model(draft, "static")
    for g in (1, 3):
        eager = speculative_generate(target, draft, PROMPTS, 12, g, temperature=0, verifier=verifier)
        fixed = speculative_generate(ct, cd, PROMPTS, 12, g, temperature=0, verifier=verifier)
        assert same(eager.tokens, fixed.tokens)
        assert np.array_equal(eager.stats.target_calls, fixed.stats.target_calls)
    ar = autoregressive_generate(target, PROMPTS, 12, temperature=0).tokens
    assert same(ar, autoregressive_generate(ct, PROMPTS, 12, temperature=0).tokens)


def test_lossless_on_the_fixed_shape_path_chi_square():
    target, draft = gpt(0, vocab=4, scale=8.0), gpt(5, vocab=4, scale=8.0)
    prompt, n = [1, 3, 0], 6000
    law = exact_two_token_law(target, prompt)
    res = speculative_generate(
        compile_model(target, "static"),
        compile_model(draft, "static"),
        [prompt] * n,
        2,
        2,
        seed=list(range(n)),
    )
    assert res.stats.rejections.sum() > n // 10  # the draft really differs
    out = pooled_chisquare(np.array([t[:2] for t in res.tokens]), law)
    assert out["impossible_samples"] == 0 and out["pvalue"] > P_MIN


def test_static_tree_forward_matches_the_eager_tree_call():
    m = gpt(0, n_layer=2, n_embd=32)
    cache_a, cache_b = m.new_cache(1, 12), m.new_cache(1, 12)
    prefix, start = torch.tensor([[3, 1, 4]]), torch.tensor([0])
    nodes = torch.tensor([[5, 9, 2]])  # a root 5 with two children 9, 2: both at position 4
    positions = torch.tensor([[3, 4, 4]])
    mask = torch.zeros(1, 3, 12, dtype=torch.bool)
    mask[..., :3] = True  # the prefix
    mask[0, :, 3] = True  # the root
    mask[0, 1, 4] = mask[0, 2, 5] = True  # each child itself, not its sibling
    with torch.inference_mode():
        m(prefix, cache=cache_a, start=start)
        m.static_forward(prefix, cache_b.k, cache_b.v, start)
        tree_start = torch.tensor([3])
        eager = m(nodes, cache=cache_a, start=tree_start, positions=positions, attn_mask=mask[..., :6])
        static = m.static_forward(nodes, cache_b.k, cache_b.v, tree_start, positions, mask)
    torch.testing.assert_close(static, eager, atol=1e-5, rtol=1e-5)


def _count_paths(*models):
    """Wrap each compiled model's fixed-shape step and eager forward with call counters."""
    calls = {"static": 0, "eager": 0}
    for m in models:
        step, eager = m._step, m.model.forward

        def counted_step(*a, step=step):
            calls["static"] += 1
            return step(*a)

        def counted_eager(*a, eager=eager, **k):
            calls["eager"] += 1
            return eager(*a, **k)

        m._step, m.model.forward = counted_step, counted_eager
    return calls


@pytest.mark.parametrize("verifier", ["tree_rrs", "tree_rrs_wo", "tree_topk"])
def test_tree_rounds_run_on_the_fixed_shape_path_token_for_token(verifier):
    target, draft = gpt(0, n_layer=2, n_embd=32), gpt(1)
    tree = DraftTree.from_branching([2, 2, 1])
    ct, cd = compile_model(target, "static"), compile_model(draft, "static")
    calls = _count_paths(ct, cd)
    for temperature in (0, 1.0):
        eager = tree_generate(target, draft, PROMPTS, 14, tree, verifier, temperature, seed=[1, 2, 3])
        calls.update(static=0, eager=0)
        fixed = tree_generate(ct, cd, PROMPTS, 14, tree, verifier, temperature, seed=[1, 2, 3])
        assert calls["static"] > 0 and calls["eager"] == 0  # every call (prefill, draft, target) fixed-shape
        assert same(eager.tokens, fixed.tokens)
        assert same(eager.stats.round_accepted, fixed.stats.round_accepted)


def test_tree_decoding_lossless_on_the_fixed_shape_path_chi_square():
    target, draft = gpt(0, vocab=4, scale=8.0), gpt(5, vocab=4, scale=8.0)
    prompt, n = [1, 3, 0], 4000
    law = exact_two_token_law(target, prompt)
    res = tree_generate(
        compile_model(target, "static"),
        compile_model(draft, "static"),
        [prompt] * n,
        2,
        DraftTree.from_branching([2, 1]),
        seed=list(range(n)),
    )
    assert res.stats.rejections.sum() > n // 10  # the draft really differs
    out = pooled_chisquare(np.array([t[:2] for t in res.tokens]), law)
    assert out["impossible_samples"] == 0 and out["pvalue"] > P_MIN


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="spectheory GPT"):
        CompiledLM(torch.nn.Linear(2, 2))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="mode"):
        compile_model(gpt(0), "fast")


@pytest.mark.slow
def test_torch_compile_path_is_identical_for_greedy_decoding():
    target, draft = gpt(0, n_layer=1, n_embd=16), gpt(1, n_layer=1, n_embd=16)
    ct, cd = compile_model(target, "default"), compile_model(draft, "default")
    eager = speculative_generate(target, draft, PROMPTS, 10, 2, temperature=0)
    assert same(eager.tokens, speculative_generate(ct, cd, PROMPTS, 10, 2, temperature=0).tokens)


@pytest.mark.slow
def test_torch_compile_path_is_identical_for_greedy_tree_decoding():
    target, draft = gpt(0, n_layer=1, n_embd=16), gpt(1, n_layer=1, n_embd=16)
    ct, cd = compile_model(target, "default"), compile_model(draft, "default")
    tree = DraftTree.from_branching([2, 1])
    eager = tree_generate(target, draft, PROMPTS, 10, tree, temperature=0)
    assert same(eager.tokens, tree_generate(ct, cd, PROMPTS, 10, tree, temperature=0).tokens)

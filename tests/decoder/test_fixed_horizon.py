"""The fixed-horizon loop (``speculative_generate(check_every=)``, issue 22 item 1, and
``tree_generate(check_every=)``, issue 37): no host read inside a round, the same tokens and
per-row statistics as the default loop."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.decoder.compiled import compile_model  # noqa: E402
from spectheory.decoder.speculative import speculative_generate  # noqa: E402
from spectheory.decoder.tree_decode import tree_generate  # noqa: E402
from spectheory.montecarlo import pooled_chisquare  # noqa: E402
from spectheory.stopping import FixedGamma  # noqa: E402
from spectheory.trees import DraftTree  # noqa: E402
from spectheory.validation import exact_two_token_law  # noqa: E402
from tests._torch_models import gpt  # noqa: E402

PROMPTS = [[1, 2, 3, 4, 5], [7], [9, 8, 7], [4, 4]]  # ragged, one of length 1
PER_ROW = ("target_calls", "draft_tokens", "rejections", "position_checked", "position_accepted")


def same_run(a, b):
    """Tokens, per-row counters and per-round accepted lengths equal."""
    if not all(np.array_equal(x, y) for x, y in zip(a.tokens, b.tokens)):
        return False
    rounds = all(np.array_equal(x, y) for x, y in zip(a.stats.round_accepted, b.stats.round_accepted))
    return rounds and all(np.array_equal(getattr(a.stats, f), getattr(b.stats, f)) for f in PER_ROW)


@pytest.mark.parametrize("verifier", ["token", "block"])
@pytest.mark.parametrize("gamma", [1, 3, 6])
@pytest.mark.parametrize("check_every", [1, 3])
def test_fixed_horizon_loop_equals_the_default_loop(verifier, gamma, check_every):
    target, draft = gpt(0, n_layer=2, n_embd=32), gpt(1)
    for temperature in (0, 1.0):
        ref = speculative_generate(target, draft, PROMPTS, 11, gamma, temperature, verifier=verifier, seed=4)
        fixed = speculative_generate(
            target, draft, PROMPTS, 11, gamma, temperature, verifier=verifier, seed=4, check_every=check_every
        )
        assert same_run(ref, fixed)
        # the calls made: every round drafts min(gamma, T) tokens, idle rounds at most check_every - 1
        rounds = fixed.stats.batch_target_calls
        assert (
            ref.stats.batch_target_calls <= rounds <= min(ref.stats.batch_target_calls + check_every - 1, 11)
        )
        assert fixed.stats.batch_draft_calls == rounds * min(gamma, 11)


class _HostReads:
    """Count the Python-level device-to-host reads of tensors while active."""

    NAMES = ("item", "tolist", "cpu", "numpy", "__bool__", "__int__", "__float__", "__index__")

    def __enter__(self):
        self.count, self.saved = 0, {n: getattr(torch.Tensor, n) for n in self.NAMES}
        for name, fn in self.saved.items():

            def counted(*a, fn=fn, **k):
                self.count += 1
                return fn(*a, **k)

            setattr(torch.Tensor, name, counted)
        return self

    def __exit__(self, *exc):
        for name, fn in self.saved.items():
            setattr(torch.Tensor, name, fn)


def test_no_host_read_inside_a_round_on_the_fixed_shape_path():
    target, draft = compile_model(gpt(0, n_layer=2, n_embd=32), "static"), compile_model(gpt(1), "static")
    reads = {}
    for check_every in (None, 1000):
        with _HostReads() as h:
            res = speculative_generate(target, draft, PROMPTS, 40, 2, seed=1, check_every=check_every)
        reads[check_every] = (h.count, res.stats.batch_target_calls)
    (default, rounds), (fixed, fixed_rounds) = reads[None], reads[1000]
    assert default >= rounds  # one read per round (at least) in the default loop
    assert fixed_rounds == 40 > rounds > 10  # never more rounds than new tokens
    # the fixed loop makes the set-up and clean-up reads of the default (prefill, results) and
    # none per round: check_every >= max_new_tokens never checks
    assert fixed <= default - rounds


def test_lossless_on_the_fixed_horizon_loop_chi_square():
    target, draft = gpt(0, vocab=4, scale=8.0), gpt(5, vocab=4, scale=8.0)
    prompt, n = [1, 3, 0], 6000
    law = exact_two_token_law(target, prompt)
    res = speculative_generate(target, draft, [prompt] * n, 2, 2, seed=list(range(n)), check_every=2)
    assert res.stats.rejections.sum() > n // 10  # the draft really differs
    out = pooled_chisquare(np.array([t[:2] for t in res.tokens]), law)
    assert out["impossible_samples"] == 0 and out["pvalue"] > 1e-4


@pytest.mark.parametrize(
    "kwargs, word",
    [
        (dict(check_every=0), "check_every"),
        (dict(check_every=2.5), "check_every"),
        (dict(check_every=2, eos_token_id=3), "check_every"),
        (dict(check_every=2, policy=FixedGamma(2)), "check_every"),
    ],
)
def test_fixed_horizon_bad_arguments(kwargs, word):
    with pytest.raises(ValueError, match=word):
        speculative_generate(gpt(0), gpt(1), PROMPTS, 4, 2, **kwargs)


class _Bigram(torch.nn.Module):
    """A draft without a tree cache (its tree is re-fed from the history: the widest window)."""

    vocab_size, max_seq_len = 256, 64

    def __init__(self):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(256, 256, generator=torch.Generator().manual_seed(3)))

    def new_cache(self, batch_size, max_len, device=None, dtype=None):
        return None

    def forward(self, ids, cache=None, start=None):
        return self.table[ids]


@pytest.mark.parametrize("branching", [[2, 2], [3, 1, 1]])
@pytest.mark.parametrize("verifier", ["tree_rrs", "traversal"])
def test_tree_fixed_horizon_loop_equals_the_default_loop(branching, verifier):
    target, tree = gpt(0, n_layer=2, n_embd=32), DraftTree.from_branching(branching)
    for draft in (gpt(1), _Bigram()):
        ref = tree_generate(target, draft, PROMPTS, 11, tree, verifier, seed=4)
        assert ref.stats.batch_target_calls < 11  # several tokens a round: the last rounds are shallower
        for check_every in (1, 3):
            fixed = tree_generate(target, draft, PROMPTS, 11, tree, verifier, seed=4, check_every=check_every)
            assert same_run(ref, fixed)
            rounds = fixed.stats.batch_target_calls
            assert ref.stats.batch_target_calls <= rounds <= ref.stats.batch_target_calls + check_every - 1
            # every round drafts the whole depth: one draft call per level
            assert fixed.stats.batch_draft_calls == rounds * tree.max_depth


def test_tree_fixed_horizon_bad_arguments():
    with pytest.raises(ValueError, match="check_every"):
        tree_generate(gpt(0), gpt(1), PROMPTS, 4, DraftTree.from_branching([2]), check_every=0)

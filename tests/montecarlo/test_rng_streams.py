"""Random streams: an integer seed fans out into independent rows; the decoder hashes only the
uniforms a call can use; ``bonus`` must be a bool everywhere."""

import numpy as np
import pytest

import spectheory as st

torch = pytest.importorskip("torch")

from spectheory.decoder import driver  # noqa: E402
from spectheory.decoder import rng as drng  # noqa: E402
from spectheory.decoder.speculative import speculative_generate  # noqa: E402


class Bigram(torch.nn.Module):
    """Toy model of the decoder's contract: logits from the last token."""

    vocab_size, max_seq_len = 6, 128

    def __init__(self, seed):
        super().__init__()
        self.table = torch.nn.Parameter(torch.randn(6, 6, generator=torch.Generator().manual_seed(seed)))

    def new_cache(self, batch_size, max_len, device=None, dtype=None):
        return None

    def forward(self, ids, cache=None, start=None):
        return self.table[ids]


def test_integer_seeds_do_not_overlap_between_calls():
    """Row 1 of seed 0 was row 0 of seed 1 (seeds s + b): repeated calls shared streams."""
    a, b = drng.check_seeds(0, 4), drng.check_seeds(1, 4)
    assert a[1] != b[0] and not set(a) & set(b)
    assert len(set(drng.check_seeds(7, 1000))) == 1000
    assert drng.check_seeds(5, 3) == drng.check_seeds(5, 10)[:3]  # a row does not depend on the batch size
    assert all(0 <= s < 2**63 for s in a + b)


def test_decoder_rows_of_consecutive_seeds_differ():
    target, draft = Bigram(0), Bigram(1)
    prompts = [[1, 2]] * 3
    r0 = speculative_generate(target, draft, prompts, 12, 2, seed=0)
    r1 = speculative_generate(target, draft, prompts, 12, 2, seed=1)
    assert not np.array_equal(r0.tokens[1], r1.tokens[0])
    # an int seed is batch invariant: row b is the same whatever else is in the batch
    alone = speculative_generate(target, draft, prompts[:1], 12, 2, seed=0)
    np.testing.assert_array_equal(alone.tokens[0], r0.tokens[0])


def test_round_uniforms_only_for_what_the_call_can_use(monkeypatch):
    """2 new tokens need at most 2 rounds of min(gamma, 2) slots: not 64 rounds of gamma slots."""
    hashed = []
    real = driver.uniforms

    def counting(seeds, *counters):
        out = real(seeds, *counters)
        hashed.append(out.numel())
        return out

    monkeypatch.setattr(driver, "uniforms", counting)
    B = 50
    res = speculative_generate(Bigram(0), Bigram(1), [[1]] * B, 2, 8, seed=3)
    assert sum(hashed) <= B * 2 * 2 * 3, hashed  # rows x rounds x slots x purposes
    assert all(len(t) == 2 for t in res.tokens)


def test_blocked_uniforms_equal_one_round_at_a_time():
    seeds = drng.seed_tensor(drng.check_seeds(11, 4))
    blocked = driver.RoundUniforms(seeds, 3, block=64)
    single = driver.RoundUniforms(seeds, 3, block=1)
    for rnd in range(70):
        torch.testing.assert_close(blocked(rnd, 3, 70 - rnd), single(rnd, 3, 1), rtol=0, atol=0)


@pytest.mark.parametrize("bad", ["no", 0, 1, None, "False"])
def test_bonus_must_be_a_bool(bad):
    chain = st.DecodingChain.random(3, rng=0)
    with pytest.raises(ValueError, match="bonus"):
        chain.expected_target_calls(6, 2, bonus=bad)
    with pytest.raises(ValueError, match="bonus"):
        chain.expected_rejections(6, gamma=2, bonus=bad)
    with pytest.raises(ValueError, match="bonus"):
        speculative_generate(Bigram(0), Bigram(1), [[1]], 4, 2, bonus=bad)


def test_numpy_bool_bonus_is_fine():
    chain = st.DecodingChain.random(3, rng=0)
    np.testing.assert_allclose(
        chain.expected_target_calls(6, 2, bonus=np.bool_(False)),
        chain.expected_target_calls(6, 2, bonus=False),
        rtol=1e-15,
    )


# --------------------------------------------------------------------------- seed fan-out in validations
def test_chunked_validation_runs_equal_one_unbatched_call():
    """Chunks used seeds ``seed + lo``: chunk 2 of seed 0 was chunk 1 of seed ``lo``, and the samples
    depended on the batch size. Row ``i`` of a run now has ``row_seeds(seed, n)[i]`` whatever the chunking."""
    from spectheory.validation.lossless import decoder_two_token_samples
    from spectheory.validation.predict import sample_paths

    target, draft = Bigram(0), Bigram(1)
    whole = decoder_two_token_samples(target, draft, [1, 2], 7, 2, seed=3, batch_size=7)
    np.testing.assert_array_equal(
        decoder_two_token_samples(target, draft, [1, 2], 7, 2, seed=3, batch_size=2), whole
    )
    prompts = np.array([[1, 2]] * 5)
    np.testing.assert_array_equal(
        sample_paths(target, prompts, 6, 3, batch_size=2), sample_paths(target, prompts, 6, 3, batch_size=5)
    )


def test_tree_two_token_samples_rows_follow_one_seed_stream():
    from spectheory.validation.tree_decoding import tree_two_token_samples

    seen = []

    class Result:
        def __init__(self, n):
            self.tokens = [np.zeros(2, dtype=np.int64)] * n

    def generate(prompts, seeds):
        seen.append(list(seeds))
        return Result(len(prompts))

    tree_two_token_samples(generate, [1], 5, seed=0, batch_size=2)
    rows0 = sum(seen, [])
    assert rows0 == drng.row_seeds(0, 5)
    seen.clear()
    tree_two_token_samples(generate, [1], 5, seed=2, batch_size=2)
    assert not set(rows0) & set(sum(seen, []))  # seed 0's second chunk was seed 2's first


def test_derived_streams_are_distinct_and_not_offsets():
    keys = [(r,) for r in range(50)] + [(1, g) for g in range(50)] + [(2, g) for g in range(50)]
    seeds = {drng.derive_seed(0, *k) for k in keys} | {drng.derive_seed(1, *k) for k in keys}
    assert len(seeds) == 2 * len(keys)
    assert drng.derive_seed(0, 1) not in (0, 1, 2) and drng.derive_seed(0, 1) != drng.derive_seed(0, 1, 0)
    with pytest.raises(ValueError, match="keys"):
        drng.derive_seed(0, -1)


def test_rows_of_one_seed_never_share_a_seed():
    """``row_seeds``: lane 0 (the top 32 bits) is a bijection of the row, so 2**18 rows give
    2**18 distinct values; a random 32-bit function would collide ~8 times here."""
    for seed in (0, 2**40 + 3):
        top = {s >> 31 for s in drng.row_seeds(seed, 2**18)}
        assert len(top) == 2**18

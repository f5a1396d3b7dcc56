"""Tests of the shipped small models: GPT, n-gram, corpus split and registry."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.decoder.model import GPT, GPTConfig  # noqa: E402

pytestmark = pytest.mark.torch


def tiny_gpt(seed=0, n_layer=2, block_size=40):
    torch.manual_seed(seed)  # only to make the random init reproducible inside this test
    model = GPT(GPTConfig(n_layer=n_layer, n_head=2, n_embd=32, block_size=block_size)).eval()
    # larger-than-init weights so that attention is far from uniform and bugs show up
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(4.0)
    return model


def random_ids(shape, seed):
    gen = torch.Generator().manual_seed(seed)
    return torch.randint(0, 256, shape, generator=gen)


# ----------------------------------------------------------------------------- GPT
def test_gpt_shapes_and_attributes():
    model = tiny_gpt()
    ids = random_ids((3, 17), seed=1)
    with torch.no_grad():
        logits = model(ids)
    assert logits.shape == (3, 17, 256)
    assert logits.dtype == torch.float32
    assert model.vocab_size == 256 and model.max_seq_len == 40
    assert torch.isfinite(logits).all()


def test_gpt_is_causal():
    model = tiny_gpt()
    ids = random_ids((2, 20), seed=2)
    changed = ids.clone()
    changed[:, 12] = (changed[:, 12] + 1) % 256
    with torch.no_grad():
        a, b = model(ids), model(changed)
    np.testing.assert_array_equal(a[:, :12].numpy(), b[:, :12].numpy())
    assert (a[:, 12:] - b[:, 12:]).abs().max() > 1e-3  # the change is visible afterwards


def test_gpt_rows_independent_of_batch():
    model = tiny_gpt()
    ids = random_ids((4, 15), seed=3)
    with torch.no_grad():
        full = model(ids)
        single = model(ids[2:3])
    np.testing.assert_allclose(full[2:3].numpy(), single.numpy(), atol=1e-5)


def test_gpt_cached_equals_uncached_ragged_with_rollback():
    model = tiny_gpt(seed=4)
    B, T = 3, 36
    ids = random_ids((B, T), seed=5)
    with torch.no_grad():
        reference = model(ids)  # [B, T, V]
        cache = model.new_cache(B, T)
        # prefill with ragged lengths: each row gets the prefix of its own length,
        # written in one call starting at 0 (the padding beyond is just stale cache)
        lengths = torch.tensor([5, 9, 2])
        model(ids[:, :9], cache=cache, start=torch.zeros(B, dtype=torch.long))
        start = lengths.clone()
        gen = torch.Generator().manual_seed(6)
        for step in range(12):
            L = int(torch.randint(1, 5, (1,), generator=gen))
            L = min(L, T - int(start.max()))
            chunk = torch.stack([ids[b, start[b] : start[b] + L] for b in range(B)])
            out = model(chunk, cache=cache, start=start)  # [B, L, V]
            for b in range(B):
                np.testing.assert_allclose(
                    out[b].numpy(), reference[b, start[b] : start[b] + L].numpy(), atol=2e-5, rtol=1e-5
                )
            # advance by a random accepted count 0..L (rollback of the rest)
            accepted = torch.randint(0, L + 1, (B,), generator=gen)
            start = start + accepted
            # write garbage from the rollback point on (as a draft would after a rejection)
            # to prove stale entries are masked and rewritten on re-extension
            n_garbage = min(L, T - int(start.max()))
            if n_garbage >= 1:
                model(random_ids((B, n_garbage), seed=100 + step), cache=cache, start=start)
            # re-extend: the next call rewrites the true tokens after the rollback point


def test_gpt_cached_single_token_decode_matches():
    model = tiny_gpt(seed=7, n_layer=3)
    ids = random_ids((2, 25), seed=8)
    with torch.no_grad():
        reference = model(ids)
        cache = model.new_cache(2, 30)
        outs = [model(ids[:, i : i + 1], cache=cache, start=torch.tensor([i, i])) for i in range(25)]
    np.testing.assert_allclose(torch.cat(outs, 1).numpy(), reference.numpy(), atol=2e-5)


def test_gpt_bad_input():
    model = tiny_gpt()
    with pytest.raises(ValueError, match="ids"):
        model(torch.zeros(5, dtype=torch.long))
    with pytest.raises(ValueError, match="max_seq_len"):
        model(torch.zeros(1, 41, dtype=torch.long))
    cache = model.new_cache(2, 10)
    with pytest.raises(ValueError, match="start"):
        model(torch.zeros(2, 3, dtype=torch.long), cache=cache)
    with pytest.raises(ValueError, match="position"):
        model(torch.zeros(2, 3, dtype=torch.long), cache=cache, start=torch.tensor([0, 8]))
    with pytest.raises(ValueError, match="batch"):
        model(torch.zeros(3, 1, dtype=torch.long), cache=cache, start=torch.tensor([0, 0, 0]))
    with pytest.raises(ValueError, match="max_len"):
        model.new_cache(1, 41)
    with pytest.raises(ValueError, match="n_embd"):
        GPTConfig(n_head=3, n_embd=32)


def test_gpt_dtype_follows_model_and_caller():
    model = tiny_gpt(seed=9).to(torch.float64)
    ids = random_ids((2, 12), seed=10)
    with torch.no_grad():
        reference = model(ids)
        cache = model.new_cache(2, 12)
        assert cache.k.dtype == torch.float64
        out = torch.cat(
            [
                model(ids[:, :7], cache=cache, start=torch.tensor([0, 0])),
                model(ids[:, 7:], cache=cache, start=torch.tensor([7, 7])),
            ],
            1,
        )
    np.testing.assert_allclose(out.numpy(), reference.numpy(), atol=1e-12)
    half = tiny_gpt(seed=9).to(torch.bfloat16)
    with torch.no_grad():
        logits = half(ids, cache=half.new_cache(2, 12), start=torch.tensor([0, 0]))
    assert logits.dtype == torch.bfloat16 and torch.isfinite(logits.float()).all()


# ----------------------------------------------------------------------------- n-gram
from spectheory.decoder.ngram_model import NGramModel  # noqa: E402


def counted_law(data, context, order, alpha, V=256):
    """Next-byte law after ``context`` from a direct count over ``data`` (independent
    of NGramModel's vectorised counting and its state encoding)."""
    k1 = order - 1
    ctx = tuple(context[len(context) - k1 :]) if k1 else ()
    counts = np.zeros(V)
    for i in range(k1, len(data)):
        if tuple(data[i - k1 : i]) == ctx:
            counts[data[i]] += 1
    return (counts + alpha) / (counts.sum() + V * alpha)


@pytest.mark.parametrize("order,V", [(1, 256), (2, 256), (3, 16)])
def test_ngram_laws_equal_count_formula(order, V):
    rng = np.random.default_rng(order)
    data = rng.integers(V - 4, V, size=400).astype(np.uint8)  # 4 symbols: many repeats
    alpha = 0.3
    model = NGramModel.from_bytes(data, order=order, alpha=alpha, vocab_size=V)
    assert model.num_states == V ** (order - 1)
    ids = torch.as_tensor(rng.integers(V - 4, V, size=(2, 9)))
    with torch.no_grad():
        laws = model(ids).double().exp()  # [2, 9, 256]
    for b in range(2):
        for i in range(9):
            context = ids[b, : i + 1].tolist()
            if len(context) < order - 1:
                continue  # short contexts are padded; covered by the kernel test below
            np.testing.assert_allclose(
                laws[b, i].numpy(), counted_law(data, context, order, alpha, V), rtol=1e-6
            )


@pytest.mark.parametrize("order,V", [(1, 256), (2, 256), (3, 16)])
def test_ngram_kernel_consistent_with_forward_and_next_state(order, V):
    rng = np.random.default_rng(10 + order)
    data = rng.integers(0, V, size=3000).astype(np.uint8)
    model = NGramModel.from_bytes(data, order=order, alpha=0.5, vocab_size=V)
    kernel, next_state = model.kernel(), model.next_state()
    np.testing.assert_allclose(kernel.sum(1), 1.0, rtol=1e-12)
    assert (kernel > 0).all()
    ids = rng.integers(0, V, size=12)
    with torch.no_grad():
        laws = model(torch.as_tensor(ids)[None]).double().exp()[0].numpy()  # [12, 256]
    state = model.initial_state
    for i, token in enumerate(ids):
        state = next_state[state, token]  # chain walk
        assert state == model.state_index(ids[: i + 1].tolist())
        np.testing.assert_allclose(laws[i], kernel[state], rtol=1e-5)


def test_ngram_cached_equals_uncached_with_rollback():
    rng = np.random.default_rng(3)
    V = 32
    model = NGramModel.from_bytes(rng.integers(0, V, 5000).astype(np.uint8), order=3, vocab_size=V)
    B, T = 3, 30
    ids = torch.as_tensor(rng.integers(0, V, size=(B, T)))
    with torch.no_grad():
        reference = model(ids)
        cache = model.new_cache(B, T)
        start = torch.tensor([0, 4, 1])
        model(ids[:, :5], cache=cache, start=torch.zeros(B, dtype=torch.long))
        for _ in range(10):
            L = min(int(rng.integers(1, 5)), T - int(start.max()))
            chunk = torch.stack([ids[b, start[b] : start[b] + L] for b in range(B)])
            out = model(chunk, cache=cache, start=start)
            for b in range(B):
                np.testing.assert_array_equal(out[b].numpy(), reference[b, start[b] : start[b] + L].numpy())
            start = start + torch.as_tensor(rng.integers(0, L + 1, size=B))
            n_garbage = min(L, T - int(start.max()))
            if n_garbage >= 1:  # stale writes past the rollback point must not matter
                model(torch.as_tensor(rng.integers(0, V, (B, n_garbage))), cache=cache, start=start)


def test_ngram_save_load_roundtrip(tmp_path):
    rng = np.random.default_rng(4)
    model = NGramModel.from_bytes(rng.integers(0, 256, 2000).astype(np.uint8), order=2, alpha=0.25)
    model.save(tmp_path / "m.npz")
    loaded = NGramModel.load(tmp_path / "m.npz")
    assert (loaded.order, loaded.alpha) == (2, 0.25)
    np.testing.assert_array_equal(loaded.kernel(), model.kernel())


def test_ngram_bad_input():
    data = np.frombuffer(b"hello world", np.uint8)
    with pytest.raises(ValueError, match="order"):
        NGramModel.from_bytes(data, order=0)
    with pytest.raises(ValueError, match="alpha"):
        NGramModel.from_bytes(data, order=2, alpha=0.0)
    with pytest.raises(ValueError, match="states"):
        NGramModel.from_bytes(data, order=4)
    model = NGramModel.from_bytes(data, order=2)
    with pytest.raises(ValueError, match="start"):
        model(torch.zeros(1, 2, dtype=torch.long), cache=model.new_cache(1, 4))


# ----------------------------------------------------------------------------- corpus
from spectheory.decoder import corpus  # noqa: E402


def test_corpus_split_is_deterministic_and_partitions_files():
    first = corpus.load_corpus()
    corpus.load_corpus.cache_clear()
    second = corpus.load_corpus()
    assert first is not second
    assert first.sha256 == second.sha256
    np.testing.assert_array_equal(first.heldout, second.heldout)
    assert first.heldout_files == second.heldout_files
    files = corpus.corpus_files()
    assert sorted(first.train_files + first.heldout_files) == files
    assert not any(part in corpus.EXCLUDED_DIRS for f in files for part in f.split("/")[:-1])
    assert 0.02 < len(first.heldout_files) / len(files) < 0.10  # about 5 %
    assert len(first.train) + len(first.heldout) == sum(
        os.path.getsize(os.path.join(first.root, f)) for f in files
    )
    # the split depends on the path only, through its SHA-256
    import hashlib

    for f in files[:50]:
        u = int(hashlib.sha256(f.encode()).hexdigest()[:8], 16) / 2**32
        assert corpus.is_heldout(f) == (u < corpus.HELDOUT_FRACTION)


def test_heldout_windows():
    w = corpus.heldout_windows(8, 100)
    assert w.shape == (8, 100) and w.dtype == np.int64
    data = corpus.heldout_bytes()
    np.testing.assert_array_equal(w[0], data[:100])
    np.testing.assert_array_equal(w, corpus.heldout_windows(8, 100))
    with pytest.raises(ValueError, match="n_windows"):
        corpus.heldout_windows(0, 10)


# ----------------------------------------------------------------------------- registry
import os  # noqa: E402

from spectheory.decoder import list_models, load_model, model_info  # noqa: E402
from spectheory.decoder.registry import MODEL_NAMES, WEIGHTS_DIR  # noqa: E402

REQUIRED_FIELDS = (
    "name",
    "kind",
    "architecture",
    "config",
    "num_params",
    "training_command",
    "steps",
    "heldout_loss_nats_per_byte",
    "heldout_loss_se",
    "corpus",
    "date",
    "torch_version",
    "weights_file",
)


@pytest.mark.parametrize("name", list(MODEL_NAMES))
def test_shipped_model_loads_and_is_finite(name):
    model = load_model(name, device="cpu")
    assert not model.training
    assert model.vocab_size == 256 and model.max_seq_len >= 256
    ids = torch.as_tensor(np.frombuffer(b"def f(x):\n    return x", np.uint8).astype(np.int64))
    with torch.no_grad():
        logits = model(ids[None])
    assert logits.shape == (1, len(ids), 256) and logits.dtype == torch.float32
    assert torch.isfinite(logits).all()
    info = model_info(name)
    for key in REQUIRED_FIELDS:
        assert key in info, key
    assert info["name"] == name
    assert info["corpus"]["sha256"] and len(info["corpus"]["sha256"]) == 64
    assert 0.5 < info["heldout_loss_nats_per_byte"] < np.log(256)
    if name != "target":
        acceptance = info["acceptance_vs_target"]
        assert 0 < acceptance["mean"] < 1 and 0 < acceptance["se"] < 0.05
    if info["kind"] == "gpt":
        assert sum(p.numel() for p in model.parameters()) == info["num_params"]


def test_shipped_models_set_and_sizes():
    names = list_models()
    assert names == list(MODEL_NAMES)
    total = sum(os.path.getsize(os.path.join(WEIGHTS_DIR, f)) for f in os.listdir(WEIGHTS_DIR))
    assert total <= 20 * 2**20
    target = model_info("target")
    assert target["config"]["n_layer"] >= 4 and target["num_params"] >= 2_000_000
    small, tiny = model_info("draft-small"), model_info("draft-tiny")
    assert small["num_params"] <= target["num_params"] / 8
    assert tiny["num_params"] < small["num_params"]
    # better drafts (by held-out loss) are accepted more often
    ordered = sorted(names[1:], key=lambda n: model_info(n)["heldout_loss_nats_per_byte"])
    acc = [model_info(n)["acceptance_vs_target"]["mean"] for n in ordered]
    assert acc == sorted(acc, reverse=True)


def test_load_model_dtype_and_bad_name():
    model = load_model("draft-ngram", dtype=torch.float64)
    with torch.no_grad():
        assert model(torch.tensor([[1, 2]])).dtype == torch.float64
    with pytest.raises(ValueError, match="unknown model name 'nope'.*target"):
        load_model("nope")
    with pytest.raises(ValueError, match="valid names"):
        model_info("target-large")


def test_ngram_models_form_a_decoding_chain():
    """The bridge to the theory: two n-gram models of the same order are one
    DecodingChain; its exact TV profile equals what the torch modules give."""
    st = pytest.importorskip("spectheory")
    rng = np.random.default_rng(21)
    V = 6
    target = NGramModel.from_bytes(rng.integers(0, V, 300).astype(np.uint8), order=3, alpha=0.5, vocab_size=V)
    draft = NGramModel.from_bytes(rng.integers(0, V, 300).astype(np.uint8), order=3, alpha=2.0, vocab_size=V)
    prompt = [1, 4, 2]
    initial = np.zeros(target.num_states)
    initial[target.state_index(prompt)] = 1.0
    chain = st.DecodingChain(target.kernel(), draft.kernel(), initial=initial, next_state=target.next_state())
    profile = chain.tv_profile(2)
    # the same two expectations from the torch modules' forward passes
    with torch.no_grad():
        ids = torch.tensor([prompt + [x] for x in range(V)])  # [V, 4]
        t_laws = target(ids).double().exp().numpy()  # [V, 4, V]
        d_laws = draft(ids).double().exp().numpy()
    tv1 = 0.5 * np.abs(t_laws[0, 2] - d_laws[0, 2]).sum()
    tv2 = sum(t_laws[0, 2, x] * 0.5 * np.abs(t_laws[x, 3] - d_laws[x, 3]).sum() for x in range(V))
    np.testing.assert_allclose(profile, [tv1, tv2], rtol=1e-5)


def test_sampler_keeps_the_last_positive_token_and_rows_without_mass():
    from spectheory.verifiers.torch_forms import sample_from_uniform

    p = torch.tensor([[0.5, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    # u * total at the top of the CDF: the last token of positive probability, never a hole;
    # a row without mass (outside the contract) keeps the old answer, the last index
    assert sample_from_uniform(p, torch.tensor([1.0, 0.5])).tolist() == [1, 3]


def test_sampling_law_is_logits_to_probs_without_the_checks():
    from spectheory.decoder.logits import logits_to_probs, sampling_law

    z = torch.randn(3, 7, generator=torch.Generator().manual_seed(0))
    for opts in ((1.0, None, None), (0.7, 3, None), (1.3, None, 0.8), (0.0, None, None)):
        assert torch.equal(sampling_law(z, *opts), logits_to_probs(z, *opts))

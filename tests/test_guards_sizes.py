"""Issue 27: one size check (time and memory) at every big entry point; rng and verifier errors."""

import io

import numpy as np
import pytest

import spectheory as st
from spectheory._guards import as_rng
from spectheory._limits import parse_bytes, size_limits
from spectheory._progress import progress_bar
from spectheory._sizes import SizeError, check_size, estimate
from spectheory.app import chain_cmd


@pytest.fixture(scope="module")
def chain():
    return st.DecodingChain.random(4, rng=0)


def test_protocol_with_a_huge_horizon_is_refused_at_once(chain):
    """chain.protocol(10**7, 4) ran 240 s silently to 1.5 GB."""
    with size_limits(max_seconds=300):
        with pytest.raises(SizeError, match=r"horizon: .*would take about .* GiB"):
            chain.protocol(10**7, 4)
    with size_limits(max_seconds=1e-6):
        for call in (
            lambda: chain.protocol(1000, 2, verifier="block"),  # the round engine
            lambda: chain.protocol(1000, st.DraftTree.from_branching([2, 2])),  # the tree engine
            lambda: st.simulate(chain, 1000, 2, 10**4),  # Monte Carlo
            lambda: st.DecodingChain.random(4, n_states=10**5),  # a chain constructor
        ):
            with pytest.raises(SizeError):
                call()


def test_limits_lifted_by_size_limits_and_restored(chain):
    with size_limits(max_seconds=1e-6):
        with size_limits(max_seconds=float("inf")):
            assert chain.protocol(50, 2).target_calls > 0
        with pytest.raises(SizeError):
            chain.protocol(51, 2)  # (results are cached per chain: a new horizon)
    assert chain.protocol(51, 2).target_calls > 0


def test_env_limits(monkeypatch):
    monkeypatch.setenv("SPECTHEORY_MAX_MEMORY", "1M")
    with pytest.raises(SizeError, match=r"n_states: .*limit .*1.0 MiB"):
        st.DecodingChain.random(4, n_states=10**5)
    monkeypatch.setenv("SPECTHEORY_MAX_MEMORY", "lots")
    with pytest.raises(ValueError, match="SPECTHEORY_MAX_MEMORY"):
        check_size("chain", "n_states", states=2, vocab=2)


def test_estimates_grow_with_every_size():
    base = dict(horizon=100, states=8, vocab=8, gamma=2)
    e0 = estimate("path_exact", **base)
    for key in base:
        e1 = estimate("path_exact", **{**base, key: base[key] * 10})
        assert e1.seconds > e0.seconds and e1.nbytes >= e0.nbytes, key
    big = estimate("tree_decode", nodes=127550, batch=1, context=68, vocab=256, tokens=64)
    assert big.nbytes > 15 * 2**30  # the mask decode --tree 50x50x50 tried to allocate
    assert parse_bytes("1.5G") == 1.5 * 2**30 and parse_bytes("inf") == float("inf")
    with pytest.raises(ValueError, match="max_memory"):
        parse_bytes("-3")


def test_huge_draft_trees_are_refused_before_building():
    with pytest.raises(SizeError, match="branching"):
        st.DraftTree.from_branching([1000, 1000, 1000])


@pytest.mark.parametrize("bad", ["abc", 1.5, True, [0, "x"], {}])
def test_rng_type_errors_name_rng_and_what_is_accepted(chain, bad):
    """rng='abc' gave numpy's raw TypeError ("SeedSequence expects int ...")."""
    with pytest.raises(TypeError, match=r"^rng: expected None, an integer seed >= 0.*Generator"):
        st.simulate(chain, 4, 2, 10, rng=bad)
    with pytest.raises(TypeError, match=r"^rng: "):
        st.DecodingChain.random(3, rng=bad)


def test_rng_accepts_what_numpy_accepts_and_refuses_negative_seeds():
    g = np.random.default_rng(3)
    assert as_rng(g) is g
    assert as_rng(5).random() == np.random.default_rng(5).random()
    assert as_rng([1, 2]).random() == np.random.default_rng([1, 2]).random()
    assert as_rng(np.random.SeedSequence(4)).random() == np.random.default_rng(4).random()
    assert isinstance(as_rng(None), np.random.Generator)
    with pytest.raises(ValueError, match="rng: seeds must be >= 0"):
        as_rng(-1)


def test_tree_verifiers_on_a_path_say_pass_tree(chain):
    for call in (
        lambda: chain.protocol(8, 2, verifier="tree_rrs"),
        lambda: chain.expected_tokens_per_call(8, 2, verifier="tree_rrs", per_generation=True),
    ):
        with pytest.raises(ValueError, match="pass tree="):
            call()


def test_progress_lines_when_not_a_terminal():
    out = io.StringIO()
    with progress_bar(100, "job", show=True, file=out, interval=0.0) as bar:
        for _ in range(4):
            bar.update(25)
    text = out.getvalue()
    assert "\r" not in text
    lines = text.splitlines()
    assert lines[0].startswith("job: 25% (25/100 it)") and lines[-1].endswith("done")


def test_one_bar_over_every_chunk_and_gamma(chain, monkeypatch):
    """simulate --runs drew a new bar per 1M-run chunk, with the ETA of one chunk."""
    made = []
    real = progress_bar

    def spy(total, desc, **kw):
        if not P.is_bar(kw.get("show")):  # a bar of its own, not the caller's passed down
            made.append(total)
        return real(total, desc, **kw)

    import spectheory._progress as P

    monkeypatch.setattr(P, "progress_bar", spy)
    bar = real(3 * 700 * 6, "simulate", show=False)
    for g in (1, 2, 4):
        chain_cmd.monte_carlo_rows(chain, 6, g, 700, seed=0, bonus=True, chunk=100, progress=bar)
    assert made == [] and bar.n == 3 * 700 * 6  # the callee updated the caller's bar, made none


def test_decoder_batch_too_big_is_refused_before_allocating():
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace

    from spectheory.decoder.batching import make_batch

    model = SimpleNamespace(vocab_size=256, max_seq_len=None)
    with pytest.raises(SizeError, match=r"^prompts: decoding 100000 sequences"):
        make_batch([[1, 2]] * 10**5, 10**4, {"target": model}, torch.device("cpu"))
    assert make_batch([[1, 2]], 3, {"target": model}, torch.device("cpu")).tokens.shape == (1, 5)


def test_decoder_seed_string_is_named_not_counted():
    pytest.importorskip("torch")
    from spectheory.decoder.rng import check_seeds

    with pytest.raises(ValueError, match=r"^seed: expected an int or a sequence of ints, got str 'abc'"):
        check_seeds("abc", 2)  # was "got 3 seeds for 2 sequences": the letters counted as seeds


def test_as_rng_reads_bools_inside_a_seed_sequence_as_numpy_does():
    """``[seed, gamma, bonus]`` seeds (validate_core) keep their streams; a lone bool is refused."""
    import numpy as np
    import pytest

    from spectheory._guards import as_rng

    assert as_rng([0, 0, 1, True]).random() == np.random.default_rng([0, 0, 1, 1]).random()
    with pytest.raises(TypeError, match="rng"):
        as_rng(True)

"""HuggingFace interfaces: the adapter's argument types and return shapes, model stubs, several rounds."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.testing import check_sampler, check_verifier  # noqa: E402
from spectheory.testing.adapters import hf_speculative_sampling  # noqa: E402
from spectheory.testing.hf_models import (  # noqa: E402
    HFModelStub,
    from_hf_sampler,
    hf_style_round,
    stale_context_round,
)
from spectheory.testing.toy_models import ToyModel  # noqa: E402

FEW = ["equal", "markov", "zeros"]


def _strict(candidate_input_ids, candidate_logits, candidate_length, new_logits, is_done_candidate):
    """HF's _speculative_sampling with the strict `<` (lossless), reading the flag as generate passes it."""
    assert isinstance(is_done_candidate, torch.Tensor) and is_done_candidate.dtype == torch.bool
    if is_done_candidate:  # a bool tensor of shape [1] works in `if`, as in HF's code
        raise AssertionError("the kit never stops a candidate")
    new_ids = candidate_input_ids[:, -candidate_length:]
    q = candidate_logits.softmax(dim=-1)
    p = new_logits.softmax(dim=-1)
    q_i = q[:, torch.arange(candidate_length), new_ids].squeeze(0, 1)
    p_i = p[:, torch.arange(candidate_length), new_ids].squeeze(0, 1)
    n = int(((~(torch.rand_like(p_i) < p_i / q_i)).cumsum(dim=-1) < 1).sum())
    law = torch.clamp(p[:, n] - q[:, n], min=0) if n < candidate_length else p[:, n]
    t = torch.multinomial(law / law.sum(), 1)
    return torch.cat([new_ids[:, :n], t], dim=-1), n


def test_hf_adapter_passes_tensor_flags_and_reads_three_values():
    def three(candidate_input_ids, candidate_logits, candidate_length, new_logits, is_done_candidate):
        valid, n = _strict(
            candidate_input_ids, candidate_logits, candidate_length, new_logits, is_done_candidate
        )
        return valid, torch.tensor(n), None  # a fork's (tokens, n_matches, probs)

    assert check_verifier(hf_speculative_sampling(three), n_samples=300, rng=1, families=FEW).passed

    def python_flags(candidate_input_ids, candidate_logits, candidate_length, new_logits, is_done_candidate):
        assert is_done_candidate is False
        return _strict(
            candidate_input_ids,
            candidate_logits,
            candidate_length,
            new_logits,
            torch.zeros(1, dtype=torch.bool),
        )[0]  # the tokens alone

    verify = hf_speculative_sampling(python_flags, flags="python")
    assert check_verifier(verify, n_samples=300, rng=1, families=FEW).passed
    with pytest.raises(ValueError, match="flags"):
        hf_speculative_sampling(_strict, flags="bool")


def test_hf_adapter_flags_inconsistent_n_matches_and_passes_kwargs():
    def off_by_one(candidate_input_ids, candidate_logits, candidate_length, new_logits, is_done_candidate):
        valid, n = _strict(
            candidate_input_ids, candidate_logits, candidate_length, new_logits, is_done_candidate
        )
        return valid, n + 1

    report = check_verifier(hf_speculative_sampling(off_by_one), n_samples=100, rng=2, families=FEW)
    assert report.failed[0] == "runs_without_error" and "n_matches" in str(report)

    seen = []

    def weighted(candidate_input_ids, candidate_logits, candidate_length, new_logits, weight=None):
        seen.append(weight)
        return _strict(
            candidate_input_ids, candidate_logits, candidate_length, new_logits, torch.zeros(1, dtype=bool)
        )

    check_verifier(hf_speculative_sampling(weighted, kwargs={"weight": 0.5}), n_samples=50, families=FEW)
    assert set(seen) == {0.5}


def test_model_stub_has_the_hf_call_convention():
    laws = np.random.default_rng(0).dirichlet(np.ones(3), size=(4, 3))
    stub = HFModelStub(ToyModel(laws))
    out = stub(torch.tensor([[0, 1, 2]]), attention_mask=torch.ones(1, 3), use_cache=False)
    assert out.logits.shape == (1, 3, 3) and out.logits.dtype == torch.float32 and out.past_key_values is None
    assert torch.allclose(out.logits[0, 1].exp(), torch.tensor(laws[1, 1], dtype=torch.float32))
    assert stub.calls == 1 and stub.config.vocab_size == 3
    with pytest.raises(ValueError, match="input_ids"):
        stub(torch.tensor([0, 1]))


def test_several_rounds_reach_a_stale_context_bug():
    kw = dict(n_samples=400, rng=3, families=["markov", "zeros"], gammas=(2,))
    one = check_sampler(from_hf_sampler(stale_context_round), **kw)
    assert one.passed  # the bug needs a second round
    two = check_sampler(from_hf_sampler(stale_context_round, rounds=2), **kw)
    assert {"zero_probability", "position_laws", "sequence_law"} & set(two.failed), str(two)
    ok = check_sampler(from_hf_sampler(hf_style_round, rounds=2), target_calls=1, **kw)
    assert ok.passed, str(ok)


def test_target_calls_counted_per_round_through_the_stubs():
    def two_calls(target_model, draft_model, input_ids, k):
        target_model(input_ids)  # an extra target call inside the round
        return hf_style_round(target_model, draft_model, input_ids, k)

    kw = dict(n_samples=100, rng=4, families=["equal"], gammas=(1,))
    report = check_sampler(from_hf_sampler(two_calls, rounds=2), target_calls=1, **kw)
    assert report.failed == ["target_calls"] and "2 rounds a call" in str(report)
    assert check_sampler(from_hf_sampler(two_calls, rounds=2), target_calls=2, **kw).passed

"""The floor of the decoder (issue 22): forwards alone against the whole call, and the ceilings."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.decoder.registry import TIMING_SHAPES, timing_model  # noqa: E402
from spectheory.tuning.speed import _cost_curve, measure_speed  # noqa: E402
from tests._torch_models import gpt  # noqa: E402


def test_measure_speed_reports_the_floor_consistently():
    target, draft = gpt(0, n_layer=2, n_embd=32, vocab=16), gpt(1, vocab=16)
    prompts = np.array([[1, 2, 3, 4]])
    r = measure_speed(target, draft, prompts, 12, [1, 3], repeats=2)
    assert 0.0 < r["autoregressive_overhead_fraction"] < 1.0
    for row in r["rows"]:
        # the forwards are part of the call: the floor is below the call's time, the overhead a share
        assert 0.0 < row["floor_seconds"]
        assert 0.0 < row["overhead_fraction"] < 1.0
        # a free draft can only raise the ceiling (the target's forwards are a part of the floor)
        assert row["ceiling_free_draft"] > row["ceiling"] > 0.0
        # the held-out cost model prices the run from the other runs: a positive, finite speedup
        assert 0.0 < row["predicted_cost_model"] < np.inf
        assert row["ratio_cost_model"] == pytest.approx(row["measured"] / row["predicted_cost_model"])
    curve = r["target_cost_curve"]
    assert curve[1] == pytest.approx(1.0)
    assert set(curve) >= {1, 2, 4}  # one-token calls, and gamma + 1 tokens scored (gamma = 1, 3)


def test_measure_speed_times_the_fixed_horizon_loop_when_asked(monkeypatch):
    import spectheory.decoder.speculative as spec

    seen = []
    real = spec.speculative_generate

    def spy(*a, **k):
        seen.append(k.get("check_every"))
        return real(*a, **k)

    monkeypatch.setattr(spec, "speculative_generate", spy)
    target, draft = gpt(0, n_layer=2, n_embd=32, vocab=16), gpt(1, vocab=16)
    prompts = np.array([[1, 2, 3, 4]])
    fixed = measure_speed(target, draft, prompts, 12, [3], repeats=1, check_every=2)
    assert fixed["check_every"] == 2 and seen[-1] == 2  # the timed run used the fixed loop
    default = measure_speed(target, draft, prompts, 12, [3], repeats=1)
    # the same seeds, the same per-row counts on either loop
    for key in ("target_calls", "draft_tokens", "alpha"):
        assert fixed["rows"][0][key] == default["rows"][0][key]


def test_cost_curve_is_the_median_per_token_count_over_one_token():
    calls = np.array(
        [[1, 1, 5, 1.0], [1, 1, 6, 3.0], [1, 1, 7, 2.0], [1, 4, 8, 5.0], [1, 4, 9, 7.0], [1, 9, 0, 99.0]]
    )
    # the uncached call (context 0: the prefill) is left out; medians 2.0 (m = 1) and 6.0 (m = 4)
    assert _cost_curve(calls) == {1: 1.0, 4: 3.0}


def test_timing_model_is_seeded_without_touching_the_global_stream():
    state = torch.get_rng_state()
    a, b, c = timing_model(seed=0), timing_model(seed=0), timing_model(seed=1)
    assert torch.equal(torch.get_rng_state(), state)
    assert torch.equal(a.wte.weight, b.wte.weight) and not torch.equal(a.wte.weight, c.wte.weight)
    assert (a.config.n_layer, a.config.n_head, a.config.n_embd) == TIMING_SHAPES["gpt-12x768"]
    with pytest.raises(ValueError, match="unknown timing shape"):
        timing_model("gpt-2x2")


def test_measure_speed_without_a_second_repeat_has_no_cost_model_prediction():
    target, draft = gpt(0, n_layer=1, n_embd=16, vocab=16), gpt(1, vocab=16)
    r = measure_speed(target, draft, np.array([[1, 2, 3]]), 6, [2], repeats=1)
    assert np.isnan(r["rows"][0]["predicted_cost_model"])
    assert r["rows"][0]["floor_seconds"] > 0.0

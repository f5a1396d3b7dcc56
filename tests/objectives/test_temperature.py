"""The draft temperature (docs/draft_objectives.md): tempering, the exact optimum on a chain
(never below the grid, the same temperature or 1.5), and the sweep along target paths of tiny
torch models equal to the Rao-Blackwellised predictions at the same temperature."""

import numpy as np
import pytest

import spectheory as st
from spectheory.objectives import optimal_draft_temperature, tempered, tempered_chain


def test_tempered_limits_and_errors():
    p = np.array([0.1, 0.3, 0.6])
    np.testing.assert_allclose(tempered(p, 1.0), p)
    assert tempered(p, 0.01).argmax() == 2 and tempered(p, 0.01)[2] > 0.999
    np.testing.assert_allclose(tempered(p, 1e6), np.full(3, 1 / 3), atol=1e-5)
    with pytest.raises(ValueError, match="tau"):
        tempered(p, 0.0)


def test_optimum_dominates_the_grid_and_the_defaults():
    chain = st.DecodingChain.random(4, concentration=0.4, similarity=0.4, rng=3)
    for tt in (0.7, 1.0):
        best = optimal_draft_temperature(chain, 16, 3, tt, grid=9)
        assert best.tokens_per_call >= best.grid_tokens_per_call.max() - 1e-12
        for td in (tt, 1.5):
            assert (
                best.tokens_per_call >= tempered_chain(chain, tt, td).protocol(16, 3).tokens_per_call - 1e-12
            )
    with pytest.raises(ValueError, match="bounds"):
        optimal_draft_temperature(chain, 16, 3, bounds=(2.0, 1.0))


def test_sweep_matches_rb_predictions_at_equal_temperatures():
    """At tau_d = tau_t the sweep is rb_predictions on the same target paths (same seed)."""
    pytest.importorskip("torch")
    from _torch_models import gpt

    from spectheory.objectives import temperature_sweep
    from spectheory.validation import path_statistics, repeat_prompts, sample_paths
    from spectheory.validation.predict import rb_predictions

    target, draft = gpt(1, vocab=8, scale=3.0), gpt(2, vocab=8, scale=3.0)
    prompts = np.array([[1, 2, 3], [4, 5, 6]])
    sw = temperature_sweep(target, draft, prompts, 6, 8, 5, 0.8, [0.8, 1.5], [1, 3], batch_size=4)
    paths = sample_paths(target, repeat_prompts(prompts, 8), 6, 5, batch_size=4, sampling=(0.8, None, None))
    stats = path_statistics(target, draft, paths, 3, sampling=(0.8, None, None))
    pred = rb_predictions(stats, [1, 3], [True])
    for b, g in enumerate([1, 3]):
        m, _ = pred[(g, True)]["target_calls"]
        assert abs(6 / m - sw["tokens_per_call"][0, b]) < 1e-9
    assert abs(sw["acceptance"][0] - (1 - stats.tv.mean())) < 1e-9
    assert sw["calls"].shape == (2, 2, 8)

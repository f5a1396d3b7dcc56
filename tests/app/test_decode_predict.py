"""``spectheory decode``'s along-path prediction against the decoder itself (Monte Carlo)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from spectheory.app.decode_predict import pool, predict_run  # noqa: E402
from spectheory.decoder.model import GPT, GPTConfig  # noqa: E402
from spectheory.validation.path_stats import mean_se, zscore  # noqa: E402
from spectheory.validation.predict import measure_decoder  # noqa: E402


def _tiny(seed, vocab=12):
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT(GPTConfig(vocab_size=vocab, n_layer=1, n_head=2, n_embd=16, block_size=32))
        for p in model.parameters():  # sharper laws than the initialisation's near-uniform ones
            p.data.mul_(6.0)
    return model.eval()


@pytest.mark.parametrize("bonus", [True, False])
def test_predicted_counts_agree_with_the_decoder_within_5_se(bonus):
    target, draft = _tiny(0), _tiny(1)
    prompt, T, gamma = [1, 2, 3], 8, 3
    pred = predict_run(target, draft, prompt, T, gamma, bonus, 1.0, n_paths=3000, seed=11)
    meas = measure_decoder(target, draft, np.array([prompt] * 3000), T, gamma, bonus, seed=5)
    for name in ("target_calls", "rejections", "draft_tokens"):
        m, s = mean_se(meas[name])
        z = float(zscore(*pred[name], m, s))
        assert abs(z) < 5, (name, pred[name], m, s)
    assert 0 < pred["acceptance"][0] < 1 and pred["counts"][0].shape == (gamma + 1,)


def test_pool_adds_means_and_variances():
    a = {"x": (1.0, 3.0), "v": (np.array([1.0, 2.0]), np.array([0.0, 4.0])), "paths": None}
    b = {"x": (2.0, 4.0), "v": (np.array([1.0, 1.0]), np.array([1.0, 3.0])), "paths": None}
    out = pool([a, b])
    assert out["x"] == (3.0, 5.0) and out["v"] == ([2.0, 3.0], [1.0, 5.0]) and "paths" not in out

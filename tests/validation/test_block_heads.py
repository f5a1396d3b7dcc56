"""Along-path prediction of block rounds (Medusa heads in the real decoder): the round bookkeeping
reduces to the path one when rejections do not depend on the round start, and the prediction
agrees with the decoder's measured target calls within 5 SE."""

from __future__ import annotations

import numpy as np
import pytest

from spectheory.validation.block_heads import block_round_dp
from spectheory.validation.predict import round_dp
from spectheory.validation.round_kernels import block_outcomes


@pytest.mark.parametrize("bonus", [True, False])
@pytest.mark.parametrize("gamma", [1, 3])
def test_start_independent_rejections_give_the_path_bookkeeping(gamma, bonus):
    rng = np.random.default_rng(gamma)
    path = rng.uniform(0, 0.8, size=(5, 9))
    T = path.shape[1]
    table = np.zeros((5, T, gamma))
    for t in range(T):
        for j in range(min(gamma, T - t)):
            table[:, t, j] = path[:, t + j]
    got, ref = block_round_dp(table, bonus), round_dp(path, gamma, bonus)
    for key in ("target_calls", "rejections"):
        assert np.allclose(got[key], ref[key], atol=1e-12)


def test_bad_tables_are_refused():
    with pytest.raises(ValueError, match="shape"):
        block_outcomes(np.zeros((3, 4)))
    with pytest.raises(ValueError, match="probabilities"):
        block_outcomes(np.full((1, 2, 2), 1.5))


def test_medusa_heads_prediction_matches_the_decoder_within_5_se():
    pytest.importorskip("torch")
    from spectheory.decoder import generate, load_model
    from spectheory.decoder.medusa import load_heads
    from spectheory.kinds.block import BlockRound
    from spectheory.validation.block_heads import head_reject_table
    from spectheory.validation.path_stats import mean_se, repeat_prompts, sample_paths

    target, (heads, _) = load_model("target"), load_heads()
    prompts = repeat_prompts([list(b"def main(a"), list(b"import sys")], 96)
    T, g = 12, 3
    paths = sample_paths(target, prompts, T, seed=5)
    pm, ps = mean_se(
        block_round_dp(head_reject_table(target, heads, paths, prompts.shape[1], g))["target_calls"]
    )
    res = generate(target, heads, list(prompts), T, BlockRound(gamma=g), seed=list(range(100, 196)))
    mm, ms = mean_se(np.asarray(res.stats.target_calls, dtype=np.float64))
    assert abs(pm - mm) < 5 * np.hypot(ps, ms), (pm, ps, mm, ms)
    assert pm < T - 1  # the heads do accept drafts: fewer calls than tokens

"""tune over every prompt at every batch size, the tabulated cost form, and prompt lookup's
proposal caps along paths (issue 38)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

from spectheory.cost import LinearForward, TabulatedForward  # noqa: E402
from spectheory.cost.fit_forward import fit_form  # noqa: E402
from spectheory.decoder import speculative_generate  # noqa: E402
from spectheory.decoder.prompt_lookup import PromptLookupModel  # noqa: E402
from spectheory.kinds import PathRound  # noqa: E402
from spectheory.tuning.cost_predict import PathSample, predict_time, round_law, sample_target_paths  # noqa: E402
from spectheory.tuning.cost_rounds import batch_rounds, call_prompts  # noqa: E402
from spectheory.tuning.cost_timing import DecoderTiming  # noqa: E402
from spectheory.tuning.tune_runs import measure_run  # noqa: E402
from spectheory.validation.round_kernels import path_outcomes  # noqa: E402


def _timing():
    return DecoderTiming(LinearForward(1e-3, 1e-5, 1e-7), LinearForward(1e-4, 1e-6, 0.0))


def test_batch_one_covers_every_prompt():
    """Prompt 0 always accepted, prompt 1 always rejected: batch 1 decodes both, one at a time,
    so its time is the mean of the two single-prompt predictions (each from its own sample)."""
    T, gamma = 8, 3
    reject = np.array([[0.0] * T, [1.0] * T] * 2)
    both = PathSample(2, T, np.zeros((4, 2 + T), np.int64), reject, prompt_of=np.array([0, 1, 0, 1]))
    alone = [
        PathSample(2, T, np.zeros((2, 2 + T), np.int64), reject[p::2], prompt_of=np.zeros(2, np.int64))
        for p in (0, 1)
    ]
    one = predict_time(both, PathRound(gamma), _timing(), 1)
    each = [predict_time(s, PathRound(gamma), _timing(), 1) for s in alone]
    assert one["seconds"] == pytest.approx(np.mean([e["seconds"] for e in each]))
    assert one["tokens_per_call"] == pytest.approx(T / np.mean([e["rounds"] for e in each]))
    first = predict_time(both, PathRound(gamma), _timing(), 1, all_prompts=False)
    assert first["seconds"] == pytest.approx(each[0]["seconds"])  # the old, prompt-0-only answer
    # batch 2 is one call holding both prompts: the slowest row sets the rounds
    assert predict_time(both, PathRound(gamma), _timing(), 2)["rounds"] == pytest.approx(T)


def test_call_prompts_decode_every_prompt_once_per_pass():
    for B in range(1, 8):
        for P in range(1, 6):
            calls = call_prompts(B, P)
            got = np.concatenate(calls)
            assert all(len(c) == B for c in calls)
            assert set(got.tolist()) == set(range(P))
            assert len(calls) == (1 if B >= P else -(-P // B))


def test_batch_rounds_of_given_row_prompts():
    law = np.array([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])  # prompt 0: 1 round, prompt 1: 2
    g = np.array([0, 1])
    assert batch_rounds(law, 1, groups=g, row_prompts=np.array([1]))["max"] == pytest.approx(2.0)
    assert batch_rounds(law, 1, groups=g, row_prompts=np.array([0]))["max"] == pytest.approx(1.0)
    with pytest.raises(ValueError, match="row_prompts"):
        batch_rounds(law, 2, groups=g, row_prompts=np.array([1]))


def test_measure_run_decodes_every_prompt():
    t, d = gpt(1), gpt(2, n_embd=8)
    prompts = [[1, 2, 3], [4, 5, 6], [7, 8, 9]]
    one = measure_run(t, d, prompts, 4, PathRound(2), 1)
    first = measure_run(t, d, prompts, 4, PathRound(2), 1, all_prompts=False)
    two = measure_run(t, d, prompts, 4, None, 2)
    assert one["calls"] == 3 and first["calls"] == 1 and two["calls"] == 2
    assert two["rounds"] == pytest.approx(4)  # autoregressive: one round per token
    assert one["throughput"] == pytest.approx(4 / one["seconds"])


def test_tabulated_form_follows_a_concave_curve():
    """A forward scoring m tokens at 1, 1.5, 1.7, 1.9 times one token (a CPU's curve): the
    tabulated form returns it at every width measured and between them; the linear form cannot."""
    m = np.array([1, 2, 5, 9] * 2)
    L = np.array([10] * 4 + [40] * 4)
    rel = {1: 1.0, 2: 1.5, 5: 1.7, 9: 1.9}
    t = np.array([0.01 * rel[int(w)] + 1e-5 * c for w, c in zip(m, L)])
    tab = fit_form("tabulated", np.ones(8), m, L, t)
    lin = fit_form("linear", np.ones(8), m, L, t)
    assert isinstance(tab, TabulatedForward)
    np.testing.assert_allclose([tab(1, int(w), int(c)) for w, c in zip(m, L)], t, rtol=1e-9)
    assert tab(1, 3, 10) == pytest.approx(0.01 * (1.5 + 0.2 / 3) + 1e-4)  # between 2 and 5
    lin_err = max(abs(lin(1, int(w), int(c)) / s - 1) for w, c, s in zip(m, L, t))
    assert lin_err > 0.05  # no a + b m fits 1 -> 1.5 -> 1.9


def test_tabulated_form_interpolates_between_batches():
    b = np.array([1, 1, 4, 4])
    m = np.array([1, 3, 1, 3])
    t = np.array([1.0, 2.0, 3.0, 6.0])
    f = fit_form("tabulated", b, m, np.zeros(4), t)
    assert f(2, 1, 0) == pytest.approx(1.0 + (3.0 - 1.0) / 3)
    assert f(4, 2, 0) == pytest.approx(4.5)
    with pytest.raises(ValueError, match="increasing"):
        TabulatedForward((4, 1), (1,), ((1.0,), (1.0,)), (0.0, 0.0))


def test_capped_path_outcomes_are_uncapped_ones_where_the_cap_is_large():
    r = np.random.default_rng(0).uniform(0, 0.8, (3, 9))
    full = np.minimum(3, 9 - np.arange(9))[None, :].repeat(3, 0)
    np.testing.assert_array_equal(path_outcomes(r, 3), path_outcomes(r, 3, caps=full))
    O = path_outcomes(r, 3, caps=np.zeros((3, 9), np.int64))
    assert np.all(O[:, 0, 0] == 1.0)  # every round a plain target step


def test_prompt_lookup_rounds_predicted_along_paths_match_the_decoder():
    """Prompt lookup on a tiny target: the rounds predicted along target paths (the draft's caps
    at each start, a plain target step where it has no match) against the decoder's rounds over
    independent runs, within 4 combined standard errors."""
    target = gpt(3, vocab=6, scale=3.0)
    pl = PromptLookupModel(vocab_size=6, max_ngram_size=2, num_pred_tokens=3)
    prompts = np.array([[1, 2, 3, 1, 2, 3, 1, 2], [4, 5, 4, 5, 4, 5, 4, 5]])
    T, gamma, n = 12, 3, 240
    sample = sample_target_paths(target, pl, prompts, T, n_paths=n, rng=0, trees=False)
    assert sample.caps is not None and sample.caps.max() <= 3 and (sample.caps == 0).any()
    law, _ = round_law(sample, PathRound(gamma))
    per_path = law @ np.arange(law.shape[1])
    predicted, predicted_se = per_path.mean(), per_path.std(ddof=1) / np.sqrt(n)
    rounds = []
    for i in range(n):
        res = speculative_generate(target, pl, [prompts[i % 2].tolist()], T, gamma=gamma, seed=i)
        rounds.append(float(res.stats.batch_target_calls))
    measured, measured_se = np.mean(rounds), np.std(rounds, ddof=1) / np.sqrt(n)
    z = (predicted - measured) / np.hypot(predicted_se, measured_se)
    assert abs(z) < 4, (predicted, measured, z)


def test_prompt_lookup_rounds_given_the_output_are_the_decoders_exactly():
    """Prompt lookup's proposals are a function of the text, so given the decoder's own output
    the rounds along it are certain: the capped path kernel gives exactly the decoder's count
    (this caught the decoder claiming a token fed to the draft after two plain steps in a row)."""
    from spectheory.validation.path_stats import path_statistics, proposal_caps

    target = gpt(3, vocab=6, scale=3.0)
    pl = PromptLookupModel(vocab_size=6, max_ngram_size=2, num_pred_tokens=3)
    prompt, T = [1, 2, 3, 1, 2, 3, 1, 2], 12
    for seed in range(30):
        res = speculative_generate(target, pl, [prompt], T, gamma=3, seed=seed)
        path = np.array([prompt + res.tokens[0].tolist()])
        sample = PathSample(len(prompt), T, path, path_statistics(target, pl, path, len(prompt)).reject)
        sample.caps = proposal_caps(pl, path, len(prompt))
        law, _ = round_law(sample, PathRound(3))
        assert law[0, res.stats.batch_target_calls] == pytest.approx(1.0), seed

"""ForwardLog (the decoder's own calls timed) and the held-out in-situ cost fits (cost_insitu)."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

from spectheory.cost.forward import LinearForward  # noqa: E402
from spectheory.cost.timed import ForwardLog  # noqa: E402
from spectheory.decoder import generate  # noqa: E402
from spectheory.kinds import PathRound  # noqa: E402
from spectheory.stopping import ConfidenceThreshold, PolicyRound  # noqa: E402
from spectheory.trees import DraftTree, TreeRound  # noqa: E402
from spectheory.tuning.cost_insitu import (  # noqa: E402
    KINDS,
    OUTSIDE_TERMS,
    LoggedRun,
    fit_logged_forward,
    fit_outside,
    held_out_timing,
    insitu_timing,
    measure_logged,
    predict_held_out,
)
from spectheory.tuning.cost_predict import sample_target_paths  # noqa: E402
from spectheory.tuning.cost_timing import DecoderTiming, RoundOverhead  # noqa: E402

POLICY = PolicyRound(ConfidenceThreshold(0.4, max_depth=8))

PROMPTS = [[1, 2, 3, 4], [5, 6, 7, 8]]


@pytest.fixture(scope="module")
def pair():
    return gpt(1, n_embd=16), gpt(2, n_embd=8)


@pytest.fixture(scope="module")
def hf_pair(tmp_path_factory):
    """Tiny Hugging Face models: a target that takes ``logits_to_keep``, and its draft."""
    pytest.importorskip("transformers")
    from _torch_models import tiny_hf_pair

    return tiny_hf_pair(tmp_path_factory.mktemp("hf"))


@pytest.mark.parametrize(
    "rnd",
    [
        PathRound(3),
        TreeRound(DraftTree.from_branching([2, 1])),
        PolicyRound(ConfidenceThreshold(0.3, max_depth=3)),
    ],
    ids=["path", "tree", "policy"],
)
def test_log_counts_the_decoder_calls_and_changes_nothing(pair, rnd):
    target, draft = pair
    plain = generate(target, draft, PROMPTS, 8, rnd, seed=3)
    with ForwardLog(target) as lt, ForwardLog(draft) as ld:
        logged = generate(target, draft, PROMPTS, 8, rnd, seed=3)
    assert [list(r) for r in logged.tokens] == [list(r) for r in plain.tokens]  # hooks change nothing
    s = logged.stats
    t, d = lt.calls, ld.calls
    assert (t[:, 2] == 0).sum() == 1 and (d[:, 2] == 0).sum() == 1  # one prefill each
    assert (t[:, 2] > 0).sum() == s.batch_target_calls  # one target call per round (trees too)
    assert (d[:, 2] > 0).sum() == s.batch_draft_calls
    assert (t[:, 0] == 2).all() and t[:, 3].sum() + d[:, 3].sum() <= s.time_total
    assert len(ForwardLog(target).calls) == 0 and "forward" not in vars(target)  # wrapper removed


def test_nested_logs_on_one_model_both_count_and_unwind(pair):
    target = pair[0]
    ids, start = torch.tensor([[1, 2], [3, 4]]), torch.tensor([0, 0])
    cache = target.new_cache(2, 8)
    with ForwardLog(target) as outer:
        with ForwardLog(target) as inner:
            target(ids, cache=cache, start=start)
        target(ids[:, :1], cache=cache, start=start + 2)
    assert len(inner.calls) == 1 and len(outer.calls) == 2
    assert "forward" not in vars(target)


def test_log_refuses_what_it_cannot_hook(pair):
    with pytest.raises(ValueError, match="torch.nn.Module"):
        ForwardLog(lambda ids: ids)
    log = ForwardLog(pair[0])
    with log, pytest.raises(RuntimeError, match="already active"):
        log.__enter__()


def _calls(batch, widths, contexts, alpha, c, prefill=None):
    rows = [(batch, m, L, alpha[m] + c * L) for m in widths for L in contexts]
    if prefill:
        rows.append((batch, prefill[0], 0, prefill[1]))
    return np.array(rows, dtype=float)


def test_logged_forward_recovers_intercepts_slope_and_prefill():
    alpha = {1: 0.010, 2: 0.012, 5: 0.020}
    f = fit_logged_forward(_calls(4, [1, 2, 5], [10, 30, 50], alpha, 2e-5, prefill=(31, 0.3)), 4)
    assert f(4, 2, 40) == pytest.approx(alpha[2] + 2e-5 * 40, rel=1e-9)
    assert f(4, 3, 0.0 + 1) == pytest.approx(0.012 + (0.020 - 0.012) / 3 + 2e-5, rel=1e-9)  # interpolated
    assert f(4, 7, 10) == pytest.approx(0.020 + 2 * (0.008 / 3) + 2e-4, rel=1e-9)  # extrapolated
    assert f(4, 31, 0) == pytest.approx(0.3)
    # a prefill one token wider or narrower (the target's and the draft's), in proportion
    assert f(4, 32, 0) == pytest.approx(0.3 * 32 / 31) and f(4, 30, 0) == pytest.approx(0.3 * 30 / 31)
    assert f(4, 33, 0) == pytest.approx(0.020 + 28 * (0.008 / 3))  # further: the cached formula
    with pytest.raises(ValueError, match="batch 4 only"):
        f(8, 1, 10)
    with pytest.raises(ValueError, match="no cached call"):
        fit_logged_forward(_calls(4, [1], [10], alpha, 0.0), 2)


def _run(kind, rounds, steps, width, coef, config=None, repeat=0, batch=1):
    """A LoggedRun whose outside-the-forwards time follows ``coef`` exactly."""
    target = np.array([[batch, 32, 0, 0.1]] + [[batch, width, 40, 0.01]] * rounds)  # the whole prompt
    draft = (
        np.array([[batch, 31, 0, 0.05]] + [[batch, 1, 40, 0.002]] * steps)
        if kind != "autoregressive"
        else np.zeros((0, 4))
    )
    run = LoggedRun(config or f"{kind}{width}", kind, batch, repeat, 0.0, target, draft)
    seconds = float(run.features() @ coef) + target[:, 3].sum() + draft[:, 3].sum()
    return LoggedRun(run.config, kind, batch, repeat, seconds, target, draft)


COEF = np.array([0.01, 0.02, 1e-3, 2e-3, 3e-3, 4e-3, 1e-4, 2e-4, 3e-4, 5e-5])


def _grid_runs(coef):
    return [
        _run("autoregressive", 16, 0, 1, coef),
        _run("autoregressive", 24, 0, 1, coef, config="ar2"),
        *[_run("path", r, r * g, g + 1, coef) for r, g in ((10, 2), (6, 5), (8, 3))],
        *[_run("policy", r, s, 4, coef) for r, s in ((9, 20), (7, 30))],
        *[_run("tree", r, 3 * r, 7, coef) for r in (8, 11)],  # 2x1x1: 7 nodes, 3 draft calls a round
        *[_run("tree", r, 3 * r, 11, coef, config="tree11") for r in (6, 9)],  # 2x2x1: 11 nodes
        *[_run("tree", r, 2 * r, 7, coef, config="tree22") for r in (5, 7)],  # 2x2: 7 nodes, 2 levels
    ]


def test_outside_fit_recovers_every_term():
    assert len(COEF) == len(OUTSIDE_TERMS)
    got = fit_outside(_grid_runs(COEF))
    assert got == pytest.approx(COEF, rel=1e-6, abs=1e-12)
    with pytest.raises(ValueError, match="nothing to fit"):
        fit_outside([])
    with pytest.raises(ValueError, match="kind"):
        LoggedRun("x", "beam", 1, 0, 1.0, np.zeros((0, 4)), np.zeros((0, 4)))


def test_insitu_timing_assembles_forwards_and_outside():
    runs = _grid_runs(COEF)
    t = insitu_timing(runs, runs, 1)
    q_ar, q_spec, a_ar, a_path, a_pol, a_tree, s_path, s_pol, s_tree, per_token = COEF
    # a path round of depth 2: two draft calls, a target call scoring 3, their outside work
    want = t.draft(1, 2, 40) + t.draft(1, 1, 40) + 2 * s_path + t.target(1, 3, 40) + a_path + 3 * per_token
    assert t.round_seconds(PathRound(2), 1, 2, 40) == pytest.approx(want, rel=1e-6)
    assert t.round_seconds(POLICY, 1, 2, 40) == pytest.approx(want - 2 * (s_path - s_pol) - (a_path - a_pol))
    assert t.autoregressive_seconds(1, 40) == pytest.approx(0.01 + a_ar + per_token, rel=1e-6)
    assert t.target(1, 3, 40) == pytest.approx(0.01) and t.draft(1, 1, 40) == pytest.approx(0.002)
    assert t.prefill_seconds(1, 32) == pytest.approx(0.15 + q_spec, rel=1e-6)
    assert t.prefill_seconds(1, 32, speculative=False) == pytest.approx(0.1 + q_ar, rel=1e-6)


def test_decoder_timing_step_and_call_terms():
    t = DecoderTiming(
        LinearForward(1e-3),
        LinearForward(1e-4),
        {"path": RoundOverhead(1e-5)},
        step={"path": 2e-5},
        call=(0.1, 0.2),
    )
    assert t.round_seconds(PathRound(2), 1, 3, 0) == pytest.approx(1e-3 + 3 * 1e-4 + 3 * 2e-5 + 1e-5)
    assert t.round_seconds(POLICY, 1, 3, 0) == pytest.approx(
        t.round_seconds(PathRound(2), 1, 3, 0)
    )  # falls back
    # a 1-token prompt: the target's prefill feeds it (the first token's law), the draft nothing
    assert t.prefill_seconds(1, 1) == pytest.approx(0.2 + 1e-3)
    assert t.prefill_seconds(1, 1, speculative=False) == pytest.approx(0.1 + 1e-3)
    flat = DecoderTiming(LinearForward(1e-3), LinearForward(1e-4), step=1e-5)
    tree = DraftTree.from_branching([2, 2])
    assert flat.round_seconds(TreeRound(tree), 1, 2, 0) == pytest.approx(1e-3 + 2e-4 + 2e-5)


def test_held_out_prediction_on_real_runs(pair):
    target, draft = pair
    rounds = [None, PathRound(1), PathRound(3), TreeRound(DraftTree.from_branching([2, 1]))]
    runs = [
        (r, measure_logged(target, draft, PROMPTS, 6, r, B, rep, seed=rep)[0])
        for rep in range(2)
        for B in (1, 2)
        for r in rounds
    ]
    sample = sample_target_paths(target, draft, PROMPTS, 6, 8, rng=0)
    logged = [run for _, run in runs]
    for r, run in runs:
        p = predict_held_out(sample, r, run, logged)
        assert np.isfinite(p["throughput"]) and p["throughput"] > 0
    lone = [runs[0][1]]
    with pytest.raises(ValueError, match="no other configuration"):
        predict_held_out(sample, None, lone[0], lone)


def test_held_out_timing_takes_unseen_token_counts_from_other_repeats():
    """Autoregressive decoding is the only configuration scoring one token per call: its one-token
    cost comes from its own other repeats, never from its own run or by extrapolation."""

    def run(config, kind, repeat, width, seconds, steps=0):
        target = np.array([[1, 31, 0, 0.1]] + [[1, width, 40, seconds]] * 8)
        draft = np.array([[1, 31, 0, 0.05]] + [[1, 1, 40, 0.002]] * steps) if steps else np.zeros((0, 4))
        return LoggedRun(config, kind, 1, repeat, 1.0, target, draft)

    runs = [
        run("autoregressive", "autoregressive", 0, 1, 0.004),
        run("autoregressive", "autoregressive", 1, 1, 0.006),  # the run predicted below
        run("gamma=1", "path", 0, 2, 0.010, steps=8),
        run("gamma=1", "path", 1, 2, 0.010, steps=8),
        run("gamma=2", "path", 1, 3, 0.012, steps=16),
    ]
    t = held_out_timing(runs[1], runs)
    assert t.target(1, 1, 40) == pytest.approx(0.004)  # repeat 0's autoregressive calls, not 0.006
    assert t.target(1, 2, 40) == pytest.approx(0.010) and t.target(1, 3, 40) == pytest.approx(0.012)
    # gamma=2 has no other repeat: its three-token calls are extrapolated from repeat 1's one- and
    # two-token calls (0.006, 0.010)
    assert held_out_timing(runs[4], runs).target(1, 3, 40) == pytest.approx(0.014)


def test_merged_first_call_is_a_round_priced_by_the_other_merged_calls(hf_pair):
    """A target that takes ``logits_to_keep`` scores its prompt with a path round's first drafts:
    measure_logged marks the run, its one uncached target call counts as a round (rounds = the
    decoder's target calls), the uncached table holds the prefill of the prompt and the merged
    calls' wider widths, and the timing prices a merged decode's first call from that table."""
    target, draft = hf_pair
    prompts = [[1, 2, 3, 4, 5], [6, 7, 8, 9, 10]]
    runs = {}
    for rnd in (None, PathRound(3), PolicyRound(ConfidenceThreshold(0.3, max_depth=3))):
        run, out = measure_logged(target, draft, prompts, 6, rnd, 2, seed=0)
        runs[run.kind] = run
        assert run.merged_first == (rnd is not None)
        assert (run.target[:, 2] == 0).sum() == 1  # one uncached call: a prefill, or the merged round
        rounds = (run.target[:, 2] > 0).sum() + run.merged_first
        if rnd is not None:
            assert rounds == out["rounds"] == run.features()[2 + KINDS.index(run.kind)]
    path = runs["path"]
    assert path.target[path.target[:, 2] == 0, 1][0] > len(prompts[0])  # the prompt and its drafts
    t = insitu_timing(list(runs.values()), list(runs.values()), 2)
    widths = sorted({float(r.target[r.target[:, 2] == 0, 1][0]) for r in runs.values()})
    assert [w for w, _ in t.target.prefill] == widths and widths[0] == len(prompts[0])
    assert t.prompt_in_first_call
    # a merged call two tokens wider than any logged: on the line through the last two widths
    (wa, sa), (wb, sb) = t.target.prefill[-2], t.target.prefill[-1]
    line = sb + (sb - sa) / (wb - wa) * 2
    assert t.target(2, wb + 2, 0) == pytest.approx(max(line, 0.0))
    # without a merged run (autoregressive alone) the timing prefills apart
    ar = runs["autoregressive"]
    assert not insitu_timing([ar], [ar], 2).prompt_in_first_call


def test_insitu_refuses_a_target_whose_tree_calls_bypass_its_forward(hf_pair):
    """The Hugging Face adapter scores trees in its own ``tree_logits``, which the forward log
    cannot see: measure_logged says so instead of fitting a log that lacks the rounds."""
    target, draft = hf_pair
    with pytest.raises(ValueError, match="tree_logits bypasses forward"):
        measure_logged(target, draft, [[1, 2, 3]], 4, TreeRound(DraftTree.from_branching([2])), 1)

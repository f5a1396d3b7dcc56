"""Rounds law given paths, predicted time and throughput, and spectheory.tuning.tuner."""

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _torch_models import gpt  # noqa: E402

from spectheory.cost import LinearForward  # noqa: E402
from spectheory.kinds import PathRound  # noqa: E402
from spectheory.stopping import ConfidenceThreshold, HFSchedule, PolicyRound  # noqa: E402
from spectheory.stopping.along_paths import policy_round_dp  # noqa: E402
from spectheory.trees import DraftTree, TreeRound  # noqa: E402
from spectheory.tuning.cost_predict import PathSample, predict_time, sample_target_paths  # noqa: E402
from spectheory.tuning.cost_rounds import batch_depth_law, batch_rounds, rounds_law  # noqa: E402
from spectheory.tuning.cost_timing import DecoderTiming  # noqa: E402
from spectheory.tuning.tuner import TuneResult, tune  # noqa: E402
from spectheory.validation.predict import round_dp  # noqa: E402
from spectheory.validation.round_kernels import path_kernel, policy_kernel, tree_kernel  # noqa: E402
from spectheory.validation.tree_decoding import by_depth, tree_round_dp  # noqa: E402

RNG = np.random.default_rng(7)
REJECT = RNG.uniform(0, 0.7, (6, 14))


@pytest.mark.parametrize("gamma, bonus", [(1, True), (3, True), (3, False), (5, True)])
def test_rounds_law_mean_is_round_dp(gamma, bonus):
    law, visits = rounds_law(path_kernel(REJECT, gamma, bonus))
    np.testing.assert_allclose(law.sum(1), 1.0, atol=1e-12)
    np.testing.assert_allclose(
        law @ np.arange(law.shape[1]), round_dp(REJECT, gamma, bonus)["target_calls"], atol=1e-12
    )
    np.testing.assert_allclose(visits.sum((1, 2)), law @ np.arange(law.shape[1]), atol=1e-12)


@pytest.mark.parametrize("policy", [ConfidenceThreshold(0.5, max_depth=5), HFSchedule(2, max_depth=5)])
def test_rounds_law_mean_is_policy_round_dp(policy):
    top = RNG.uniform(0, 1, REJECT.shape)
    J, m0 = policy_kernel({"reject": REJECT, "top": top}, policy)
    law, _ = rounds_law(J, m0)
    expected = policy_round_dp(REJECT, policy, top=top)["target_calls"]
    np.testing.assert_allclose(law @ np.arange(law.shape[1]), expected, atol=1e-12)


def test_rounds_law_mean_is_tree_round_dp():
    tree = DraftTree.from_branching([2, 1])
    N, T = REJECT.shape
    a = RNG.uniform(0, 0.5, (2, N, T))  # slot acceptances, summing below 1 with the residual
    res = 1 - a.sum(0)
    one = (1 - REJECT)[None]
    tables = {2: by_depth(a, res, tree.max_depth), 1: by_depth(one, REJECT, tree.max_depth)}
    law, _ = rounds_law(tree_kernel(tree, tables, T))
    np.testing.assert_allclose(
        law @ np.arange(law.shape[1]), tree_round_dp(tree, tables, T)["target_calls"], atol=1e-12
    )


def test_batch_rounds_against_simulated_batches():
    """E[max_b R_b] over 4 rows (random path each, Bernoulli checks along it) within 5 SE."""
    gamma, B, n = 2, 4, 4000
    law, _ = rounds_law(path_kernel(REJECT, gamma))
    pred = batch_rounds(law, B, rng=0)
    rng = np.random.default_rng(1)
    N, T = REJECT.shape

    def rounds(r):
        n_, calls = 0, 0
        while n_ < T:
            calls += 1
            k = min(gamma, T - n_)
            j = next((i for i in range(k) if rng.random() < r[n_ + i]), None)
            n_ = n_ + j + 1 if j is not None else n_ + k + (1 if n_ + k < T else 0)
        return calls

    maxima = np.array([max(rounds(REJECT[rng.integers(N)]) for _ in range(B)) for _ in range(n)])
    se = maxima.std(ddof=1) / np.sqrt(n)
    assert abs(maxima.mean() - pred["max"]) < 5 * se + 1e-9
    one = batch_rounds(law, 1)
    assert one["max"] == pytest.approx(one["mean"]) and one["min"] == pytest.approx(one["mean"])
    assert pred["min"] <= pred["mean"] <= pred["max"]


def _timing():
    return DecoderTiming(LinearForward(1e-3, 1e-5, 1e-7), LinearForward(1e-4, 1e-6, 0.0))


def test_predict_time_when_every_draft_is_accepted():
    """Draft = target: no rejection; T = 10, gamma = 3: rounds drafting 3, 3 and 2 tokens."""
    T, L0, gamma, B = 10, 4, 3, 1
    sample = PathSample(L0, T, np.zeros((5, L0 + T), np.int64), np.zeros((5, T)))
    timing = _timing()
    p = predict_time(sample, PathRound(gamma), timing, B)
    assert p["rounds"] == pytest.approx(3) and p["tokens_per_call"] == pytest.approx(T / 3)
    assert p["context"] == pytest.approx(L0 + T / 2)
    rounds = [timing.round_seconds(PathRound(gamma), B, k, L0 + T / 2) for k in (3, 3, 2)]
    assert p["seconds"] == pytest.approx(timing.prefill_seconds(B, L0) + sum(rounds))
    assert p["throughput"] == pytest.approx(B * T / p["seconds"])
    k2 = timing.draft(B, 2, 9.0) + timing.draft(B, 1, 9.0) + timing.target(B, 3, 9.0)
    assert rounds[-1] == pytest.approx(k2)
    ar = predict_time(sample, None, timing, 4)
    # T tokens, T - 1 forwards after the prefill (its forward gives the first token's law)
    assert ar["seconds"] == pytest.approx(
        timing.prefill_seconds(4, L0, False) + (T - 1) * timing.target(4, 1, L0 + T / 2)
    )
    assert timing.prefill_seconds(4, L0, False) == pytest.approx(timing.target(4, L0, 0))
    # 64 rows in lockstep: every row's last round has 2 tokens left, so the batch's last round
    # drafts 2, not the largest of 64 independent round depths (3 nearly always)
    big = predict_time(sample, PathRound(gamma), timing, 64)
    assert big["depth"] == pytest.approx(8 / 3) and big["rounds"] == pytest.approx(3)
    rounds64 = [timing.round_seconds(PathRound(gamma), 64, k, L0 + T / 2) for k in (3, 3, 2)]
    assert big["seconds"] == pytest.approx(timing.prefill_seconds(64, L0) + sum(rounds64))


def test_predictions_are_for_the_batch_own_prompts():
    """Rows cycle through the prompts: prompt 0 always accepted, prompt 1 always rejected."""
    T, gamma = 8, 3
    reject = np.array([[0.0] * T, [1.0] * T] * 2)
    sample = PathSample(2, T, np.zeros((4, 2 + T), np.int64), reject, prompt_of=np.array([0, 1, 0, 1]))
    one = predict_time(sample, PathRound(gamma), _timing(), 1)
    two = predict_time(sample, PathRound(gamma), _timing(), 2)
    # batch 1 decodes each prompt on its own: 2 rounds for prompt 0, 8 for prompt 1
    assert one["rounds"] == pytest.approx(5) and one["tokens_per_call"] == pytest.approx(T / 5)
    assert two["rounds"] == pytest.approx(T)  # the slowest row: one token per round
    assert two["tokens_per_call"] == pytest.approx(T / ((2 + T) / 2))


def test_cost_model_of_a_timing():
    t = DecoderTiming(LinearForward(1e-3, 1e-5), LinearForward(1e-4), {"path": LinearForward(2e-4, 1e-6)})
    model = t.cost_model(8, depth=3)
    assert model.overhead == pytest.approx(2e-4 + 1e-6 * 8 * 4)
    assert model.at(batch=8).target_call(3) == pytest.approx(t.target(8, 4, 0) + model.overhead)


def test_prefill_of_a_target_that_scores_its_prompt_with_the_first_drafts():
    """With ``prompt_in_first_call``, a path or policy round's decode makes one target call of
    the prompt and the first drafts in place of a prefill and that round's call (the decoder's
    PathStep at a logits_to_keep target); a tree round still prefills apart."""
    from dataclasses import replace

    t = _timing()
    merged = replace(t, prompt_in_first_call=True)
    B, L0, K = 2, 12, 3
    apart = t.prefill_seconds(B, L0, rnd=PathRound(K))
    assert apart == pytest.approx(t.target(B, L0, 0) + t.draft(B, L0 - 1, 0))
    got = merged.prefill_seconds(B, L0, rnd=PathRound(K))
    assert got == pytest.approx(t.target(B, L0 + K, 0) - t.target(B, K + 1, L0) + t.draft(B, L0 - 1, 0))
    assert got < apart  # one call's fixed cost fewer
    # a fractional first depth interpolates between the calls around it
    half = merged.prefill_seconds(B, L0, rnd=PathRound(K), depth=2.5)
    lo, hi = (merged.prefill_seconds(B, L0, rnd=PathRound(K), depth=d) for d in (2, 3))
    assert half == pytest.approx((lo + hi) / 2)
    policy = PolicyRound(ConfidenceThreshold(0.5, max_depth=K))
    assert merged.prefill_seconds(B, L0, rnd=policy, depth=K) == pytest.approx(got)
    tree = TreeRound(DraftTree.from_branching([2, 2]))
    assert merged.prefill_seconds(B, L0, rnd=tree) == merged.prefill_seconds(B, L0) == apart
    assert merged.prefill_seconds(B, L0, speculative=False, rnd=PathRound(K)) == t.prefill_seconds(
        B, L0, speculative=False
    )


def test_round_seconds_of_a_tree_counts_levels():
    tree = DraftTree.from_branching([2, 2])  # levels of 2 and 4 nodes, 7 with the root
    t = _timing()
    got = t.round_seconds(TreeRound(tree), 3, 2, 10.0)
    assert got == pytest.approx(t.draft(3, 2, 10.0) + t.draft(3, 2, 10.0) + t.target(3, 7, 10.0))
    # one level: the root call and a target call over the root and its 2 children
    assert t.round_seconds(TreeRound(tree), 3, 1, 10.0) == pytest.approx(
        t.draft(3, 2, 10.0) + t.target(3, 3, 10.0)
    )


@pytest.fixture(scope="module")
def small_tune():
    t, d = gpt(1, n_embd=16), gpt(2, n_embd=8)
    res = tune(
        t,
        d,
        [[1, 2, 3, 4], [5, 6, 7, 8]],
        batches=(1, 2),
        gammas=(1, 2),
        trees=((2, 1),),
        policies=(ConfidenceThreshold(0.3, max_depth=3),),
        n_paths=8,
        horizon=6,
        fit_repeats=1,
        rng=0,
    )
    return t, d, res


def test_tune_ranks_every_configuration(small_tune):
    _, _, res = small_tune
    assert isinstance(res, TuneResult)
    labels = {r["config"] for r in res.rows}
    assert labels == {
        "autoregressive",
        "gamma=1",
        "gamma=2",
        "tree 2x1",
        "policy ConfidenceThreshold(0.3, top)",
    }
    for B in (1, 2):
        ranked = res.ranked(B)
        assert [r["throughput"] for r in ranked] == sorted((r["throughput"] for r in ranked), reverse=True)
        assert res.best(B) is ranked[0]
    table = res.table()
    assert "batch 2" in table and "tree 2x1" in table
    with pytest.raises(ValueError, match="batch"):
        res.ranked(64)


def test_tune_verify_and_plot(small_tune, tmp_path):
    t, d, res = small_tune
    rows = res.verify(t, d, top=1, repeats=1)
    assert {r["batch"] for r in rows} == {1, 2} and all(r["measured"] > 0 for r in rows)
    assert "verified" in res.table()
    checks = res.top_checks()  # one repeat: infinite noise, so every top is within it
    assert [c["batch"] for c in checks] == [1, 2] and all(c["within_noise"] for c in checks)
    assert all(c["top_ranked"] == res.best(c["batch"])["config"] for c in checks)
    assert "top-ranked" in res.table() and res.to_dict()["top_checks"] == checks
    res.verified = [  # two configurations measured apart far beyond their noise
        {
            "batch": 1,
            "config": res.best(1)["config"],
            "predicted": 90.0,
            "measured": 100.0,
            "measured_se": 1.0,
        },
        {"batch": 1, "config": "other", "predicted": 90.0, "measured": 150.0, "measured_se": 1.0},
    ]
    (c,) = res.top_checks()
    assert not c["within_noise"] and c["best_measured"] == "other" and c["gap"] == 50.0
    assert "gap 50 tokens/s" in res.table()
    res.verified = [  # a CPU's rates: three significant digits, not rounded to whole tokens/s
        {"batch": 1, "config": res.best(1)["config"], "predicted": 2.43, "measured": 2.2, "measured_se": 0.1}
    ]
    assert "2.43" in res.table() and " 2.2 " in res.table()
    res.verified = []
    files = res.plot(str(tmp_path / "tune.png"))
    assert all((tmp_path / f).exists() for f in ("tune.png", "tune.pdf")) and len(files) == 2


def test_tune_on_a_random_hugging_face_pair(tmp_path):
    transformers = pytest.importorskip("transformers")
    from spectheory.decoder.hf import HFCausalLM

    folders = []
    for seed, width in ((0, 32), (1, 16)):
        config = transformers.GPT2Config(n_layer=1, n_embd=width, n_head=2, vocab_size=40, n_positions=64)
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            transformers.GPT2LMHeadModel(config).save_pretrained(tmp_path / str(seed))
        folders.append(str(tmp_path / str(seed)))
    t, d = (HFCausalLM.from_pretrained(f) for f in folders)
    res = tune(
        t, d, [[1, 2, 3]], gammas=(2,), trees=(), policies=(), n_paths=4, horizon=5, fit_repeats=1, rng=0
    )
    assert {r["config"] for r in res.rows} == {"autoregressive", "gamma=2"}
    assert all(r["throughput"] > 0 for r in res.rows)


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"batches": ()}, "batches"),
        ({"prompts": [1, 2, 3]}, "prompts"),
        ({"gammas": (), "trees": (), "policies": ()}, "nothing to tune"),
        ({"device": "tpu"}, "device"),
        ({"gammas": (0,)}, "gammas"),
    ],
)
def test_tune_bad_input(kwargs, word):
    args = {"prompts": [[1, 2]], "gammas": (1,), "trees": (), "policies": (), "n_paths": 2, "horizon": 3}
    with pytest.raises(ValueError, match=word):
        tune(gpt(0), gpt(1), **{**args, **kwargs})


def test_sample_needs_laws_for_trees_and_draft_paths_for_policies():
    t, d = gpt(1), gpt(2)
    s = sample_target_paths(t, d, [[1, 2]], 4, 4, rng=0, trees=False)
    with pytest.raises(ValueError, match="trees"):
        predict_time(s, TreeRound(DraftTree.from_branching([2])), _timing(), 1)
    with pytest.raises(ValueError, match="policies"):
        predict_time(s, PolicyRound(ConfidenceThreshold(0.3, max_depth=2)), _timing(), 1)


def test_batch_depth_law_of_one_row_is_the_visit_weighted_depth():
    """B = 1: the batch's depth law is the row's own depth law over its rounds (rounds_law's
    visits), here by simulation on 40000 rows, within 5 standard errors of a frequency."""
    rng = np.random.default_rng(3)
    reject = rng.uniform(0.1, 0.6, size=(6, 12))
    J = path_kernel(reject, 4)
    law, visits = rounds_law(J)
    T = reject.shape[1]
    exact = np.bincount(np.minimum(4, T - np.arange(T)), weights=visits.sum((0, 2)), minlength=5)
    exact = exact / exact.sum()
    n_rounds = 40000 * float((law @ np.arange(law.shape[1])).mean())
    got = batch_depth_law(J, 1, 4, rng=1, rows=40000)
    se = np.sqrt(exact * (1 - exact) / n_rounds)
    assert np.all(np.abs(got - exact) <= 5 * se + 1e-12)


def test_batch_depth_law_is_below_independent_maxima():
    """The largest depth over the rows still generating is at most the largest of B independent
    round depths (and equal at B = 1), and it never exceeds gamma."""
    rng = np.random.default_rng(4)
    reject = rng.uniform(0.2, 0.5, size=(8, 16))
    J = path_kernel(reject, 4)
    _, visits = rounds_law(J)
    T = reject.shape[1]
    row = np.bincount(np.minimum(4, T - np.arange(T)), weights=visits.sum((0, 2)), minlength=5)
    F = np.cumsum(row / row.sum())
    for B in (4, 16):
        indep = np.diff(np.concatenate([[0.0], F**B])) @ np.arange(5)
        got = batch_depth_law(J, B, 4, rng=0, rows=4096) @ np.arange(5)
        assert got <= indep + 1e-9 and got <= 4
    drafted = np.array([0.0, 0.5, 0.3, 0.2])  # a policy drafting 1-3 tokens
    law = batch_depth_law(J, 8, drafted, rng=0, rows=2048)
    assert law.shape == (4,) and law[0] == 0 and law.sum() == pytest.approx(1)

"""check_metrics and the exact per-request laws: exact against Monte Carlo (st.simulate) at 5 SE,
exact against independent exact engines, and the definition named from counters produced by
computing each definition on simulated runs."""

import numpy as np
import pytest

import spectheory as st
from spectheory.exact.expectations import target_calls_law
from spectheory.testing.metric_laws import alarm_threshold, false_alarm_rate, request_law
from spectheory.testing.metrics import RequestCounters, check_metrics

N_SE = 5.0
CHAIN = st.DecodingChain.random(3, rng=1)
T, G, R = 8, 3, 3000


@pytest.fixture(scope="module")
def run():
    return RequestCounters.from_simulation(st.simulate(CHAIN, T, G, n_runs=R, rng=0))


# what an engine computes, written out here apart from the module's definitions
def _hist_beyond(h, i):
    return h[:, i + 1 :].sum(1)


ENGINE = {
    "pooled": ("acceptance_length", lambda c: c.emitted.sum() / c.steps.sum()),
    "pooled_plus_one": ("acceptance_length", lambda c: 1 + c.accepted.sum() / c.steps.sum()),
    "mean_of_request_means": ("acceptance_length", lambda c: np.mean(1 + c.accepted / c.steps)),
    "mean_of_request_means_emitted": ("acceptance_length", lambda c: np.mean(c.emitted / c.steps)),
    "per_drafted": ("acceptance_rate", lambda c: c.accepted.sum() / c.drafted.sum()),
    "per_step_gamma": ("acceptance_rate", lambda c: c.accepted.sum() / (G * c.steps.sum())),
    "per_step_gamma_plus_one": ("acceptance_rate", lambda c: c.accepted.sum() / ((G + 1) * c.steps.sum())),
    "per_step_draft_tokens": ("acceptance_rate", lambda c: c.accepted.sum() / (7 * c.steps.sum())),
    "mean_of_request_rates": ("acceptance_rate", lambda c: np.mean(c.accepted / (G * c.steps))),
    "per_position_per_step": (
        "per_position",
        lambda c: [_hist_beyond(c.histograms, i).sum() / c.steps.sum() for i in range(G)],
    ),
    "per_position_conditional": (
        "per_position",
        lambda c: [
            _hist_beyond(c.histograms, i).sum() / _hist_beyond(c.histograms, i - 1).sum() for i in range(G)
        ],
    ),
}


@pytest.mark.parametrize("verifier", ["token", "block"])
def test_every_definition_on_a_simulated_run_lies_within_5_se_of_its_exact_value(verifier):
    res = st.simulate(CHAIN, T, G, n_runs=R, rng=1, verifier=verifier)
    report = check_metrics(
        CHAIN, G, T, counters=RequestCounters.from_simulation(res), verifier=verifier, draft_tokens_per_step=7
    )
    assert len(report.rows) == len(ENGINE)
    for row in report.rows:
        assert np.all(np.abs(row.z) <= N_SE), str(row)
        if row.exact_se is not None:  # the exact SE and the counters' estimate agree to 15%
            assert np.allclose(row.exact_se, row.run_se, rtol=0.15), str(row)
    assert report.passed, str(report)


@pytest.mark.parametrize("name", sorted(ENGINE))
def test_the_definition_an_engine_computed_is_named(run, name):
    metric, formula = ENGINE[name]
    value = formula(run)
    report = check_metrics(CHAIN, G, T, counters=run, reported={metric: value}, draft_tokens_per_step=7)
    assert report.named[metric] == [name], report.verdicts
    assert report.passed
    assert f"your {metric!r}" in report.verdicts[0] and f"matches {name} " in report.verdicts[0]


@pytest.mark.parametrize("name", ["pooled", "mean_of_request_means", "mean_of_request_rates"])
def test_without_counters_the_exact_value_and_its_se_name_the_definition(run, name):
    metric, formula = ENGINE[name]
    report = check_metrics(CHAIN, G, T, reported={metric: round(float(formula(run)), 3)}, n_requests=R)
    assert report.named[metric] == [name], report.verdicts


def test_a_wrong_sampler_fails_the_exact_values():
    res = st.simulate(CHAIN, T, G, n_runs=R, rng=2, verifier="block")  # accepts more than token verification
    report = check_metrics(CHAIN, G, T, counters=RequestCounters.from_simulation(res), verifier="token")
    assert not report.passed
    assert not report["pooled"].passed and "FAIL" in str(report["pooled"])
    assert "disagree with their exact values" in str(report)


def test_a_number_no_definition_gives_is_reported(run):
    report = check_metrics(CHAIN, G, T, counters=run, reported={"acceptance_length": 9.5})
    assert report.named["acceptance_length"] == [] and not report.passed
    assert "matches no known definition" in report.verdicts[0]


@pytest.mark.parametrize("verifier", ["token", "block"])
def test_request_law_agrees_with_the_protocol_and_the_calls_law(verifier):
    chain = st.DecodingChain.random(3, rng=4)
    law = request_law(chain, 3, horizon=20, verifier=verifier)
    res = chain.protocol(20, 3, verifier=verifier)
    assert law.prob.sum() == pytest.approx(1.0, abs=1e-12)
    assert law.prob.sum(1) @ np.arange(21) == pytest.approx(res.target_calls, abs=1e-10)
    assert law.prob.sum(0) @ np.arange(21) == pytest.approx(res.accepted, abs=1e-10)
    if verifier == "token":
        assert np.allclose(law.prob.sum(1), target_calls_law(chain, 20, 3), atol=1e-12)
        assert law.mean("tokens_per_step") == pytest.approx(
            chain.expected_tokens_per_call(20, 3, per_generation=True), abs=1e-10
        )


def test_request_of_n_rounds_is_the_convolution_of_round_laws():
    iid = st.DecodingChain.iid([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])
    one = iid.accepted_count_law(10, 3, per_state=True)[0]
    conv = one
    for _ in range(3):
        conv = np.convolve(conv, one)
    law = request_law(iid, 3, rounds=4)
    assert np.allclose(law.prob[4], conv, atol=1e-14)
    markov = st.DecodingChain.random(3, rng=5)
    first = markov.initial @ markov.accepted_count_law(10, 3, per_state=True)
    assert np.allclose(request_law(markov, 3, rounds=1).prob[1], first, atol=1e-14)


@pytest.mark.parametrize(
    ("statistic", "side", "target"),
    [
        ("acceptance_length", "low", 0.05),
        ("acceptance_length", "high", 0.05),
        ("acceptance_rate", "low", 0.02),
    ],
)
def test_alarm_false_alarm_rate_is_exact_against_monte_carlo(statistic, side, target):
    Th, n = 16, 20_000
    law = request_law(CHAIN, G, horizon=Th)
    alarm = alarm_threshold(law, target, side, statistic)
    assert 0 < alarm.false_alarm_rate <= target
    assert false_alarm_rate(law, alarm.threshold, side, statistic) == alarm.false_alarm_rate
    v, p = law.law(statistic)  # the next line out already exceeds the target: the largest rate below it
    i = int(np.searchsorted(v, alarm.threshold))
    assert (p[: i + 2].sum() if side == "low" else p[i - 1 :].sum()) > target
    c = RequestCounters.from_simulation(st.simulate(CHAIN, Th, G, n_runs=n, rng=3))
    stat = {"acceptance_length": 1 + c.accepted / c.steps, "acceptance_rate": c.accepted / (G * c.steps)}
    fired = alarm.fires(stat[statistic]).mean()
    se = np.sqrt(alarm.false_alarm_rate * (1 - alarm.false_alarm_rate) / n)
    assert abs(fired - alarm.false_alarm_rate) <= N_SE * se, (fired, str(alarm))
    # the whole law: every support value's frequency within 5 SE
    freq = np.array([np.isclose(stat[statistic], x, atol=1e-9).mean() for x in v])
    assert np.all(np.abs(freq - p) <= N_SE * np.sqrt(p * (1 - p) / n) + 1e-12)


def test_no_line_meets_a_target_below_the_smallest_atom():
    law = request_law(st.DecodingChain.iid([0.5, 0.5], [1.0, 0.0]), 2, rounds=1)
    alarm = alarm_threshold(law, 0.1, "low")
    assert alarm.threshold == -np.inf and alarm.false_alarm_rate == 0.0 and "0 (target 0.1)" in str(alarm)


def test_bad_inputs_say_what_is_wrong(run):
    with pytest.raises(ValueError, match="exactly one"):
        request_law(CHAIN, G)
    with pytest.raises(ValueError, match="homogeneous"):
        request_law(st.DecodingChain.random(2, rng=0, horizon=5), 2, rounds=2)
    with pytest.raises(ValueError, match="statistic"):
        request_law(CHAIN, G, rounds=1).law("speed")
    with pytest.raises(ValueError, match="side"):
        alarm_threshold(request_law(CHAIN, G, rounds=1), 0.1, "middle")
    with pytest.raises(ValueError, match="histograms"):
        RequestCounters(np.array([[1, 2]]))
    with pytest.raises(ValueError, match="reported"):
        check_metrics(CHAIN, G, T, counters=run, reported={"speed": 1.0})
    with pytest.raises(ValueError, match="n_requests"):
        check_metrics(CHAIN, G, T, reported={"acceptance_length": 2.0})
    with pytest.raises(ValueError, match="gamma \\+ 1"):
        check_metrics(CHAIN, 2, T, counters=run)


def test_vllm_per_request_records():
    recs = [
        {"acceptance_histogram": [39, 1, 0, 3], "num_draft_tokens": 129, "num_spec_steps": 43},
        {"acceptance_histogram": [10, 5, 2, 1], "num_draft_tokens": 54, "num_spec_steps": 18},
    ]
    c = RequestCounters.from_vllm(recs)
    assert (
        c.steps.tolist() == [43, 18] and c.accepted.tolist() == [10, 12] and c.drafted.tolist() == [129, 54]
    )
    assert 1 + c.accepted[0] / c.steps[0] == pytest.approx(
        1.2325581395348837
    )  # vLLM's mean_acceptance_length

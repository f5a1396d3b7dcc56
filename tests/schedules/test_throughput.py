"""A schedule's throughput: exact enumeration vs Monte Carlo (within 5 SE), Fractions vs floats,
and the scheduled round's exact engine vs the direct evaluation."""

from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as st
from spectheory.cost.staircase import StaircaseCost
from spectheory.kinds import ScheduledRound
from spectheory.schedules import (
    EarlyStopGreedy,
    GlobalArgmax,
    TopK,
    evaluate_schedule,
    retrospective_argmax,
    rows_from_chain,
    simulate_schedule,
)
from spectheory.schedules.named_batches import random_batches


@pytest.mark.parametrize(
    "schedule", [EarlyStopGreedy(), GlobalArgmax("survival"), TopK(3), retrospective_argmax()]
)
def test_exact_vs_monte_carlo_within_5_se(schedule):
    _, rows, gamma, cost = random_batches(1, 2, 2, seed=4)[0]
    exact = evaluate_schedule(rows, gamma, schedule, cost)
    mc = simulate_schedule(rows, gamma, schedule, cost, 4000, rng=1, progress=False)
    assert abs(mc.throughput - float(exact.throughput)) < 5 * mc.se, (mc, exact)
    assert abs(mc.verified - float(exact.verified)) < 0.1


def test_fractions_vs_floats():
    _, rows, gamma, cost = random_batches(1, 2, 2, seed=9)[0]
    for s in (EarlyStopGreedy(), TopK(2)):
        a = evaluate_schedule(rows, gamma, s, cost).throughput
        b = evaluate_schedule([r.as_float() for r in rows], gamma, s, cost).throughput
        assert isinstance(a, F) and abs(float(a) - b) < 1e-12


def test_round_exact_engine_is_the_one_step_evaluation():
    chain = st.DecodingChain.iid([0.7, 0.3], [0.5, 0.5])
    cost = StaircaseCost.from_steps_per_second([1, F(1, 2), F(9, 20)])
    rnd = ScheduledRound(2, GlobalArgmax("stale"), cost)
    rows = rows_from_chain(chain, [0], exact=True)
    assert rnd.exact(chain, 3, exact=True) == evaluate_schedule(rows, 2, GlobalArgmax("stale"), cost)
    with pytest.raises(ValueError, match="horizon"):
        rnd.exact(chain, 2)
    assert rnd.tags().decoder  # runs through DecoderSchedule (tests/schedules/test_decoder_schedule.py)


def test_simulate_counts_the_scheduled_lengths():
    """Through st.simulate, a fixed budget of 0 verified drafts emits one token per call."""
    chain = st.DecodingChain.iid([0.7, 0.3], [0.5, 0.5])
    cost = StaircaseCost.bucketed(1.0, 0.1, (2, 6))
    res = st.simulate(chain, 6, ScheduledRound(2, TopK(0), cost, batch=2), 20, rng=0)
    assert np.all(res.target_calls == 6) and np.all(res.accepted == 0)


def test_staircase_cost_checks_its_input():
    assert StaircaseCost((2, 4), (1, 2)).time(3) == 2
    with pytest.raises(ValueError, match="increasing"):
        StaircaseCost((2, 2), (1, 2))
    with pytest.raises(ValueError, match="non-decreasing"):
        StaircaseCost((1, 2), (2, 1))
    with pytest.raises(ValueError, match="tokens"):
        StaircaseCost((1, 2), (1, 2)).time(3)

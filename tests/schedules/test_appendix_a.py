"""DSpark's Appendix A (arXiv 2607.05147): the retrospective global search's first-token law is
(0.85, 0.15), exactly (Fraction enumeration) and by Monte Carlo through st.simulate."""

from fractions import Fraction as F

import numpy as np

import spectheory as st
from spectheory.kinds import ScheduledRound
from spectheory.schedules import (
    EarlyStopGreedy,
    FixedLength,
    GlobalArgmax,
    appendix_a,
    best_schedule,
    evaluate_schedule,
    first_token_law,
    retrospective_argmax,
)
from spectheory.schedules.named_batches import token_dependent_row


def test_retrospective_search_law_is_085_015_exactly():
    rows, gamma, cost = appendix_a()
    assert first_token_law(rows, gamma, retrospective_argmax(), cost) == [(F(17, 20), F(3, 20))]
    # the non-anticipating schedules keep the target's (0.7, 0.3)
    for s in (EarlyStopGreedy(), FixedLength(2), GlobalArgmax("stale")):
        assert first_token_law(rows, gamma, s, cost) == [(F(7, 10), F(3, 10))]


def test_retrospective_cuts_match_the_hand_derivation():
    """x_1 = 0 -> L = 2, x_1 = 1 -> L = 0 (docs/verification_schedules.md, section 3)."""
    from spectheory.schedules import slot_features

    rows, _, cost = appendix_a()
    cut = {
        x: retrospective_argmax().lengths(slot_features(rows, [x]), cost)[0]
        for x in [(0, 0), (0, 1), (1, 0), (1, 1)]
    }
    assert cut == {(0, 0): 2, (0, 1): 2, (1, 0): 0, (1, 1): 0}


def test_live_survival_argmax_without_break_reproduces_the_same_bias():
    rows, gamma, cost = appendix_a()
    row = token_dependent_row()
    assert first_token_law([row], gamma, GlobalArgmax("survival"), cost) == [(F(17, 20), F(3, 20))]
    assert first_token_law([row], gamma, EarlyStopGreedy("survival"), cost) == [(F(7, 10), F(3, 10))]


def test_ratios_to_the_best_non_anticipating_schedule():
    rows, gamma, cost = appendix_a()
    best = best_schedule(rows, gamma, cost).value.throughput
    assert best == F(549, 500)  # verify both drafts: (1 + 0.8 + 0.64) * 0.45
    assert evaluate_schedule(rows, gamma, retrospective_argmax(), cost).throughput == F(171, 145)
    assert evaluate_schedule(rows, gamma, EarlyStopGreedy(), cost).throughput == 1  # breaks at slot 1


def test_monte_carlo_through_simulate_within_5_se():
    """The first token of st.simulate runs of the scheduled round (Monte Carlo) vs the exact law."""
    _, gamma, cost = appendix_a()
    chain = st.DecodingChain.iid([0.7, 0.3], [0.5, 0.5])
    n = 3000
    for sched, p0 in ((retrospective_argmax(), 0.85), (FixedLength(2), 0.7)):
        res = st.simulate(chain, 3, ScheduledRound(gamma, sched, cost), n, rng=7, return_tokens=True)
        est = float(np.mean(res.tokens[:, 0] == 0))
        se = np.sqrt(p0 * (1 - p0) / n)
        assert abs(est - p0) < 5 * se, (sched.name, est, p0)

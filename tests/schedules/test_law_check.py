"""Non-anticipation by the output law: the kit flags the gallery's biased schedules and passes
the non-anticipating ones (exact, Fractions), and st.simulate agrees (Monte Carlo)."""

from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as st
from spectheory.kinds import ScheduledRound
from spectheory.schedules import (
    DropByOwnProbability,
    FixedLength,
    best_schedule,
    check_output_law,
    output_law,
)
from spectheory.schedules.named_batches import kit_instances, skewed_row
from spectheory.testing import check_round
from spectheory.testing.schedules import SCHEDULE_GALLERY, check_schedule


@pytest.mark.parametrize("name", list(SCHEDULE_GALLERY))
def test_gallery_verdicts(name):
    schedule, lossless = SCHEDULE_GALLERY[name]
    report = check_schedule(schedule, n_random=10)
    assert report.passed is lossless, str(report)
    if lossless:
        assert report.max_tv == 0
    else:
        assert report.max_tv > 0


@pytest.mark.parametrize("name", [n for n, (_, ok) in SCHEDULE_GALLERY.items() if not n.startswith("fixed")])
def test_gallery_verdicts_batch_of_two(name):
    schedule, lossless = SCHEDULE_GALLERY[name]
    assert check_schedule(schedule, batch=2, n_random=12).passed is lossless


def test_drop_by_own_probability_bias_is_exact():
    """Draft (0.8, 0.2), target (0.7, 0.3): P(y_2 = 0 | y_1 = 0) = 21/25, not 7/10."""
    _, _, _, cost = kit_instances()[0]
    law = output_law([skewed_row()], 2, DropByOwnProbability(F(1, 2), FixedLength(2)), cost)[0]
    m = {a: sum(p for y, p in law.items() if y[:2] == (0, a)) for a in (0, 1)}
    assert m[0] / (m[0] + m[1]) == F(21, 25)


def test_best_schedule_passes_the_kit():
    for _, rows, gamma, cost in kit_instances(2, 2, n_random=3)[1:]:
        best = best_schedule(rows, gamma, cost).schedule
        assert check_output_law(rows, gamma, best, cost).lossless


def test_float_laws_agree_with_fractions():
    name, rows, gamma, cost = kit_instances(2, 1, n_random=1)[-1]
    sched = SCHEDULE_GALLERY["drop last draft if q < 1/2"][0]
    exact = check_output_law(rows, gamma, sched, cost)
    floats = check_output_law([r.as_float() for r in rows], gamma, sched, cost)
    assert abs(float(exact.tv) - floats.tv) < 1e-12


def test_kit_through_check_round():
    _, _, gamma, cost = kit_instances()[0]
    good = ScheduledRound(gamma, SCHEDULE_GALLERY["early-stop greedy (live survival)"][0], cost)
    bad = ScheduledRound(gamma, SCHEDULE_GALLERY["retrospective argmax"][0], cost)
    assert check_round(good, n_random=2).passed
    assert not check_round(bad, n_random=2).passed


def test_batch_output_law_by_monte_carlo_within_5_se():
    """Two rows on a chain whose confidence after the first draft depends on it: the first token
    of st.simulate runs (Monte Carlo) vs the exact law of one scheduled step, for the argmax on
    live survival (biased here: 31/40) and the early-stop greedy (lossless)."""
    from spectheory.cost.staircase import StaircaseCost
    from spectheory.schedules import EarlyStopGreedy, GlobalArgmax, first_token_law, rows_from_chain

    chain = st.DecodingChain(
        np.array([[0.7, 0.3], [0.5, 0.5], [0.9, 0.1]]),
        np.array([[0.5, 0.5], [0.5, 0.5], [0.1, 0.9]]),
        np.array([1.0, 0.0, 0.0]),
        np.array([[1, 2], [1, 2], [1, 2]]),
    )
    cost = StaircaseCost((2, 6), (F(1), F(2)))
    rows = rows_from_chain(chain, [0, 0], exact=True)
    n = 4000
    for sched, want in ((GlobalArgmax("survival"), F(31, 40)), (EarlyStopGreedy(), F(7, 10))):
        p0 = first_token_law(rows, 2, sched, cost)[0][0]
        assert p0 == want
        res = st.simulate(chain, 3, ScheduledRound(2, sched, cost, batch=2), n, rng=3, return_tokens=True)
        est = float(np.mean(res.tokens[:, 0] == 0))
        assert abs(est - float(p0)) < 5 * np.sqrt(float(p0 * (1 - p0)) / n), (sched.name, est, p0)

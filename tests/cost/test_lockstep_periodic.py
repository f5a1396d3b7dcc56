"""The lockstep rate needs aperiodic round starts (issue 41, item 4).

A 3-token cycle ``0 -> 1 -> 2 -> 0`` with target = draft (every draft accepted),
``ConstantCost(0.1)``, lengths ``k = (1, 1, 3)``, ``B = 2``: a round from 0 emits 2 tokens and the
next starts at 2, a round from 2 emits 4 and the next starts at 0, so round starts alternate
0, 2 (period 2). The i.i.d.-phase formula of ``docs/cost.md`` §4 gives 2.4 tokens per row per
unit time; rows in phase run at 6 / 2.4 = 2.5, rows out of phase at 6 / 2.6 = 30/13: 2.4 is no
row's rate, and :func:`lockstep_rate` refuses the periodic case instead of returning it.
"""

import numpy as np
import pytest

import spectheory as st
from spectheory.cost import ConstantCost
from spectheory.kinds import PathRound
from spectheory.rounds import RoundRuns
from spectheory.rounds.sampler import ChainSampler
from spectheory.stopping.lockstep import lockstep_rate

CYCLE = np.roll(np.eye(3), 1, axis=1)  # 0 -> 1 -> 2 -> 0
LENGTHS = np.array([1, 1, 3])
MODEL = ConstantCost(0.1)


def _chain():
    return st.DecodingChain(CYCLE, CYCLE, initial=np.eye(3)[0])


def _lockstep(start, lengths=LENGTHS, rounds=40):
    """Tokens per row per unit time of rows starting at ``start`` (each drafting ``lengths[s]``
    from round-start state ``s``), played with the package's own round; ``rounds`` is a whole
    number of periods of every case here, so the average is the long-run rate exactly."""
    chain, rng = _chain(), np.random.default_rng(0)
    sampler, state = ChainSampler(chain), np.array(start)
    tokens = time = 0.0
    for _ in range(rounds):
        k = np.broadcast_to(lengths, (3,))[state]
        new = np.empty_like(state)
        for i, s in enumerate(state):
            o = PathRound(int(k[i])).play(
                sampler, RoundRuns(10**9, np.zeros(1, int), np.array([s]), np.zeros(1, int)), rng
            )
            tokens += (int(o.accepted[0]) + 1) / state.size
            new[i] = sampler.next_state[int(o.end_state[0]), int(o.final[0])]
        time += MODEL.round_time(int(k.max()), state.size)
        state = new
    return tokens / time


def test_rows_in_and_out_of_phase_run_at_different_rates():
    assert _lockstep([0, 0]) == pytest.approx(2.5, rel=1e-12)
    assert _lockstep([0, 2]) == pytest.approx(30 / 13, rel=1e-12)


def test_periodic_round_starts_with_differing_lengths_are_refused():
    with pytest.raises(ValueError, match=r"periodic \(period 2 on states \{0, 2\}\).*no single rate"):
        lockstep_rate(_chain(), LENGTHS, MODEL, 2)


def test_periodic_round_starts_where_the_formula_is_exact_are_accepted():
    one_row = lockstep_rate(_chain(), LENGTHS, MODEL, 1)  # renewal-reward on the row's own chain
    assert one_row.tokens_per_second == pytest.approx(6 / 2.4, rel=1e-12) == _lockstep([0])
    fixed = lockstep_rate(_chain(), 1, MODEL, 2)  # round starts cycle 0, 2, 1; K_max = 1 always
    assert fixed.tokens_per_second == pytest.approx(2 / 1.1, rel=1e-12)
    assert fixed.tokens_per_second == pytest.approx(_lockstep([0, 1], 1, rounds=39), rel=1e-12)


def test_several_closed_classes_of_round_starts_are_refused():
    two = np.roll(np.eye(2), 1, axis=1)  # 0 -> 1 -> 0: with gamma = 1 every round returns to its start
    chain = st.DecodingChain(two, two, initial=np.eye(2)[0])
    with pytest.raises(ValueError, match="closed classes"):
        lockstep_rate(chain, 1, MODEL, 2)

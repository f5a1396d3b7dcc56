"""A verification schedule in the real decoder (DecoderSchedule, ScheduledRound.decode) against
the exact theory: on torch models that are exactly a first-order chain, the tokens each group of
rows emits per target call, in the rounds where every row of the group drafts gamma tokens with
the bonus allowed, have the exact conditional mean evaluate_schedule(rows in those states).tokens;
the measured mean is within 5 SE of the exact one averaged over the visited states."""

import numpy as np
import pytest

import spectheory as st
from spectheory.cost.staircase import StaircaseCost
from spectheory.kinds.scheduled import ScheduledRound
from spectheory.schedules import (
    EarlyStopGreedy,
    FixedLength,
    GlobalArgmax,
    evaluate_schedule,
    rows_from_chain,
)
from spectheory.schedules.decoder_hook import DecoderSchedule

torch = pytest.importorskip("torch")

from spectheory.decoder import generate, speculative_generate  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402

GAMMA, GROUP = 2, 2
COST = StaircaseCost.bucketed(1.0, 0.2, (2, 4, 6))


def _measured_vs_exact(chain, schedule, n_decodes=12, B=8, T=80):
    target, draft = chain_models(chain)
    rnd = ScheduledRound(GAMMA, schedule, COST, batch=GROUP)
    exact_memo = {}
    measured, exact = [], []
    V = chain.vocab_size
    for seed in range(n_decodes):
        prompts = [[int(s)] for s in np.random.default_rng(seed).integers(V, size=B)]
        res = generate(target, draft, prompts, T, rnd, seed=seed)
        rt = res.stats.round_tokens
        for g in range(0, B, GROUP):
            rows = range(g, g + GROUP)
            seqs = [prompts[b] + [int(t) for t in res.tokens[b]] for b in rows]
            done = [0] * GROUP
            for r in range(min(len(rt[b]) for b in rows)):
                if all(T - done[j] >= GAMMA + 1 for j in range(GROUP)):
                    states = tuple(seqs[j][len(prompts[b]) + done[j] - 1] for j, b in enumerate(rows))
                    if states not in exact_memo:
                        exact_memo[states] = float(
                            evaluate_schedule(rows_from_chain(chain, states), GAMMA, schedule, COST).tokens
                        )
                    exact.append(exact_memo[states])
                    measured.append(sum(int(rt[b][r]) for b in rows))
                for j, b in enumerate(rows):
                    done[j] += int(rt[b][r])
    return np.array(measured, float), np.array(exact)


@pytest.mark.parametrize("schedule", [EarlyStopGreedy("survival"), GlobalArgmax("survival")])
def test_tokens_per_call_match_the_exact_value_within_5_se(schedule):
    chain = st.DecodingChain.random(3, rng=5)
    measured, exact = _measured_vs_exact(chain, schedule)
    assert len(measured) > 1000
    d = measured - exact
    assert abs(d.mean()) < 5 * d.std(ddof=1) / np.sqrt(len(d)), (measured.mean(), exact.mean())
    # and the schedule does cut: fewer tokens per call than verifying every draft
    full = np.mean(
        [
            float(evaluate_schedule(rows_from_chain(chain, [s, s]), GAMMA, FixedLength(GAMMA), COST).tokens)
            for s in range(3)
        ]
    )
    assert exact.mean() != pytest.approx(full)


def test_the_hook_on_appendix_a_laws_and_its_guards():
    hook = DecoderSchedule(EarlyStopGreedy(), StaircaseCost((2, 4), (1.0, 1.5)), batch=1)
    hook.start(2)
    q = torch.full((2, 2, 2), 0.5, dtype=torch.float64)
    p = torch.tensor([0.7, 0.3], dtype=torch.float64).expand(2, 3, 2)
    # survival 0.8, 0.64: the first slot pays (1.8 > 1), the second does not (2.44 / 1.5 < 1.8)
    assert hook(torch.tensor([[0, 1], [1, 1]]), q, p, torch.tensor([2, 0])).tolist() == [1, 0]
    assert hook._stale[0] == pytest.approx([0.8, 0.64]) and hook._stale[1] == []
    with pytest.raises(ValueError, match="Schedule"):
        DecoderSchedule("greedy", COST)
    target, draft = chain_models(st.DecodingChain.random(2, rng=0))
    with pytest.raises(ValueError, match="policy"):
        speculative_generate(target, draft, [[0]], 4, 2, schedule=hook, policy=st.stopping.FixedGamma(2))
    with pytest.raises(ValueError, match="check_every"):
        speculative_generate(target, draft, [[0]], 4, 2, schedule=hook, check_every=2)

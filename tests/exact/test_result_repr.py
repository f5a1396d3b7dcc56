"""Every result's ``repr`` is one short line with its key numbers (issue 27).

The default dataclass ``repr`` printed every per-position array (about 150 lines for a
``ProtocolResult``) and none of the numbers. Each result type now shows its class, horizon,
counters, ``tokens_per_call``, the speedup under its own cost, and its arrays by shape.
"""

import re

import numpy as np
import pytest

import spectheory as st
from spectheory.cost import Cost
from spectheory.kinds.batch.exact import batch_tree_expected
from spectheory.stopping import FixedGamma, evaluate_policy, long_run_optimum
from spectheory.trees import DraftTree

CHAIN = st.DecodingChain.random(6, rng=0)
T = 200


def _num(text, name):
    m = re.search(rf"\b{name}=([-+0-9.e]+|inf)", text)
    assert m, f"{name} missing from {text}"
    return float(m.group(1))


def _check(text, cls, horizon):
    assert "\n" not in text and len(text) < 700, text
    assert text.startswith(f"{cls}(horizon={horizon}, ")
    assert "array(" not in text  # no array printed element by element


def test_protocol_result_repr_shows_the_numbers():
    res = CHAIN.protocol(T, 4)
    text = repr(res)
    _check(text, "ProtocolResult", T)
    for name in ("target_calls", "rejections", "draft_tokens", "accepted", "bonus_tokens", "tokens_per_call"):
        assert _num(text, name) == pytest.approx(getattr(res, name), rel=1e-5)
    assert "gamma=4" in text and "round_starts=<shape (200, 6)>" in text and "speedup" not in text
    costed = repr(res.with_cost(0.1))
    assert _num(costed, "speedup") == pytest.approx(res.speedup(0.1), rel=1e-5)
    assert "under Cost(c=0.1)" in costed


def test_tree_batch_and_policy_reprs():
    tree = CHAIN.protocol(
        T, tree=DraftTree.from_branching([2, 1]), cost=Cost(0.1, target_call=lambda k: 1 + 0.01 * k)
    )
    text = repr(tree)
    _check(text, "TreeProtocolResult", T)
    assert _num(text, "speedup") == pytest.approx(tree.speedup(), rel=1e-5) and "t(k)" in text
    batch = batch_tree_expected(CHAIN, 30, 3, 2)
    text = repr(batch)
    _check(text, "BatchTreeResult", 30)
    assert "M=3" in text and _num(text, "tokens_per_call") == pytest.approx(batch.tokens_per_call, rel=1e-5)
    assert "draft_tokens=inf" in repr(batch_tree_expected(CHAIN, 30, np.inf, 2))
    value = evaluate_policy(CHAIN, FixedGamma(3), T, 0.1)
    text = repr(value)
    _check(text, "PolicyValue", T)
    assert "policy='FixedGamma(3)'" in text and _num(text, "speedup") == pytest.approx(
        value.speedup(), rel=1e-5
    )
    assert "n/a" not in text


def test_simulation_and_long_run_reprs():
    sim = st.simulate(CHAIN, T, 4, 300, rng=0, cost=0.1)
    text = repr(sim)
    _check(text, "SimulationResult", T)
    assert "n_runs=300" in text and "accepted_counts=<shape (300, 5)>" in text
    m = re.search(r"target_calls=([0-9.]+)\+-([0-9.e-]+)", text)
    assert float(m.group(1)) == pytest.approx(sim.mean("target_calls"), rel=1e-5)
    assert float(m.group(2)) == pytest.approx(sim.se("target_calls"), rel=0.05)
    assert _num(text, "speedup") == pytest.approx(sim.speedup(), rel=1e-5)
    assert "speedup" not in repr(st.simulate(CHAIN, T, 4, 10, rng=0))
    lr = repr(long_run_optimum(CHAIN, 0.1, max_depth=8))
    assert lr.startswith("LongRunResult(rate=") and "lengths=<shape (6,)>" in lr and "\n" not in lr


def test_cost_shown_by_its_parameters():
    res = CHAIN.protocol(T, 3, cost=Cost(0.1, draft_call=lambda w: 0.1, autoregressive=2.0))
    text = repr(res)
    assert "under Cost(c=0.1, draft_call(w), autoregressive=2)" in text
    assert _num(text, "speedup") == pytest.approx(res.speedup(), rel=1e-5)

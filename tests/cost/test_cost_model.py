"""Cost models: the forward forms, ``CostModel.at``, ``ConstantCost`` and the cost members of exact results.

``ConstantCost(c)`` must reproduce every number computed under the bare ``c`` exactly (path,
tree, batch and policy results); a cost model's exact time must match Monte Carlo within 5 SE;
the forms are checked against their formulas and refuse bad arguments.
"""

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hs

import spectheory as st
from spectheory.cost import (
    COST_MODELS,
    ConstantCost,
    ConstantForward,
    Cost,
    CostModel,
    LinearForward,
    RooflineForward,
    as_cost,
    named_cost,
)
from spectheory.stopping import FixedGamma, evaluate_policy, optimal_policy
from spectheory.trees import DraftTree


def _chain():
    return st.DecodingChain.random(3, n_states=4, concentration=0.6, rng=11)


# -- the forms -------------------------------------------------------------------------------
def test_forms_follow_their_formulas():
    lin = LinearForward(0.01, 2e-4, 3e-7)
    assert lin(4, 3, 100) == pytest.approx(0.01 + 2e-4 * 12 + 3e-7 * 400)
    roof = RooflineForward(
        1e9, 1e14, 1e12, launch=1e-4, kv_bytes_per_token=1e3, attention_flops_per_pair=10.0
    )
    compute = (2e9 * 8 + 10.0 * 8 * 50) / 1e14
    memory = (2e9 + 1e3 * 4 * 50) / 1e12
    assert roof(4, 2, 50) == pytest.approx(1e-4 + max(compute, memory))
    assert roof.compute_time(4, 2, 50) == pytest.approx(compute)
    # past the ridge the forward is compute-bound: cost proportional to the tokens scored
    ridge = roof.ridge_tokens()
    assert ridge == pytest.approx(2 * 1e14 / (1e12 * 2))
    assert roof(round(4 * ridge), 1, 0) - 1e-4 == pytest.approx(2 * (roof(round(2 * ridge), 1, 0) - 1e-4))
    assert roof(1, 1, 0) == roof(int(ridge) - 1, 1, 0)  # memory-bound: flat
    assert ConstantForward(0.5)(1000, 9, 1e6) == 0.5
    np.testing.assert_allclose(lin(np.array([1, 2]), 1, 0), [0.01 + 2e-4, 0.01 + 4e-4])
    for f in (lin, roof, ConstantForward(0.5)):
        assert "t =" in f.describe() and type(f).__name__ in repr(f)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: ConstantForward(-1.0), "seconds"),
        (lambda: LinearForward(0.0, float("nan")), "per_token"),
        (lambda: RooflineForward(0.0, 1e12, 1e12), "params"),
        (lambda: RooflineForward(1e9, 1e12, 1e12, launch=-1.0), "launch"),
        (lambda: LinearForward()(0, 1, 0), "batch"),
        (lambda: LinearForward()(1, 0, 0), "tokens"),
        (lambda: LinearForward()(1, 1, -1), "context"),
        (lambda: CostModel(ConstantForward(1.0), 0.1), "draft"),
        (lambda: CostModel(ConstantForward(1.0), ConstantForward(0.1), overhead=-1), "overhead"),
        (lambda: ConstantCost(0.1).at(batch=0), "batch"),
        (lambda: ConstantCost(0.1).at(batch=2.5), "batch"),
        (lambda: ConstantCost(0.1).at(context=-3), "context"),
        (lambda: Cost(0.1, autoregressive=0.0), "autoregressive"),
        (lambda: Cost(0.1, draft_call=3), "draft_call"),
        (lambda: named_cost("gpt-5/nano"), "name"),
        (lambda: _chain().protocol(8, 2).time(0.1, batch=4), "batch"),
    ],
)
def test_bad_arguments_are_refused_by_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()


# -- the model at a batch size ---------------------------------------------------------------
def test_at_is_the_round_in_seconds():
    model = CostModel(LinearForward(0.02, 1e-4, 1e-8), LinearForward(0.002, 1e-5), overhead=1e-3)
    B, L = 8, 500.0
    cost = model.at(B, L)
    assert cost.c == model.draft_step(B, L) == pytest.approx(0.002 + 1e-5 * 8)
    assert (
        cost.target_call(3)
        == model.target_call(3, B, L)
        == pytest.approx(0.02 + 1e-4 * 32 + 1e-8 * 4000 + 1e-3)
    )
    assert cost.draft_call(5) == model.draft_level(5, B, L)
    assert cost.autoregressive == model.autoregressive(B, L) == pytest.approx(0.02 + 1e-4 * 8 + 1e-8 * 4000)
    assert model.round_time(3, B, L) == pytest.approx(3 * cost.c + cost.target_call(3))
    assert model.at(B, L) == cost and hash(model.at(B, L)) == hash(cost)  # comparable costs
    rel = model.relative(B, L)
    assert rel.autoregressive == 1.0 and rel.c == pytest.approx(cost.c / cost.autoregressive)
    assert rel.target_call(2) == pytest.approx(cost.target_call(2) / cost.autoregressive)
    assert as_cost(model) == model.at()
    assert "target:" in model.describe() and "overhead" in model.describe()


def test_constant_cost_is_the_bare_number_at_every_batch():
    for B in (1, 7, 4096):
        assert ConstantCost(0.07).at(B, context=1e4) == Cost(0.07)
    assert ConstantCost(0.07) == ConstantCost(0.07) != ConstantCost(0.08)
    assert CostModel(ConstantForward(1.0), ConstantForward(0.07)).at().target_call is None


def test_constant_cost_reproduces_every_old_number_exactly():
    chain, T, c = _chain(), 12, 0.13
    tree = DraftTree.from_branching([2, 1])
    results = [
        chain.protocol(T, 3),
        chain.protocol(T, tree),
        chain.protocol(T, st.BatchRound(2, gamma=2)),
        chain.protocol(T, st.BatchRound(2, gamma=2, reading="tree")),
        evaluate_policy(chain, FixedGamma(2), T, c),
    ]
    model = ConstantCost(c)
    for res in results:
        for B in (1, 16):
            assert res.time(model, batch=B) == res.time(c)
            assert res.speedup(model, batch=B) == res.speedup(c)
            assert res.time_per_token(model, batch=B) == res.time_per_token(c)
        assert res.throughput(model, batch=16) == 16 * res.tokens_per_second(c)
    opt = optimal_policy(chain, T, c, max_depth=4)
    assert optimal_policy(chain, T, model.at(64), max_depth=4).time() == opt.time()


def test_speedup_is_against_plain_decoding_at_the_same_batch():
    chain, T = _chain(), 16
    model = CostModel(LinearForward(0.01, 1e-3), ConstantForward(0.001))
    res = chain.protocol(T, 2)
    for B in (1, 4, 64):
        cost = model.at(B)
        expected = cost.c * res.draft_tokens + float(
            res.round_start_prob @ cost.call_times(2)[res.drafts_per_round - 1]
        )
        assert res.time(model, batch=B) == pytest.approx(expected, rel=1e-12)
        assert res.speedup(model, batch=B) == pytest.approx(T * model.autoregressive(B) / expected, rel=1e-12)
        assert res.throughput(model, batch=B) == pytest.approx(B * T / expected, rel=1e-12)
    # the relative cost (units of one plain step) gives the same speedup
    assert res.speedup(model.relative(4)) == pytest.approx(res.speedup(model, batch=4), rel=1e-12)


def test_a_tree_is_drafted_level_by_level():
    chain, T = _chain(), 10
    tree = DraftTree.from_branching([3, 2])  # levels: 1 root, 3, 6 nodes
    res = chain.protocol(T, tree)
    model = CostModel(ConstantForward(1.0), LinearForward(0.01, 0.002))
    cost = model.at(2)
    levels = {d: sum(model.draft_level(w, 2) for w in [1, 3][:d]) for d in (0, 1, 2)}
    depth = np.minimum(2, T - np.arange(T))
    draft = float(res.round_start_prob @ np.array([levels[int(d)] for d in depth]))
    assert res.time(model, batch=2) == pytest.approx(draft + res.target_calls, rel=1e-12)
    # level_forwards=False: every node one draft step, as a bare c
    flat = CostModel(ConstantForward(1.0), LinearForward(0.01, 0.002), level_forwards=False)
    assert res.time(flat, batch=2) == pytest.approx(cost.c * res.draft_tokens + res.target_calls, rel=1e-12)


def test_fractions_tiny_case():
    """Always accepted, T = 10, gamma = 4: two rounds of 4 drafts (no bonus at the end), plus ...
    exact arithmetic of the time under a linear target and a constant draft."""
    res = st.DecodingChain.iid([1.0, 0.0], [1.0, 0.0]).protocol(10, 4)
    assert res.target_calls == 2.0 and res.draft_tokens == 8.0
    base, per_token, draft = Fraction(1, 100), Fraction(1, 1000), Fraction(1, 500)
    B = 8
    t4 = base + per_token * B * 5
    expected = 2 * t4 + 8 * draft
    model = CostModel(LinearForward(float(base), float(per_token)), ConstantForward(float(draft)))
    assert res.time(model, batch=B) == pytest.approx(float(expected), rel=1e-14)
    ar = base + per_token * B
    assert res.speedup(model, batch=B) == pytest.approx(float(10 * ar / expected), rel=1e-14)


@given(c=hs.floats(0.0, 1.0), batches=hs.lists(hs.integers(1, 10_000), min_size=2, max_size=5))
@settings(max_examples=30, deadline=None)
def test_throughput_is_linear_in_batch_for_the_constant_form(c, batches):
    res = st.DecodingChain.iid([0.7, 0.3], [0.5, 0.5]).protocol(12, 3)
    model = ConstantCost(c)
    tp = [res.throughput(model, batch=B) for B in sorted(batches)]
    assert all(b >= a for a, b in zip(tp, tp[1:]))
    assert tp[-1] / tp[0] == pytest.approx(max(batches) / min(batches), rel=1e-12)


# -- against Monte Carlo ----------------------------------------------------------------------
@pytest.mark.parametrize("B", [1, 32])
def test_exact_time_of_a_path_under_a_cost_model_matches_monte_carlo(B):
    chain, T = _chain(), 24
    model = named_cost("llama2-7b/68m-h200")
    cost = model.at(B, context=2048)
    exact = chain.protocol(T, 3)
    sim = st.simulate(chain, T, 3, n_runs=4000, rng=3, cost=cost)
    times = sim.time()
    se = times.std(ddof=1) / np.sqrt(times.size)
    assert abs(times.mean() - exact.time(model, batch=B, context=2048)) < 5 * se
    assert sim.speedup() == pytest.approx(
        exact.speedup(model, batch=B, context=2048), rel=5 * se / times.mean()
    )


def test_exact_time_of_a_tree_under_a_cost_model_matches_monte_carlo():
    """The driver costs a call by its drafted nodes ``k``; a tree's drafted nodes determine its
    truncated depth, so the level-by-level drafting time is folded into ``t(k)`` for the check."""
    chain, T = _chain(), 16
    tree = DraftTree.from_branching([2, 2])
    model = CostModel(LinearForward(0.02, 1e-3), LinearForward(0.001, 5e-4))
    B = 4
    cost = model.at(B)
    depth_of = {tree.nodes_within(d): d for d in range(1, tree.max_depth + 1)}
    widths = np.bincount(tree.depth)

    def call(k: int) -> float:  # the driver tabulates t(1..K); only node counts of truncated trees occur
        return cost.target_call(k) + cost.tree_draft_time(widths[: depth_of[k] + 1]) if k in depth_of else 0.0

    sim = st.simulate(chain, T, tree, n_runs=4000, rng=4, cost=Cost(0.0, target_call=call))
    times = sim.time()
    se = times.std(ddof=1) / np.sqrt(times.size)
    assert abs(times.mean() - chain.protocol(T, tree).time(model, batch=B)) < 5 * se


def test_named_models_state_their_sources():
    for name in COST_MODELS:
        model = named_cost(name)
        assert model.name == name and model.source
        assert 0 < model.at().c < model.autoregressive()
        assert model.describe().startswith(name)


def test_named_models_carry_the_published_constants():
    """Leviathan et al.'s Table 4 (arXiv 2211.17192v2) and Chen et al.'s Sec. 6 (2302.01318v1)."""
    for draft, c in (("t5-small", 0.02), ("t5-base", 0.04), ("t5-large", 0.11)):
        model = named_cost(f"t5-xxl/{draft}-leviathan")
        assert model.relative(1).c == model.relative(4096).c == c
        assert "Table 4" in model.source
    chinchilla = named_cost("chinchilla-70b/4b")
    assert chinchilla.autoregressive() == pytest.approx(14.1e-3, rel=1e-12)
    assert chinchilla.at().c == pytest.approx(1.8e-3, rel=1e-12)
    assert "Sec. 6" in chinchilla.source
    assert not any("recalled" in named_cost(name).source for name in COST_MODELS)


def test_every_round_kind_is_costed_by_a_cost_model():
    """Path, tree, batch (both readings) and policy results under one cost model at a batch size:
    the policy evaluated under ``model.at(B)`` has the fixed path's time (FixedGamma is the path),
    and a batch round's draft sequences are drafted level by level (``M`` nodes a level)."""
    chain, T, B = _chain(), 12, 8
    model = CostModel(LinearForward(0.02, 1e-3), LinearForward(0.001, 2e-4))
    path = chain.protocol(T, 3)
    policy = chain.protocol(T, FixedGamma(3), cost=model.at(B))
    assert policy.time(model, batch=B) == pytest.approx(path.time(model, batch=B), rel=1e-12)
    assert policy.speedup() == pytest.approx(path.speedup(model, batch=B), rel=1e-12)
    with pytest.raises(ValueError, match="cost"):
        policy.time(model, batch=2 * B)  # its target time is known under its own cost only
    for reading in ("first_token", "tree"):
        res = chain.protocol(T, st.BatchRound(2, gamma=3, reading=reading))
        cost = model.at(B)
        depth = np.minimum(3, T - np.arange(T))
        draft = res.round_start_prob @ np.array(
            [sum(cost.draft_call(w) for w in [1, 2, 2][:d]) for d in depth]
        )
        calls = res.round_start_prob @ np.array([cost.target_call(2 * d) for d in depth])
        assert res.time(model, batch=B) == pytest.approx(float(draft + calls), rel=1e-12)


def test_a_policy_under_a_cost_model_matches_monte_carlo():
    from spectheory.stopping import ConfidenceThreshold

    chain, T, B = _chain(), 16, 32
    model = named_cost("llama2-7b/68m-h100")
    policy = ConfidenceThreshold(0.6, max_depth=4)
    exact = chain.protocol(T, policy, cost=model.at(B))
    sim = st.simulate(chain, T, policy, n_runs=4000, rng=5, cost=model.at(B))
    times = sim.time()
    se = times.std(ddof=1) / np.sqrt(times.size)
    assert abs(times.mean() - exact.time()) < 5 * se
    assert exact.time() == exact.time(model, batch=B)

"""A policy's exact result answers every shared counter: ``round_starts``, ``rejection_by_position``
and ``accepted_counts`` (so ``accepted_count_law``) from the forward recursion
(``spectheory/kinds/policy/forward_counters.py``), checked against an independent enumeration of every
generation on tiny chains (1e-12) and against Monte Carlo (within ``Z`` standard errors)."""

import numpy as np
import pytest

import spectheory as st
from spectheory.kinds.policy.forward_counters import policy_counters
from spectheory.kinds.policy.paths import evaluate_paths
from spectheory.rounds import Round
from spectheory.stopping import (
    ConfidenceThreshold,
    EntropyRule,
    FixedGamma,
    HFSchedule,
    PolicyRound,
    RejectionThreshold,
    StopContext,
    evaluate_policy,
    optimal_policy,
    oracle_value,
)
from spectheory.stopping.oracle import OracleRound

#: Monte Carlo estimates must lie within Z standard errors of the exact values (a two-sided
#: 5-sigma band: a false alarm about once in 1.7 million comparisons).
Z = 5.0


def _tiny_chains():
    """A first-order chain, a chain whose state is not the last token, and an inhomogeneous one."""
    first = st.DecodingChain.random(2, concentration=0.8, rng=4)
    rng = np.random.default_rng(7)
    t, d = rng.dirichlet(np.ones(2), size=3), rng.dirichlet(np.ones(2), size=3)
    nxt = np.array([[1, 2], [2, 0], [0, 1]])
    other = st.DecodingChain(t, d, [0.5, 0.3, 0.2], nxt)
    ts, ds = rng.dirichlet(np.ones(2), size=(6, 2)), rng.dirichlet(np.ones(2), size=(6, 2))
    inhom = st.DecodingChain(ts, ds, [0.6, 0.4])
    return {"first_order": first, "next_state": other, "inhomogeneous": inhom}


# ------------------------------------------------------------ an independent enumeration
def _token_step(p, q, x):
    """Token verification of a drafted ``x``: P(accept) and the law emitted after a rejection."""
    res = np.maximum(p - q, 0.0)
    return min(1.0, p[x] / q[x]), res / res.sum() if res.sum() > 0 else p


def _point_mass_step(p, q, x):
    """Point-mass proposals: accept with ``p(x)``; after a rejection ``p`` without ``x``."""
    res = p.copy()
    res[x] = 0.0
    return p[x], res / res.sum() if res.sum() > 0 else p


def enumerate_counters(chain, policy, T, step):
    """Every generation of ``T`` tokens, enumerated path by path (no recursion over state laws):
    drafted tokens, the policy's decision on each (one-entry StopContext), each verification
    outcome and each emitted token, with its probability. Returns the expected round starts
    ``[T, S]``, rejections by position ``[T]`` and rounds by accepted count ``[D + 1]``."""
    S, D = chain.n_states, policy.max_depth
    starts, rej, counts = np.zeros((T, S)), np.zeros(T), np.zeros(D + 1)
    one = lambda v: np.array([v])  # noqa: E731

    def laws(n, s):
        tgt, dft = chain.kernels(n)
        return tgt[s], dft[s]

    def rounds(prob, n, s, mem):
        if n >= T or prob == 0.0:
            return
        starts[n, s] += prob
        kmax = min(D, T - n)

        def draft(w, path):  # path: list of (prev_state, token, state, accept_prob_so_far, accept, residual)
            i = len(path)
            cur = path[-1][2] if path else s
            p, q = laws(n + i, cur)
            for x in range(chain.vocab_size):
                if q[x] == 0.0:
                    continue
                a, residual = step(p, q, x)
                rho = (path[-1][3] if path else 1.0) * a
                nxt = int(chain.next_state[cur, x])
                new = path + [(cur, x, nxt, rho, a, residual)]
                ctx = StopContext(
                    depth=i + 1,
                    position=one(n),
                    start_state=one(s),
                    prev_state=one(cur),
                    token=one(x),
                    state=one(nxt),
                    top=one(q.max()),
                    entropy=one(-(q[q > 0] * np.log(q[q > 0])).sum()),
                    token_prob=one(q[x]),
                    accept_prob=one(rho),
                    memory=one(mem),
                )
                if i + 1 >= kmax or bool(np.asarray(policy.stop(ctx)).reshape(-1)[0]):
                    verify(w * q[x], new)
                else:
                    draft(w * q[x], new)

        def verify(w, path):
            k, alive = len(path), w
            for j, (prev, _x, _next, _rho, a, residual) in enumerate(path):
                r = alive * (1.0 - a)  # accepted j, rejected at draft j + 1 (position n + j)
                rej[n + j] += r
                counts[j] += r
                for y in range(chain.vocab_size):
                    rounds(
                        r * residual[y],
                        n + j + 1,
                        int(chain.next_state[prev, y]),
                        policy.memory_after(mem, j, k),
                    )
                alive *= a
            counts[k] += alive
            last = path[-1][2]
            if n + k < T:  # the bonus token
                p, _ = laws(n + k, last)
                for y in range(chain.vocab_size):
                    rounds(
                        alive * p[y],
                        n + k + 1,
                        int(chain.next_state[last, y]),
                        policy.memory_after(mem, k, k),
                    )

        draft(prob, [])

    for s in range(S):
        rounds(float(chain.initial[s]), 0, s, policy.initial_memory)
    return starts, rej, counts


POLICIES = {
    "fixed": FixedGamma(2),
    "confidence": ConfidenceThreshold(0.6, max_depth=3),
    "entropy": EntropyRule(0.6, max_depth=3),
    "hf_schedule": HFSchedule(1, max_depth=3),
    "rejection": RejectionThreshold(0.4, max_depth=3),
}


@pytest.mark.parametrize("verifier, step", [("token", _token_step), ("point_mass", _point_mass_step)])
@pytest.mark.parametrize("chain_name", list(_tiny_chains()))
@pytest.mark.parametrize("name", list(POLICIES))
def test_counters_equal_an_independent_enumeration(name, chain_name, verifier, step):
    chain, policy, T = _tiny_chains()[chain_name], POLICIES[name], 5
    starts, rej, counts = enumerate_counters(chain, policy, T, step)
    for method in ("auto", "rounds"):
        v = evaluate_policy(chain, policy, T, 0.1, method=method, verifier=verifier)
        np.testing.assert_allclose(v.round_starts, starts, atol=1e-12, rtol=0)
        np.testing.assert_allclose(v.rejection_by_position, rej, atol=1e-12, rtol=0)
        np.testing.assert_allclose(v.accepted_counts, counts, atol=1e-12, rtol=0)
        # ... and the backward recursion's counters agree with the enumeration's
        assert abs(v.target_calls - counts.sum()) < 1e-12 and abs(v.rejections - rej.sum()) < 1e-12
        assert abs(v.accepted - counts @ np.arange(counts.size)) < 1e-12


def test_start_state_and_oracle_counters_equal_the_other_engines():
    chain = st.DecodingChain.random(3, concentration=0.6, rng=2)
    T = 9
    opt = optimal_policy(chain, T, 0.1, max_depth=3)  # StartStatePolicy: one length per start state
    paths = policy_counters(chain, RejectionThreshold(1.0, max_depth=3), T)  # never stops early
    fixed = chain.protocol(T, 3)
    np.testing.assert_allclose(paths.accepted_counts, fixed.accepted_counts, atol=1e-12, rtol=0)
    np.testing.assert_allclose(paths.round_starts, fixed.round_starts, atol=1e-12, rtol=0)
    via_paths = evaluate_paths(chain, opt.extra["policy"], T, opt.cost)  # the path-tree forward pass
    for name in ("round_starts", "rejection_by_position", "accepted_counts"):
        np.testing.assert_allclose(getattr(opt, name), getattr(via_paths, name), atol=1e-12, rtol=0)
    orc = oracle_value(chain, T, 0.1, 3)  # the oracle's rounds are FixedGamma(3)'s
    np.testing.assert_allclose(orc.rejection_by_position, fixed.rejection_by_position, atol=1e-12, rtol=0)
    np.testing.assert_allclose(orc.accepted_count_law, fixed.accepted_count_law, atol=1e-12, rtol=0)


def test_engines_follow_what_a_policy_declares_not_its_class(monkeypatch):
    """A policy that is neither FixedGamma nor StartStatePolicy but declares ``constant_length``
    or ``length_at_start`` (with ``length``) takes their engines (spied on): the same values to
    1e-12 as the classes, and as the path enumeration (which reads only ``stop``)."""
    from spectheory.kinds.policy import evaluate as ev
    from spectheory.stopping import Policy

    used = []
    for engine in ("_fixed_gamma", "start_class_recursion", "evaluate_paths"):
        real = getattr(ev, engine)
        monkeypatch.setattr(
            ev, engine, lambda *a, _real=real, _name=engine, **k: used.append(_name) or _real(*a, **k)
        )

    chain = st.DecodingChain.random(3, concentration=0.6, rng=4)
    T = 8

    class Every3(Policy):
        constant_length = max_depth = 3

        def stop(self, ctx):
            return np.broadcast_to(ctx.depth >= 3, np.shape(ctx.state))

    lengths = np.array([1, 3, 2])

    class ByStart(Policy):
        uses_start = position_dependent = length_at_start = True
        max_depth = 3

        def length(self, position, start_state):
            return lengths[np.asarray(start_state)]

        def stop(self, ctx):
            return ctx.depth >= self.length(ctx.position, ctx.start_state)

    want_fixed = evaluate_policy(chain, FixedGamma(3), T, 0.1)
    opt = optimal_policy(chain, T, 0.1, max_depth=3)
    by_class = opt.extra["policy"].__class__(lengths)
    for mine, theirs, engine in (
        (Every3(), FixedGamma(3), "_fixed_gamma"),
        (ByStart(), by_class, "start_class_recursion"),
    ):
        used.clear()
        got = evaluate_policy(chain, mine, T, 0.1)
        assert used == [engine]
        want = evaluate_policy(chain, theirs, T, 0.1)
        enumerated = evaluate_paths(chain, mine, T, got.cost)
        for name in ("target_calls", "rejections", "draft_tokens"):
            assert abs(getattr(got, name) - getattr(want, name)) < 1e-12
            assert abs(getattr(got, name) - getattr(enumerated, name)) < 1e-12
        np.testing.assert_allclose(
            policy_counters(chain, mine, T).accepted_counts, got.accepted_counts, atol=1e-12, rtol=0
        )
    assert abs(evaluate_policy(chain, Every3(), T, 0.1).time() - want_fixed.time()) < 1e-12
    with pytest.raises(NotImplementedError, match="length_at_start"):
        ConfidenceThreshold(0.5).length(0, 0)


class _Recorded(Round):
    """A policy round that records where each round starts (Monte Carlo round starts)."""

    def __init__(self, inner, T, S):
        self.inner, self.starts = inner, np.zeros((T, S))

    name = property(lambda self: self.inner.name)
    max_depth = property(lambda self: self.inner.max_depth)
    verifier_name = property(lambda self: self.inner.verifier_name)
    initial_memory = property(lambda self: self.inner.initial_memory)

    def play(self, sampler, runs, rng):
        np.add.at(self.starts, (runs.n, runs.state), 1)
        return self.inner.play(sampler, runs, rng)


@pytest.mark.parametrize(
    "policy, verifier",
    [
        (ConfidenceThreshold(0.5, max_depth=4), "token"),
        (HFSchedule(2, max_depth=4), "token"),
        (RejectionThreshold(0.3, max_depth=3), "point_mass"),
        (EntropyRule(0.9, max_depth=4), "argmax_soft"),
    ],
)
def test_counters_against_monte_carlo(policy, verifier):
    chain = st.DecodingChain.random(3, concentration=0.7, rng=3)
    T, N = 12, 4000
    exact = chain.protocol(T, PolicyRound(policy, verifier), cost=0.1)
    rec = _Recorded(PolicyRound(policy, verifier), T, chain.n_states)
    sim = st.simulate(chain, T, rec, N, rng=1)
    # per position and state: a round starts there at most once per run (a Bernoulli mean)
    for mc, ex in (
        (rec.starts / N, exact.round_starts),
        (sim.rejection_by_position / N, exact.rejection_by_position),
    ):
        se = np.sqrt(np.maximum(ex * (1 - ex), 1e-4) / N)
        assert np.all(np.abs(mc - ex) <= Z * se), np.max(np.abs(mc - ex) / se)
    counts = sim.accepted_counts  # rounds accepting j, per run
    mean, se = counts.mean(0), counts.std(0, ddof=1) / np.sqrt(N)
    assert np.all(np.abs(mean - exact.accepted_counts) <= Z * np.maximum(se, 1e-3))
    law_se = np.sqrt(exact.accepted_count_law * (1 - exact.accepted_count_law) / counts.sum())
    assert np.all(np.abs(sim.accepted_count_law - exact.accepted_count_law) <= Z * np.maximum(law_se, 1e-3))


def test_oracle_round_counters_against_monte_carlo():
    chain = st.DecodingChain.random(3, concentration=0.7, rng=3)
    T, N = 12, 3000
    exact = chain.protocol(T, OracleRound(3), cost=0.1)
    sim = st.simulate(chain, T, OracleRound(3), N, rng=2)
    mc, ex = sim.rejection_by_position / N, exact.rejection_by_position
    assert np.all(np.abs(mc - ex) <= Z * np.sqrt(np.maximum(ex * (1 - ex), 1e-4) / N))


@pytest.mark.parametrize("chain_name", list(_tiny_chains()))
@pytest.mark.parametrize("verifier", ["token", "point_mass"])
def test_path_optimum_answers_every_counter(chain_name, verifier):
    """The full-information optimum's counters (its recorded decisions replayed by the forward
    pass) agree with its own backward values at every cost, and with FixedGamma(1)'s counters
    where its decisions are forced: a draft dearer than any saving (c = 50 target calls) stops
    after the first token."""
    chain, T, D = _tiny_chains()[chain_name], 6, 3
    for c in (0.0, 0.3, 50.0):
        opt = optimal_policy(chain, T, c, max_depth=D, information="path", verifier=verifier)
        counts, rej = opt.accepted_counts, opt.rejection_by_position
        assert abs(opt.target_calls - counts.sum()) < 1e-12 and abs(opt.rejections - rej.sum()) < 1e-12
        assert abs(opt.accepted - counts @ np.arange(counts.size)) < 1e-12
        assert abs(opt.round_starts.sum() - opt.target_calls) < 1e-12
    fixed = evaluate_policy(chain, FixedGamma(1), T, 50.0, verifier=verifier)
    for name in ("round_starts", "rejection_by_position"):
        np.testing.assert_allclose(getattr(opt, name), getattr(fixed, name), atol=1e-12, rtol=0)
    np.testing.assert_allclose(opt.accepted_counts[:2], fixed.accepted_counts, atol=1e-12, rtol=0)
    assert not opt.accepted_counts[2:].any()

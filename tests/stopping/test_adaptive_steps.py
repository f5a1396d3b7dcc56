"""SGLang's adaptive speculative steps (EMASteps) and the engines' online controllers in the
real decoder.

The controller's vectorised update against a line-by-line transcription of SGLang's
``AdaptiveSpeculativeParams`` (pull request #21599); its exact trajectory when every draft is
accepted; the online controllers run through the real decoder on torch models that are exactly
a chain, against Monte Carlo of the same chain (5 combined SE) and, for the one-round vLLM
controller, against its exact value.
"""

import numpy as np
import pytest

import spectheory as st
from spectheory.kinds.policy.context import RoundFeedback
from spectheory.stopping import AcceptanceRateK, EMASteps, ROCThreshold, UCBGamma, evaluate_policy
from spectheory.testing import check_round


class _SGLang:
    """SGLang's AdaptiveSpeculativeParams, transcribed (one batch = one request)."""

    def __init__(self, initial, cands=(1, 3, 7), alpha=0.2, interval=5, warmup=10, down=-0.25, up=0.0):
        self.c = sorted(cands)
        self.alpha, self.interval, self.warmup, self.down, self.up = alpha, interval, warmup, down, up
        self.steps = min(self.c, key=lambda s: (abs(s - initial), -s))
        self.ema = float(self.steps - 1)
        self.n = 0

    def update(self, accepted):
        self.ema = (1 - self.alpha) * self.ema + self.alpha * accepted
        self.n += 1
        if self.n <= self.warmup or (self.n - self.warmup) % self.interval != 0:
            return
        i = self.c.index(self.steps)
        while i > 0 and self.ema <= self.c[i - 1] - 0.5 + self.down:
            i -= 1
        while i < len(self.c) - 1 and self.ema > self.c[i] - 0.5 + self.up:
            i += 1
        self.steps = self.c[i]


@pytest.mark.parametrize("kw", [{}, dict(candidate_steps=(1, 2, 4, 6), alpha=0.5, interval=1, warmup=2)])
def test_update_is_sglangs_rule(kw):
    g = np.random.default_rng(0)
    R, rounds = 40, 60
    args = dict(kw)
    cands = args.pop("candidate_steps", (1, 3, 7))
    ref_kw = {k: v for k, v in args.items()}
    pol = EMASteps(
        cands,
        ema_alpha=ref_kw.get("alpha", 0.2),
        update_interval=ref_kw.get("interval", 5),
        warmup_batches=ref_kw.get("warmup", 10),
    )
    refs = [_SGLang(pol.initial, cands, **ref_kw) for _ in range(R)]
    mem = np.tile(pol.initial_memory, (R, 1))
    bias = g.uniform(0, 1, R)  # rows that accept much or little
    for _ in range(rounds):
        k = pol.candidates[mem[:, 0].astype(int)].astype(int)
        j = np.minimum(g.geometric(1 - 0.95 * bias) - 1, k)
        mem = pol.update(mem, RoundFeedback(j, k, np.zeros((R, pol.max_depth))))
        for r, ref in enumerate(refs):
            ref.update(int(j[r]))
        assert [int(pol.candidates[int(i)]) for i in mem[:, 0]] == [ref.steps for ref in refs]
        np.testing.assert_allclose(mem[:, 1], [ref.ema for ref in refs], atol=1e-12)


def test_all_accepted_trajectory_is_exact():
    # draft == target: every draft accepted. 15 rounds at 3 steps (EMA 2.96 > 2.5 at round 15),
    # then 7 steps: T = 15 * 4 + 2 * 8 = 76 tokens in 17 calls and 45 + 14 drafts.
    chain = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])
    sim = st.simulate(chain, 76, EMASteps(), 5, rng=0)
    assert (sim.target_calls == 17).all() and (sim.draft_tokens == 59).all()


def test_kit_checks_the_controller_round():
    assert check_round(EMASteps(), n_samples=300).passed


torch = pytest.importorskip("torch")
from spectheory.decoder.speculative import speculative_generate  # noqa: E402
from spectheory.stopping.runtime import chain_models  # noqa: E402

V, T, B = 4, 30, 600
CHAIN = st.DecodingChain.random(V, concentration=0.5, similarity=0.5, rng=48)
CHAIN0 = st.DecodingChain(CHAIN.target, CHAIN.draft, initial=np.eye(V)[0])
TARGET, DRAFT = chain_models(CHAIN)


def _mean_se(x):
    x = np.asarray(x, dtype=np.float64)
    return x.mean(), x.std(ddof=1) / np.sqrt(x.size)


@pytest.mark.parametrize(
    "policy",
    [EMASteps(), AcceptanceRateK(max_depth=6), UCBGamma((1, 2, 4), cost=0.1), ROCThreshold(0.4, max_depth=6)],
    ids=repr,
)
def test_online_controllers_in_the_decoder_match_monte_carlo(policy):
    res = speculative_generate(TARGET, DRAFT, [[0]] * B, T, gamma=policy.max_depth, policy=policy, seed=17)
    sim = st.simulate(CHAIN0, T, policy, 3000, rng=5)
    for name in ("target_calls", "draft_tokens"):
        (a, sa), (b, sb) = _mean_se(getattr(res.stats, name)), sim.mean_se(name)
        assert abs(a - b) <= 5 * np.hypot(sa, sb), (policy, name, a, b, sa, sb)


def test_one_round_vllm_controller_in_the_decoder_matches_its_exact_value():
    pol = AcceptanceRateK(max_depth=5, window=1, min_history=1)
    res = speculative_generate(TARGET, DRAFT, [[0]] * B, T, gamma=5, policy=pol, seed=3)
    exact = evaluate_policy(CHAIN0, pol, T)
    for name in ("target_calls", "draft_tokens"):
        m, se = _mean_se(getattr(res.stats, name))
        assert abs(m - getattr(exact, name)) <= 5 * se, (name, m, getattr(exact, name), se)


def test_controllers_on_the_shipped_models_are_lossless_at_temperature_zero():
    from spectheory.decoder import load_model

    target, draft = load_model("target"), load_model("draft-tiny")
    prompts = [[1, 2, 3, 4], [5, 6]]
    ref = speculative_generate(target, draft, prompts, 16, 1, temperature=0.0, seed=0)
    for pol in (EMASteps(), AcceptanceRateK(max_depth=6), ROCThreshold(0.4, max_depth=6)):
        res = speculative_generate(
            target, draft, prompts, 16, pol.max_depth, temperature=0.0, policy=pol, seed=0
        )
        assert all(np.array_equal(x, y) for x, y in zip(res.tokens, ref.tokens)), pol

"""The PyTorch speculative decoder: exactness, losslessness, determinism, cache bookkeeping.

The models here are tiny recurrent nets that implement the decoder's model contract with a
real cache (the hidden state after every position; a call at ``start`` resumes from the
state at ``start - 1``), so stale cache entries after a rejection change the logits.
Statistical tests use fixed seeds and a p-value threshold of 1e-6 (about 5 standard errors).
"""

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from scipy import stats as sps  # noqa: E402
from torch import nn  # noqa: E402

from spectheory.decoder import autoregressive_generate, speculative_generate  # noqa: E402
from spectheory.decoder.logits import logits_to_probs, sample_from_uniform  # noqa: E402
from spectheory.decoder.rng import PURPOSE_ACCEPT, uniforms  # noqa: E402
from spectheory.montecarlo import pooled_chisquare  # noqa: E402
from spectheory.verifiers import TokenVerifier  # noqa: E402
from spectheory.verifiers import torch_forms as verify_mod  # noqa: E402

P_MIN = 1e-6  # chi-square p-value threshold, ~5 standard errors


class TinyRNN(nn.Module):
    """Elman RNN of the model contract; ``noise`` perturbs the weights of ``seed``'s model."""

    def __init__(self, vocab=6, hidden=12, seed=0, noise=0.0, noise_seed=1, max_seq_len=64, scale=2.0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.vocab_size, self.max_seq_len, self.hidden = vocab, max_seq_len, hidden
        ws = [
            torch.randn(vocab, hidden, generator=g) * 2,
            torch.randn(hidden, hidden, generator=g) * (1.5 / hidden**0.5),
            torch.randn(hidden, vocab, generator=g) * scale,
        ]
        if noise:
            g2 = torch.Generator().manual_seed(noise_seed)
            ws = [w + noise * w.std() * torch.randn(w.shape, generator=g2) for w in ws]
        self.emb, self.rec, self.out = (nn.Parameter(w) for w in ws)

    def new_cache(self, batch_size, max_len, device=None, dtype=None):
        return torch.zeros(batch_size, max_len, self.hidden, device=device, dtype=dtype or self.emb.dtype)

    def forward(self, ids, cache=None, start=None):
        B, L = ids.shape
        rows = torch.arange(B)
        h = torch.zeros(B, self.hidden, dtype=self.emb.dtype)
        if cache is not None:
            assert int(start.min()) >= 0 and int((start + L).max()) <= cache.shape[1], "write out of cache"
            h = torch.where((start > 0)[:, None], cache[rows, (start - 1).clamp(min=0)], h)
        hs = []
        for i in range(L):
            h = torch.tanh(self.emb[ids[:, i]] + h @ self.rec)
            hs.append(h)
        H = torch.stack(hs, 1)
        if cache is not None:
            cache[rows[:, None], start[:, None] + torch.arange(L)] = H
        return H @ self.out


class Recorder(nn.Module):
    """Wraps a model; records every cached call and the token history the calls wrote."""

    def __init__(self, inner):
        super().__init__()
        self.inner, self.vocab_size, self.max_seq_len = inner, inner.vocab_size, inner.max_seq_len
        self.calls = []

    def new_cache(self, batch_size, max_len, device=None, dtype=None):
        self.history = torch.full((batch_size, max_len), -1, dtype=torch.int64)
        return self.inner.new_cache(batch_size, max_len, device=device, dtype=dtype)

    def forward(self, ids, cache=None, start=None):
        out = self.inner(ids, cache=cache, start=start)
        if cache is not None:
            for b in range(ids.shape[0]):
                self.history[b, int(start[b]) : int(start[b]) + ids.shape[1]] = ids[b]
            self.calls.append((ids.clone(), start.clone(), out.clone(), self.history.clone()))
        return out


def target_and_draft(noise=0.6, vocab=6):
    return TinyRNN(vocab=vocab, seed=0), TinyRNN(vocab=vocab, seed=0, noise=noise)


PROMPTS = [[1, 2, 3], [4], [5, 5], [0, 1, 2, 3, 4, 5, 0]]


def greedy_reference(model, prompt, n):
    """Greedy continuation by uncached forwards over the whole prefix (batched over prompts)."""
    ids = [list(p) for p in prompt] if isinstance(prompt[0], list) else [list(prompt)]
    with torch.no_grad():
        for _ in range(n):
            for x in ids:
                x.append(int(model(torch.tensor([x]))[0, -1].argmax()))
    out = [x[-n:] for x in ids]
    return out if isinstance(prompt[0], list) else out[0]


def test_docstring_models_run_with_ragged_prompts_and_bytes():
    target, draft = target_and_draft()
    res = speculative_generate(target, draft, [b"\x01\x02", np.array([3, 4, 5]), [0]], 5, gamma=2)
    assert [t.shape for t in res.tokens] == [(5,)] * 3
    assert all(t.dtype == np.int64 and t.min() >= 0 and t.max() < 6 for t in res.tokens)


# ------------------------------------------------------------------ greedy, determinism, invariance
@pytest.mark.parametrize(
    "gamma,bonus,verifier", [(1, True, "token"), (4, False, "token"), (7, True, "token"), (3, True, "block")]
)
def test_greedy_equals_autoregressive_greedy(gamma, bonus, verifier):
    target, draft = target_and_draft()
    spec = speculative_generate(
        target, draft, PROMPTS, 20, gamma, temperature=0, bonus=bonus, verifier=verifier
    )
    auto = autoregressive_generate(target, PROMPTS, 20, temperature=0)
    for b, ref in enumerate(greedy_reference(target, PROMPTS, 20)):
        assert spec.tokens[b].tolist() == ref
        assert auto.tokens[b].tolist() == ref
    # the draft disagrees sometimes, so rejections and accepted drafts both happened
    assert 0 < spec.stats.rejections.sum() < spec.stats.target_calls.sum()
    assert spec.stats.accepted.sum() > 0


def test_greedy_float64_and_bfloat16_run():
    target, draft = target_and_draft()
    ref = greedy_reference(target, PROMPTS, 12)
    res = speculative_generate(target, draft, PROMPTS, 12, 3, temperature=0, dtype=torch.float64)
    assert [t.tolist() for t in res.tokens] == ref
    res = speculative_generate(target, draft, PROMPTS, 12, 3, temperature=0.7, dtype=torch.bfloat16)
    assert all(len(t) == 12 for t in res.tokens)


@pytest.mark.parametrize("verifier", ["token", "block"])
def test_seeded_determinism(verifier):
    target, draft = target_and_draft()
    run = lambda seed: speculative_generate(target, draft, PROMPTS, 25, 3, seed=seed, verifier=verifier)  # noqa: E731
    a, b, c = run(5), run(5), run(6)
    assert all(np.array_equal(x, y) for x, y in zip(a.tokens, b.tokens))
    assert not all(np.array_equal(x, y) for x, y in zip(a.tokens, c.tokens))
    assert [x.tolist() for x in a.stats.round_accepted] == [x.tolist() for x in b.stats.round_accepted]


@pytest.mark.parametrize("verifier", ["token", "block"])
def test_batch_invariance(verifier):
    target, draft = target_and_draft()
    seeds = [11, 22, 33, 44]
    full = speculative_generate(target, draft, PROMPTS, 16, 3, seed=seeds, top_k=4, verifier=verifier)
    auto_full = autoregressive_generate(target, PROMPTS, 16, seed=seeds)
    order = [2, 0, 3, 1]
    other = [[3, 3, 3, 3, 3, 3, 3, 3, 3, 3], [2]]
    mixed = speculative_generate(
        target,
        draft,
        [PROMPTS[i] for i in order] + other,
        16,
        3,
        seed=[seeds[i] for i in order] + [1, 2],
        top_k=4,
        verifier=verifier,
    )
    for b in range(4):
        assert np.array_equal(mixed.tokens[order.index(b)], full.tokens[b])
    for b in (1, 3):
        alone = speculative_generate(
            target, draft, [PROMPTS[b]], 16, 3, seed=[seeds[b]], top_k=4, verifier=verifier
        )
        assert np.array_equal(alone.tokens[0], full.tokens[b])
        assert np.array_equal(alone.stats.round_accepted[0], full.stats.round_accepted[b])
        auto_alone = autoregressive_generate(target, [PROMPTS[b]], 16, seed=[seeds[b]])
        assert np.array_equal(auto_alone.tokens[0], auto_full.tokens[b])


# ------------------------------------------------------------------ cache bookkeeping
@pytest.mark.parametrize(
    "gamma,bonus,verifier", [(3, True, "token"), (5, False, "token"), (2, True, "block")]
)
def test_target_logits_equal_uncached_forward_after_rejections(gamma, bonus, verifier):
    target, draft = target_and_draft(noise=1.0)
    rec = Recorder(target)
    res = speculative_generate(rec, draft, PROMPTS, 30, gamma, bonus=bonus, verifier=verifier, seed=3)
    assert res.stats.rejections.sum() >= 10  # rollbacks did happen
    full = [list(p) + t.tolist() for p, t in zip(PROMPTS, res.tokens)]
    with torch.no_grad():  # causal: uncached logits at pos = forward of full[: pos + 1]
        uncached = [target(torch.tensor([f]))[0] for f in full]
    checked = 0
    for ids, start, out, _ in rec.calls:
        for b in range(ids.shape[0]):
            s = int(start[b])
            for i in range(ids.shape[1]):
                pos = s + i
                if pos >= len(full[b]) or ids[b, : i + 1].tolist() != full[b][s : pos + 1]:
                    break  # from here the call feeds drafts that were rejected (or padding)
                torch.testing.assert_close(out[b, i], uncached[b][pos], rtol=1e-5, atol=1e-5)
                checked += 1
    assert checked >= sum(len(f) - 1 for f in full)  # every committed position was checked


def test_cache_state_matches_history_for_both_models():
    target, draft = target_and_draft(noise=1.0)
    rt, rd = Recorder(target), Recorder(draft)
    speculative_generate(rt, rd, PROMPTS, 20, 3, seed=1)
    with torch.inference_mode():  # the recorded tensors are inference tensors
        for rec, model in ((rt, target), (rd, draft)):
            for ids, start, out, hist in rec.calls:
                ends = start + ids.shape[1]
                # causal model: positions past a row's end (unwritten: -1 -> 0) do not matter
                uncached = model(hist[:, : int(ends.max())].clamp(min=0))
                for b in range(ids.shape[0]):
                    assert (hist[b, : int(ends[b])] >= 0).all()  # nothing attended was never written
                    torch.testing.assert_close(
                        out[b], uncached[b, int(start[b]) : int(ends[b])], rtol=1e-5, atol=1e-5
                    )


@pytest.mark.parametrize(
    "gamma,bonus,verifier", [(1, True, "token"), (4, False, "token"), (3, True, "block")]
)
def test_draft_equal_to_target_never_rejects(gamma, bonus, verifier):
    # The draft's laws equal the target's only if the draft is fed exactly the right context
    # after every rollback; any stale or misplaced draft state shows up as rejections.
    target = TinyRNN(seed=0)
    res = speculative_generate(
        target, TinyRNN(seed=0), PROMPTS, 21, gamma, bonus=bonus, verifier=verifier, seed=9
    )
    assert res.stats.rejections.sum() == 0
    for acc, k in zip(res.stats.round_accepted, rounds_k(res.stats.round_tokens, 21, gamma)):
        assert acc.tolist() == k.tolist()


# ------------------------------------------------------------------ counts
def rounds_k(round_tokens, max_new, gamma):
    out = []
    for r in round_tokens:
        before = np.concatenate([[0], np.cumsum(r)[:-1]])
        out.append(np.minimum(gamma, max_new - before))
    return out


@pytest.mark.parametrize(
    "max_new,gamma,bonus,verifier",
    [
        (17, 3, True, "token"),
        (17, 3, False, "token"),
        (1, 5, True, "token"),
        (9, 8, True, "block"),
        (12, 2, False, "block"),
    ],
)
def test_counts_are_consistent(max_new, gamma, bonus, verifier):
    target, draft = target_and_draft(noise=0.8)
    st = speculative_generate(
        target, draft, PROMPTS, max_new, gamma, bonus=bonus, verifier=verifier, seed=2
    ).stats
    ks = rounds_k(st.round_tokens, max_new, gamma)
    for b in range(len(PROMPTS)):
        acc, tok, k = st.round_accepted[b], st.round_tokens[b], ks[b]
        assert tok.sum() == max_new
        assert st.target_calls[b] == len(acc) == len(tok)
        assert st.draft_tokens[b] == k.sum()
        assert (acc <= k).all() and set(np.unique(tok - acc)) <= {0, 1}
        assert st.rejections[b] == (acc < k).sum() <= st.target_calls[b]
        full = acc == k  # a fully accepted round emits a bonus iff allowed and tokens remain
        before = np.concatenate([[0], np.cumsum(tok)[:-1]])
        np.testing.assert_array_equal((tok - acc)[full], (bonus & (k < max_new - before))[full].astype(int))
        np.testing.assert_array_equal((tok - acc)[~full], 1)
        for i in range(gamma):
            assert st.position_checked[b, i] == ((k > i) & (acc >= i)).sum()
            assert st.position_accepted[b, i] == (acc > i).sum()
    s = st.totals()
    assert s["tokens"] == max_new * len(PROMPTS) and s["target_calls"] == st.target_calls.sum()
    m = st.summary()  # the shape of SimulationResult.summary()
    assert m["n_runs"] == len(PROMPTS) and m["target_calls"]["mean"] == st.target_calls.mean()
    assert m["tokens_per_call"]["mean"] == pytest.approx(s["tokens"] / s["target_calls"])
    assert st.tokens_per_call == pytest.approx(s["tokens"] / s["target_calls"])  # the shared names
    np.testing.assert_array_equal(st.tokens, [max_new] * len(PROMPTS))
    hist = st.accepted_counts.sum(0)
    np.testing.assert_allclose(st.accepted_count_law, hist / st.target_calls.sum())
    assert st.mean_se("accepted") == (m["accepted"]["mean"], m["accepted"]["se"])
    json.dumps(st.as_dict())
    assert st.batch_target_calls == max(st.target_calls)


# ------------------------------------------------------------------ losslessness
def exact_two_token_law(target, prompt, **sampling):
    with torch.no_grad():
        first = logits_to_probs(target(torch.tensor([prompt]))[0, -1], **sampling).numpy()
        ctx = torch.tensor([list(prompt) + [y] for y in range(target.vocab_size)])
        second = logits_to_probs(target(ctx)[:, -1], **sampling).numpy()
    return first[:, None] * second


def two_token_chi2_pvalue(tokens, law):
    """Chi-square p-value of the pairs against ``law``; cells expecting < 5 counts are pooled."""
    res = pooled_chisquare(np.array([t[:2] for t in tokens]), law)
    assert res["impossible_samples"] == 0, "a token of probability 0 was emitted"
    return res["pvalue"]


N_LOSSLESS = 6000
PROMPT = [1, 3, 0]


@pytest.mark.parametrize(
    "gamma,bonus,verifier,sampling",
    [
        (1, True, "token", {}),
        (2, False, "token", {"temperature": 0.8, "top_k": 3}),
        (3, True, "token", {"top_p": 0.85}),
        (2, True, "block", {}),
        (1, False, "block", {"temperature": 1.3, "top_k": 3}),
    ],
)
def test_lossless_two_tokens_chi_square(gamma, bonus, verifier, sampling):
    target, draft = TinyRNN(vocab=4, seed=0, scale=0.8), TinyRNN(vocab=4, seed=5, scale=0.8)
    law = exact_two_token_law(target, PROMPT, **sampling)
    res = speculative_generate(
        target,
        draft,
        [PROMPT] * N_LOSSLESS,
        2,
        gamma,
        bonus=bonus,
        verifier=verifier,
        seed=list(range(N_LOSSLESS)),
        **sampling,
    )
    assert res.stats.rejections.sum() > N_LOSSLESS // 4  # the draft really differs
    assert two_token_chi2_pvalue(res.tokens, law) > P_MIN


def test_autoregressive_two_tokens_chi_square():
    target = TinyRNN(vocab=4, seed=0, scale=0.8)
    res = autoregressive_generate(target, [PROMPT] * N_LOSSLESS, 2, top_p=0.9, seed=10**6)
    assert two_token_chi2_pvalue(res.tokens, exact_two_token_law(target, PROMPT, top_p=0.9)) > P_MIN


CORRECT_TOKEN_VERIFY = verify_mod.token_verify


def sqrt_acceptance(target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus):
    """BROKEN: accepts with min(1, target/draft) ** 0.5 (u**2 < ratio)."""
    return CORRECT_TOKEN_VERIFY(target_probs, draft_probs, draft_tokens, k, u_accept**2, u_emit, allow_bonus)


def no_residual(target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus):
    """BROKEN: after a rejection emits from the target instead of the residual."""
    v = CORRECT_TOKEN_VERIFY(target_probs, draft_probs, draft_tokens, k, u_accept, u_emit, allow_bonus)
    t = target_probs.to(torch.float64)[torch.arange(len(k)), v.n_accepted.clamp(max=t_last(target_probs))]
    token = torch.where(v.rejected, sample_from_uniform(t, u_emit), v.next_token)
    return v._replace(next_token=token)


def t_last(x):
    return x.shape[1] - 1


class TorchRuleVerifier(TokenVerifier):
    """Token verification whose torch rule is replaced (the decoder runs ``torch_rule``)."""

    lossless = False

    def __init__(self, fn):
        self.fn, self.name = fn, fn.__name__

    def torch_rule(self, inputs):
        return self.fn(*inputs.tensors())


@pytest.mark.parametrize("broken", [sqrt_acceptance, no_residual])
def test_lossless_check_catches_a_broken_rule(broken):
    target, draft = TinyRNN(vocab=4, seed=0, scale=0.8), TinyRNN(vocab=4, seed=5, scale=0.8)
    res = speculative_generate(
        target,
        draft,
        [PROMPT] * N_LOSSLESS,
        2,
        1,
        seed=list(range(N_LOSSLESS)),
        verifier=TorchRuleVerifier(broken),
    )
    assert two_token_chi2_pvalue(res.tokens, exact_two_token_law(target, PROMPT)) < P_MIN


# ------------------------------------------------------------------ rules with hand-picked uniforms
def f64(x):
    return torch.tensor(x, dtype=torch.float64)


def test_token_rule_with_hand_picked_uniforms():
    # K = 2 slots; target/draft ratio at the drafted tokens: slot 0 -> 0.5/0.8, slot 1 -> 0.2/0.4
    t = f64([[[0.5, 0.5, 0.0], [0.8, 0.2, 0.0], [0.1, 0.1, 0.8]]])
    d = f64([[[0.2, 0.8, 0.0], [0.2, 0.4, 0.4]]])
    x = torch.tensor([[1, 1]])
    k, yes = torch.tensor([2]), torch.tensor([True])
    rule = verify_mod.token_verify
    # accepted at slot 0 (0.6 < 0.625), rejected at slot 1 (0.55 >= 0.5): residual [0.6, 0, 0]
    n, tok, rej = rule(t, d, x, k, f64([[0.6, 0.55]]), f64([0.99]), yes)
    assert (n.item(), tok.item(), rej.item()) == (1, 0, True)
    # rejected at slot 0 (0.7 >= 0.625): residual norm([0.3, 0, 0]) -> token 0; slot 1 never read
    assert rule(t, d, x, k, f64([[0.7, 0.0]]), f64([0.5]), yes)[:2] == (0, 0)
    # all accepted: bonus from target[2] = [0.1, 0.1, 0.8] by inverse CDF
    assert [v.item() for v in rule(t, d, x, k, f64([[0.1, 0.3]]), f64([0.15]), yes)] == [2, 1, False]
    assert [v.item() for v in rule(t, d, x, k, f64([[0.1, 0.3]]), f64([0.25]), yes)] == [2, 2, False]
    # no bonus allowed: nothing emitted
    assert [v.item() for v in rule(t, d, x, k, f64([[0.1, 0.3]]), f64([0.25]), ~yes)] == [2, -1, False]
    # k = 1: slot 1 is padding, a fully accepted round ends after slot 0, bonus from target[1]
    assert [v.item() for v in rule(t, d, x, torch.tensor([1]), f64([[0.1, 0.9]]), f64([0.9]), yes)] == [
        1,
        1,
        False,
    ]
    # target(x) = 0 is never accepted, target(x) >= draft(x) always
    t0, d0 = f64([[[0.0, 1.0], [0.5, 0.5]]]), f64([[[0.5, 0.5]]])
    assert rule(t0, d0, torch.tensor([[0]]), torch.tensor([1]), f64([[1e-300]]), f64([0.0]), yes)[:2] == (
        0,
        1,
    )
    assert rule(t0, d0, torch.tensor([[1]]), torch.tensor([1]), f64([[1 - 2**-53]]), f64([0.0]), yes)[0] == 1
    # target == draft with a (numerically) empty residual: falls back to target, no NaN
    same = f64([[[0.3, 0.7]]])
    out = rule(
        torch.cat([same, same], 1),
        same,
        torch.tensor([[0]]),
        torch.tensor([1]),
        f64([[1.0]]),
        f64([0.5]),
        yes,
    )
    assert out[1].item() == 1


def grid(n):
    return (torch.arange(n, dtype=torch.float64) + 0.5) / n


@pytest.mark.parametrize("rule,expect", [("token", 10 / 9), ("block", 11 / 9)])
def test_block_paper_example_by_integrating_over_uniforms(rule, expect):
    # Sun et al.: binary, context-free target (1/3, 2/3), draft (2/3, 1/3), gamma = 2.
    # E[accepted] = sum over drafts x of draft(x) * (fraction of a uniform grid accepting).
    n = 200
    u1, u2 = torch.meshgrid(grid(n), grid(n), indexing="ij")
    u = torch.stack([u1.ravel(), u2.ravel()], 1)
    B = u.shape[0]
    t = f64([1 / 3, 2 / 3]).expand(B, 3, 2)
    d = f64([2 / 3, 1 / 3]).expand(B, 2, 2)
    total = 0.0
    for x1 in range(2):
        for x2 in range(2):
            x = torch.tensor([x1, x2]).expand(B, 2)
            n_acc = getattr(verify_mod, f"{rule}_verify")(
                t, d, x, torch.full((B,), 2), u, grid(B), torch.ones(B, dtype=torch.bool)
            ).n_accepted
            total += float(d[0, 0, x1] * d[0, 1, x2]) * n_acc.double().mean().item()
    assert abs(total - expect) < 4 / n  # grid error: at most 1/n per uniform and per threshold


def test_block_first_token_law_is_target_by_integration():
    # First emitted token of a block round: X_1 if tau >= 1, else the correction, whose law
    # for tau = 0 is normalize(max(target_1 - draft_1, 0)) whatever the drafts. Its law
    # P(tau >= 1, X_1 = x) + P(tau = 0) * correction(x) must be target_1. P(tau >= 1 | X) is
    # integrated on a (u_1, u_2) grid (error <= 1/n per threshold); the correction's law is
    # read off a sweep of u_emit over a grid.
    n = 200
    u = torch.stack([a.ravel() for a in torch.meshgrid(grid(n), grid(n), indexing="ij")], 1)
    B = u.shape[0]
    t = f64([[0.2, 0.5, 0.3], [0.6, 0.1, 0.3], [0.3, 0.3, 0.4]]).expand(B, 3, 3)
    d = f64([[0.5, 0.25, 0.25], [0.2, 0.2, 0.6]]).expand(B, 2, 3)
    k, yes = torch.full((B,), 2), torch.ones(B, dtype=torch.bool)
    law = np.zeros(3)
    for x1 in range(3):
        for x2 in range(3):
            weight = float(d[0, 0, x1] * d[0, 1, x2])
            x = torch.tensor([x1, x2]).expand(B, 2)
            v = verify_mod.block_verify(t, d, x, k, u, grid(B), yes)
            law[x1] += weight * (v.n_accepted > 0).double().mean().item()
            none = u[v.n_accepted == 0][:1]  # a (u_1, u_2) with tau = 0, if any
            if len(none):
                none = none.expand(B, 2)
                sweep = verify_mod.block_verify(t, d, x, k, none, grid(B), yes).next_token
                law += (
                    weight
                    * (v.n_accepted == 0).double().mean().item()
                    * np.bincount(sweep.numpy(), minlength=3)
                    / B
                )
    np.testing.assert_allclose(law, [0.2, 0.5, 0.3], atol=3 / n)


# ------------------------------------------------------------------ sampling and uniforms
def test_logits_to_probs_matches_definitions():
    z = torch.tensor([[1.0, 3.0, 2.0, 2.0, -1.0]])
    np.testing.assert_allclose(
        logits_to_probs(z, 0.5)[0].numpy(), torch.softmax(z.double() / 0.5, -1)[0].numpy()
    )
    assert logits_to_probs(z, 0.0).tolist() == [[0.0, 1.0, 0.0, 0.0, 0.0]]
    top2 = logits_to_probs(z, 1.0, top_k=2)[0].numpy()  # k-th largest is tied: ties kept
    e = np.exp([3.0, 2.0, 2.0])
    np.testing.assert_allclose(top2, [0, e[0], e[1], e[2], 0] / e.sum())
    full = torch.softmax(z.double(), -1)[0].numpy()  # ~ [.08, .61, .22, .22, .01] after sorting
    p = logits_to_probs(z, 1.0, top_p=0.7)[0].numpy()  # mass before: 0, .61 (<.7), .83 -> keep 2
    kept = np.array([0, 1, 1, 0, 0]) if full[2] >= full[3] else np.array([0, 1, 0, 1, 0])
    np.testing.assert_allclose(p, kept * full / (kept * full).sum())
    assert logits_to_probs(z.to(torch.bfloat16), 1.0).dtype == torch.float64


def test_inverse_cdf_is_exact_on_a_grid_and_skips_zeros():
    law = f64([0.1, 0.0, 0.25, 0.0, 0.65])
    n = 100000
    x = sample_from_uniform(law.expand(n, 5), grid(n))
    np.testing.assert_allclose(np.bincount(x.numpy(), minlength=5) / n, law.numpy(), atol=2 / n)
    edge = sample_from_uniform(law.expand(3, 5), f64([0.0, 1 - 2**-53, 0.34]))
    assert edge.tolist() == [0, 4, 2]
    # u = 1 (what a float32 uniform near 1 rounds to): a token of positive mass, never the
    # zero-mass tail; a row without mass gives the last token
    u_top = f64([1.0])
    unnormalised = f64([[1.0, 2.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    assert sample_from_uniform(unnormalised, u_top.expand(2)).tolist() == [1, 3]


@settings(max_examples=300, deadline=None)
@given(st.floats(min_value=1e-300, max_value=1e300))
def test_the_largest_uniform_times_a_total_stays_below_it(total):
    # why sample_from_uniform's clamp of u at 1 - 2^-53 keeps u * total below every normal total
    u = f64([1.0 - 2.0**-53])
    assert float(u * total) < total


def test_uniforms_are_uniform_and_independent():
    seeds = torch.arange(400)[:, None]
    u = uniforms(seeds, torch.arange(500)[None, :], PURPOSE_ACCEPT).numpy()
    assert ((u > 0) & (u < 1)).all()
    m = u.size
    assert abs(u.mean() - 0.5) < 5 * np.sqrt(1 / 12 / m)  # 5 standard errors
    assert sps.chisquare(np.bincount((u * 50).astype(int).ravel(), minlength=50)).pvalue > P_MIN
    r = np.corrcoef(u[:, :-1].ravel(), u[:, 1:].ravel())[0, 1]  # consecutive counters
    assert abs(r) < 5 / np.sqrt(m)
    r = np.corrcoef(u[:-1].ravel(), u[1:].ravel())[0, 1]  # consecutive seeds
    assert abs(r) < 5 / np.sqrt(m)
    assert np.unique(u).size == u.size


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_uniforms_identical_on_cpu_and_cuda():
    seeds = torch.arange(64)[:, None]
    cpu = uniforms(seeds, torch.arange(32)[None, :], 3)
    gpu = uniforms(seeds.cuda(), torch.arange(32, device="cuda")[None, :], 3).cpu()
    assert torch.equal(cpu, gpu)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "kwargs,word",
    [
        ({"gamma": 0}, "gamma"),
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"temperature": -0.1}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),
        ({"top_k": 0}, "top_k"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
        ({"prompts": [[1], []]}, "empty prompt"),
        ({"prompts": []}, "prompts"),
        ({"prompts": [[1, 6]]}, "prompts[0]"),
        ({"prompts": b"\x01\x02"}, "prompts"),
        ({"max_new_tokens": 62}, "max_seq_len"),
        ({"verifier": "tree"}, "verifier"),
        ({"seed": [1, 2]}, "seed"),
        ({"seed": -1}, "seed"),
        ({"draft": TinyRNN(vocab=7)}, "vocabulary"),
    ],
)
def test_bad_input_raises_value_error(kwargs, word):
    target, draft = target_and_draft()
    args = dict(target=target, draft=draft, prompts=[[1, 2, 3]], max_new_tokens=5, gamma=2)
    args.update(kwargs)
    with pytest.raises(ValueError, match=word.replace("[", r"\[").replace("]", r"\]")):
        speculative_generate(**args)


def test_autoregressive_bad_input():
    target, _ = target_and_draft()
    with pytest.raises(ValueError, match="max_new_tokens"):
        autoregressive_generate(target, [[1]], 0)
    with pytest.raises(ValueError, match="temperature"):
        autoregressive_generate(target, [[1]], 3, temperature=-1)


# ------------------------------------------------------------------ the project's own models
def small_gpt(seed, n_layer=2, n_embd=32, sharpen=8.0):
    """A random byte-level GPT; embeddings scaled up so next-byte laws are far from uniform."""
    from spectheory.decoder.model import GPT, GPTConfig

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPT(GPTConfig(n_layer=n_layer, n_head=2, n_embd=n_embd, block_size=96)).eval()
    with torch.no_grad():
        model.wte.weight.mul_(sharpen)
    return model


def byte_ngram(order=2):
    from spectheory.decoder.ngram_model import NGramModel

    text = b"def f(x):\n    return x + 1\n\nclass A:\n    pass\n" * 3
    return NGramModel.from_bytes(np.frombuffer(text, dtype=np.uint8), order=order, alpha=0.5)


BYTE_PROMPTS = [b"def ", b"class A", b"\n", b"import os\nimport sys\n"]


@pytest.mark.parametrize("draft_kind,verifier", [("gpt", "token"), ("ngram", "token"), ("gpt", "block")])
def test_gpt_target_greedy_and_cached_logits(draft_kind, verifier):
    target = small_gpt(0).double()
    draft = small_gpt(1, n_layer=1, n_embd=16).double() if draft_kind == "gpt" else byte_ngram()
    rec = Recorder(target)
    res = speculative_generate(rec, draft, BYTE_PROMPTS, 24, 4, temperature=0, verifier=verifier)
    full = [list(p) + t.tolist() for p, t in zip(BYTE_PROMPTS, res.tokens)]
    assert [t.tolist() for t in res.tokens] == greedy_reference(target, [list(p) for p in BYTE_PROMPTS], 24)
    assert res.stats.rejections.sum() > 0
    with torch.no_grad():
        for ids, start, out, _ in rec.calls:  # used logits equal the uncached forward
            for b in range(ids.shape[0]):
                s = int(start[b])
                ok = [i for i in range(ids.shape[1]) if ids[b, : i + 1].tolist() == full[b][s : s + i + 1]]
                if ok:
                    expect = target(torch.tensor([full[b][: s + max(ok) + 1]]))[0, s:]
                    torch.testing.assert_close(out[b, : max(ok) + 1], expect, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("kind", ["gpt", "ngram"])
def test_own_model_as_its_own_draft_never_rejects(kind):
    import copy

    target = small_gpt(0).double() if kind == "gpt" else byte_ngram(order=3)
    res = speculative_generate(target, copy.deepcopy(target), BYTE_PROMPTS, 20, 3, seed=4)
    assert res.stats.rejections.sum() == 0 and res.stats.accepted.sum() == res.stats.draft_tokens.sum()


def test_gpt_batch_invariance_float32():
    target, draft = small_gpt(0), small_gpt(1, n_layer=1, n_embd=16)
    seeds = [5, 6, 7, 8]
    full = speculative_generate(target, draft, BYTE_PROMPTS, 16, 3, seed=seeds, top_p=0.95)
    for b in (0, 3):
        alone = speculative_generate(target, draft, [BYTE_PROMPTS[b]], 16, 3, seed=[seeds[b]], top_p=0.95)
        assert np.array_equal(alone.tokens[0], full.tokens[b])


# ------------------------------------------------------------------ rule-level losslessness, property


def random_law(rng, V):
    w = rng.dirichlet(np.full(V, 0.7))
    kind = rng.integers(4)
    if kind == 1:
        w[rng.random(V) < 0.4] = 0.0  # zeros
    elif kind == 2:
        w = np.eye(V)[rng.integers(V)]  # one-hot
    if w.sum() == 0:
        w[rng.integers(V)] = 1.0
    return w / w.sum()


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), same=st.booleans(), verifier=st.sampled_from(["token", "block"]))
def test_one_slot_rule_emits_the_target_law(seed, same, verifier):
    # With one draft slot and no bonus, the emitted token (accepted draft or correction) has
    # law target exactly; integrate u_accept and u_emit on grids (error <= 1/n per term).
    rng = np.random.default_rng(seed)
    V, n = 5, 2048
    target = random_law(rng, V)
    draft = target.copy() if same else random_law(rng, V)
    t = f64(np.stack([target, target])).expand(n, 2, V)
    d = f64(draft[None]).expand(n, 1, V)
    rule = getattr(verify_mod, f"{verifier}_verify")
    law = np.zeros(V)
    for x in np.flatnonzero(draft > 0):
        v = rule(
            t,
            d,
            torch.full((n, 1), int(x)),
            torch.ones(n, dtype=torch.int64),
            grid(n)[:, None],
            grid(n),
            torch.zeros(n, dtype=torch.bool),
        )
        acc = v.n_accepted.double().mean().item()
        law[x] += draft[x] * acc
        rejected = v.next_token[v.n_accepted == 0]
        assert (v.next_token[v.n_accepted == 1] == -1).all()  # no bonus: nothing after acceptance
        if len(rejected):  # rejected rows saw a grid of u_emit: their token counts give the correction
            sweep = rule(
                t,
                d,
                torch.full((n, 1), int(x)),
                torch.ones(n, dtype=torch.int64),
                torch.ones(n, 1, dtype=torch.float64) * (1 - 2**-53),
                grid(n),
                torch.zeros(n, dtype=torch.bool),
            ).next_token
            law += draft[x] * (1 - acc) * np.bincount(sweep.numpy(), minlength=V) / n
    np.testing.assert_allclose(law, target, atol=3 * V / n)

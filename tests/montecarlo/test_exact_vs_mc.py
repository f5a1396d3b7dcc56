"""Exact expectations against Monte Carlo, and against a brute-force enumeration of rounds.

Monte Carlo bounds: every mean is compared at 5 standard errors (|z| < 5, a false failure about
once in 1.7 million per statistic); histograms of accepted counts use a chi-square (Hotelling)
test with p-value threshold 1e-6. Seeds are fixed.

The brute force below enumerates every draft path of every round (V**k of them) and is
independent of spectheory.exact.expectations (which uses a phase recursion over accepted counts).
"""

import itertools

import numpy as np
import pytest
from scipy import stats

import spectheory as st
from spectheory.montecarlo import simulate
from spectheory.verifiers import TokenVerifier


class UnfusedToken(TokenVerifier):
    """Token verification through the simulator's generic path (no fused fast path)."""

    name = "token_unfused"

    def fused_round(self, inputs, rng):
        return NotImplemented


Z_MAX = 5.0  # Monte Carlo tolerance in standard errors
P_MIN = 1e-6  # chi-square p-value threshold


# ---------------------------------------------------------------- brute force
def brute_force(chain, T, gamma, bonus):
    """Exact expected counters by backward recursion over (position, state), enumerating
    every draft path of a round and every residual / bonus token.

    Returns a dict with target_calls, rejections, draft_tokens, accepted and ``counts``
    (expected number of rounds accepting j drafts, j = 0..gamma).
    """
    S, V, g = chain.n_states, chain.vocab_size, gamma
    nstat = 4 + g + 1
    W = np.zeros((T + 1, S, nstat))
    ns = chain.next_state

    def kern(n):
        return chain.kernels(min(n, T - 1))

    for n in range(T - 1, -1, -1):
        k = min(g, T - n)
        paths = np.array(list(itertools.product(range(V), repeat=k)))  # [P, k]
        P = paths.shape[0]
        for s in range(S):
            states = np.empty((P, k + 1), dtype=int)
            states[:, 0] = s
            q = np.ones(P)
            a = np.empty((P, k))
            for i in range(k):
                tk, dk = kern(n + i)
                x = paths[:, i]
                si = states[:, i]
                q *= dk[si, x]
                with np.errstate(divide="ignore", invalid="ignore"):
                    a[:, i] = np.where(dk[si, x] > 0, np.minimum(1.0, tk[si, x] / dk[si, x]), 0.0)
                states[:, i + 1] = ns[si, x]
            total = np.zeros(nstat)
            survive = q.copy()
            for j in range(k + 1):
                stat = np.zeros(nstat)
                stat[0], stat[2], stat[3], stat[4 + j] = 1, k, j, 1
                sj = states[:, j]
                if j < k:
                    w = survive * (1 - a[:, j])
                    stat[1] = 1
                    tk, dk = kern(n + j)
                    excess = np.maximum(tk[sj] - dk[sj], 0.0)
                    mass = excess.sum(1, keepdims=True)
                    law = np.where(mass > 1e-15, excess / np.where(mass > 0, mass, 1), tk[sj])
                    nxt = W[n + j + 1][ns[sj]]  # [P, V, nstat]
                    total += w.sum() * stat + np.einsum("p,pv,pvk->k", w, law, nxt)
                    survive = survive * a[:, j]
                else:
                    w = survive
                    if bonus and n + k < T:
                        tk, _ = kern(n + k)
                        nxt = W[n + k + 1][ns[sj]]
                        total += w.sum() * stat + np.einsum("p,pv,pvk->k", w, tk[sj], nxt)
                    else:
                        total += w.sum() * stat + w @ W[n + k][sj]
            W[n, s] = total
    res = chain.initial @ W[0]
    return {
        "target_calls": res[0],
        "rejections": res[1],
        "draft_tokens": res[2],
        "accepted": res[3],
        "counts": res[4:],
    }


def exact_values(chain, T, gamma, bonus):
    """Exact expectations from spectheory.exact.expectations, in the form of :func:`brute_force`."""
    res = chain.protocol(T, gamma, bonus=bonus)
    calls = res.target_calls
    law = np.asarray(res.accepted_count_law)
    counts = law * calls
    return {
        "target_calls": calls,
        "rejections": res.rejections,
        "draft_tokens": res.draft_tokens,
        "accepted": float(counts @ np.arange(gamma + 1)),
        "counts": counts,
    }


# ------------------------------------------------------------------ helpers
def z_score(samples, expected):
    samples = np.asarray(samples, dtype=float)
    se = samples.std(ddof=1) / np.sqrt(samples.size)
    diff = samples.mean() - expected
    if se == 0:
        return 0.0 if abs(diff) < 1e-9 else np.inf
    return diff / se


def hotelling_pvalue(per_run_counts, expected_counts):
    """Chi-square test that i.i.d. per-run count vectors have the given mean.

    Rounds within a run are dependent and their number is random, so the pooled histogram
    is not multinomial; runs are i.i.d., so N * dbar' Cov^+ dbar ~ chi2(rank) for large N.
    """
    d = np.asarray(per_run_counts, dtype=float) - expected_counts
    N = d.shape[0]
    dbar = d.mean(0)
    cov = np.cov(d, rowvar=False) / N
    w, U = np.linalg.eigh(cov)
    keep = w > 1e-10 * max(w.max(), 1e-300)
    proj = U[:, keep].T @ dbar
    null = U[:, ~keep].T @ dbar
    if np.any(np.abs(null) > 1e-8):  # a deviation along a direction that never varies
        return 0.0
    stat = float(np.sum(proj**2 / w[keep]))
    return float(stats.chi2.sf(stat, keep.sum()))


def _ngram_chain(V, rng):
    g = np.random.default_rng(rng)
    tc = g.integers(0, 6, (V, V, V)).astype(float)
    dc = tc + g.integers(0, 4, (V, V, V))
    return st.DecodingChain.ngram(tc, dc, smoothing=0.5)


# ---------------------------------------------------- brute force vs analysis
TINY = {
    "homogeneous": (lambda: st.DecodingChain.random(3, concentration=0.6, rng=1), 6),
    "inhomogeneous": (lambda: st.DecodingChain.random(2, n_states=3, horizon=7, concentration=0.5, rng=2), 7),
    "ngram2": (lambda: _ngram_chain(2, 3), 6),
    "iid_zeros": (lambda: st.DecodingChain.iid([0.5, 0.0, 0.5], [0.2, 0.5, 0.3]), 5),
}


def test_brute_force_matches_theorem1_and_closed_form():
    # Theorem 1 (bonus=False): E[rejections] = sum of the TV profile, for any gamma
    for name, (make, T) in TINY.items():
        chain = make()
        for gamma in (1, 2, 4):
            bf = brute_force(chain, T, gamma, bonus=False)
            np.testing.assert_allclose(bf["rejections"], chain.tv_profile(T).sum(), rtol=1e-12, err_msg=name)
    # one round with k = 1 on an i.i.d. chain: accepted with probability alpha = 1 - TV
    chain = st.DecodingChain.iid([0.3, 0.7], [0.6, 0.4])
    alpha = float(st.acceptance_rate([0.3, 0.7], [0.6, 0.4]))
    bf = brute_force(chain, 1, 1, bonus=True)
    np.testing.assert_allclose(bf["counts"], [1 - alpha, alpha], rtol=1e-12)
    # never-rejecting chain: rounds of gamma + 1 tokens (bonus) -> T / (gamma + 1) calls
    same = st.DecodingChain.iid([0.3, 0.7], [0.3, 0.7])
    bf = brute_force(same, 8, 3, bonus=True)
    np.testing.assert_allclose([bf["target_calls"], bf["draft_tokens"], bf["rejections"]], [2, 6, 0])


@pytest.mark.parametrize("name", sorted(TINY))
def test_analysis_matches_brute_force(name):
    make, T = TINY[name]
    chain = make()
    for gamma, bonus in itertools.product((1, 2, 4), (True, False)):
        bf = brute_force(chain, T, gamma, bonus)
        ex = exact_values(chain, T, gamma, bonus)
        for key in ("target_calls", "rejections", "draft_tokens", "accepted", "counts"):
            np.testing.assert_allclose(
                ex[key], bf[key], rtol=1e-10, atol=1e-12, err_msg=f"{name} gamma={gamma} bonus={bonus} {key}"
            )


# ----------------------------------------------------------- exact vs Monte Carlo
def _check_against(res, ex, label):
    for key in ("target_calls", "rejections", "draft_tokens", "accepted"):
        z = z_score(getattr(res, key), ex[key])
        assert abs(z) < Z_MAX, (
            f"{label} {key}: MC {getattr(res, key).mean():.5f} vs exact {ex[key]:.5f}, z={z:.2f}"
        )
    p = hotelling_pvalue(res.accepted_counts, ex["counts"])
    assert p > P_MIN, f"{label} accepted-count histogram: p={p:.2e}"


@pytest.mark.parametrize("name", sorted(TINY))
def test_monte_carlo_matches_brute_force_tiny(name):
    make, T = TINY[name]
    chain = make()
    for i, (gamma, bonus) in enumerate(itertools.product((1, 3), (True, False))):
        res = simulate(chain, T, gamma, 4000, rng=100 + i, bonus=bonus)
        _check_against(res, brute_force(chain, T, gamma, bonus), f"{name} gamma={gamma} bonus={bonus}")


CHAINS = {
    # random homogeneous first-order chain, V = 8
    "homogeneous": (lambda: st.DecodingChain.random(8, concentration=0.5, rng=11), 30),
    # the setting of Yin et al.'s simulation: 7 states, non-stationary kernels, T = 50
    "inhomogeneous": (lambda: st.DecodingChain.random(7, horizon=50, concentration=1.0, rng=12), 50),
    # order-2 n-gram over 3 tokens (9 states)
    "ngram2": (lambda: _ngram_chain(3, 13), 25),
}


@pytest.mark.parametrize("name", sorted(CHAINS))
@pytest.mark.parametrize("gamma", [1, 3, 8])
def test_monte_carlo_matches_exact(name, gamma):
    make, T = CHAINS[name]
    chain = make()
    for bonus in (True, False):
        res = simulate(chain, T, gamma, 3000, rng=1000 * gamma + bonus, bonus=bonus)
        _check_against(res, exact_values(chain, T, gamma, bonus), f"{name} gamma={gamma} bonus={bonus}")


@pytest.mark.parametrize("name", sorted(CHAINS))
def test_theorem1_rejections_equal_tv_sum(name):
    # needs only tv_profile: E[rejections | bonus=False] = sum_n E[TV], for every gamma (5 SE)
    make, T = CHAINS[name]
    chain = make()
    target = chain.tv_profile(T).sum()
    for gamma in (1, 3, 8):
        res = simulate(chain, T, gamma, 3000, rng=7 + gamma, bonus=False)
        z = z_score(res.rejections, target)
        assert abs(z) < Z_MAX, (gamma, res.rejections.mean(), target, z)


def test_generic_verifier_path_matches_exact():
    # the generic path (callable verifier) against the brute force, independently of the fast path
    make, T = TINY["inhomogeneous"]
    chain = make()
    res = simulate(chain, T, 3, 4000, rng=5, bonus=True, verifier=UnfusedToken())
    _check_against(res, brute_force(chain, T, 3, True), "generic path")


def test_tests_can_fail():
    # the same checks reject a wrong exact value (rejections off by 3%) and a wrong histogram
    make, T = CHAINS["homogeneous"]
    chain = make()
    res = simulate(chain, T, 3, 3000, rng=1, bonus=False)
    target = chain.tv_profile(T).sum()
    assert abs(z_score(res.rejections, 1.03 * target)) > Z_MAX
    counts = res.accepted_counts.mean(0)
    shifted = counts + np.array([0.3, -0.3, 0.0, 0.0])
    assert hotelling_pvalue(res.accepted_counts, shifted) < P_MIN

"""Naive HSD in the real decoder (several target calls a round): its tokens follow naive HSD's exact
law -- the bias included -- and its target calls the exact expectation, within 5 SE."""

from fractions import Fraction as F

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _helpers import assert_mean_within_se  # noqa: E402

from spectheory.decoder.hsd_decode import naive_hsd_generate  # noqa: E402
from spectheory.decoder.vocab import TokenTableModel  # noqa: E402
from spectheory.montecarlo import pooled_chisquare  # noqa: E402
from spectheory.verifiers.hsd_naive import naive_hsd_round_law, naive_hsd_round_stats  # noqa: E402
from spectheory.verifiers.round_laws import exact_round_law, generation_law, target_law  # noqa: E402

P_MIN = 1e-6  # chi-square p-value threshold, about 5 SE


def _model(table):
    with np.errstate(divide="ignore"):
        return TokenTableModel(
            torch.log(torch.tensor(np.asarray(table, dtype=np.float64))), range(len(table))
        )


def _exact(T, t, d, V, gamma, clever=False):
    """The law of the first ``T`` new tokens, and the expected target calls, of a ``T``-token generation."""
    if clever:
        law = generation_law(lambda c, k: exact_round_law("hsd_listing", t, d, V, k, c), gamma, T, T)
        return law, None

    def calls(c):
        n = len(c)
        if n >= T:
            return F(0)
        k = min(gamma, T - n)
        out = naive_hsd_round_stats(t, d, V, k, c)["target_calls"]
        for e, w in naive_hsd_round_law(t, d, V, k, c).items():
            out += w * calls(c + e[: T - n])
        return out

    return generation_law(lambda c, k: naive_hsd_round_law(t, d, V, k, c), gamma, T, T), calls(())


def _cells(law, V, T):
    arr = np.zeros((V,) * T)
    for z, w in law.items():
        arr[z] = float(w)
    return arr


SUN_P, SUN_Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]


def test_decoder_reproduces_naive_hsds_bias_and_calls_on_suns_example():
    """gamma = 3, 4 new tokens: P(first two = (1, 0)) = 4/27 (Theorem 4), not the target's 2/9."""
    t, d = (lambda c: SUN_P), (lambda c: SUN_Q)
    n, T = 2000, 4
    target, draft = _model([[1 / 3, 2 / 3]] * 2), _model([[2 / 3, 1 / 3]] * 2)
    res = naive_hsd_generate(target, draft, [[0]] * n, T, gamma=3, seed=11)
    X = np.array(res.tokens)
    assert X.shape == (n, T)
    law, calls = _exact(T, t, d, 2, 3)
    assert sum(w for z, w in law.items() if z[:2] == (1, 0)) == F(4, 27)
    hits = (X[:, :2] == [1, 0]).all(1)
    assert_mean_within_se(hits, 4 / 27, "P(first two = (1, 0))")
    assert abs(hits.mean() - 2 / 9) > 5 * hits.std(ddof=1) / np.sqrt(n)  # the target's value is rejected
    chi = pooled_chisquare(X, _cells(law, 2, T))
    assert chi["impossible_samples"] == 0 and chi["pvalue"] > P_MIN
    assert pooled_chisquare(X, _cells(target_law(t, 2, T), 2, T))["pvalue"] < P_MIN
    s = res.stats
    assert_mean_within_se(s.target_calls, float(calls), "target calls")  # 47/27 + P(a second round)
    assert s.batch_target_calls == int(s.target_calls.sum()) > sum(len(a) for a in s.round_accepted)
    assert (s.draft_tokens == s.target_calls + 2).all()  # k = 3 then 1: sum k = rounds + 2, one per pass
    assert s.verifier == "hsd_naive"


def test_guards():
    m = _model([[0.5, 0.5]] * 2)
    for kwargs, word in (({"gamma": 0}, "gamma"), ({"clever": 1}, "clever"), ({"seed": [1, 2]}, "seed")):
        args = {"gamma": 2, **kwargs}
        with pytest.raises(ValueError, match=word):
            naive_hsd_generate(m, m, [[0]], 3, **args)
    with pytest.raises(ValueError, match="prompts"):
        naive_hsd_generate(m, m, [], 3, gamma=2)


@pytest.mark.slow
@pytest.mark.parametrize("clever", [False, True])
def test_decoder_follows_the_exact_law_on_a_first_order_chain(clever):
    """A context-dependent 3-token chain, gamma = 2, 3 new tokens: the law of naive HSD (or of the
    listing, clever=True), and the expected target calls."""
    rng = np.random.default_rng(4)
    P, Q = rng.dirichlet(np.ones(3), size=3), rng.dirichlet(np.ones(3), size=3)
    Q[1, 2] = 0
    Q /= Q.sum(1, keepdims=True)
    t, d = (lambda c: list(P[c[-1]])), (lambda c: list(Q[c[-1]]))
    tp, dp = (lambda c: t((0,) + c)), (lambda c: d((0,) + c))
    n, T = 4000, 3
    res = naive_hsd_generate(_model(P), _model(Q), [[0]] * n, T, gamma=2, clever=clever, seed=5)
    law, calls = _exact(T, tp, dp, 3, 2, clever)
    chi = pooled_chisquare(np.array(res.tokens), _cells(law, 3, T))
    assert chi["impossible_samples"] == 0 and chi["pvalue"] > P_MIN
    if clever:
        assert (res.stats.target_calls == [len(a) for a in res.stats.round_accepted]).all()
    else:
        assert_mean_within_se(res.stats.target_calls, float(calls), "target calls")

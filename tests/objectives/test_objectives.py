"""The draft-objective lab (issue 26, docs/draft_objectives.md): the multi-step objective equals
the exact engine, its derived gradient equals torch autograd and finite differences of the
exact engine, each fit minimises its own objective over the family, and the fitted drafts'
exact values agree with Monte Carlo within 5 SE."""

import numpy as np
import pytest

import spectheory as st
from spectheory.objectives import (
    DIVERGENCES,
    TiedDraft,
    context_chain,
    divergence,
    expected_calls_gradient,
    fit_draft,
    state_weights,
)

torch = pytest.importorskip("torch")
from spectheory.objectives import expected_calls_torch  # noqa: E402


def _chains():
    base = st.DecodingChain.random(4, n_states=5, concentration=0.7, similarity=0.3, rng=1)
    K = np.random.default_rng(0).dirichlet(np.ones(5), size=(5, 4))
    soft = st.DecodingChain(base.target, base.draft, base.initial, K)
    return [base, soft, st.DecodingChain.random(3, concentration=0.4, rng=2)]


@pytest.mark.parametrize("bonus", [True, False])
@pytest.mark.parametrize("gamma", [1, 2, 4])
def test_torch_recursion_and_adjoint_gradient_match_engine_and_autograd(gamma, bonus):
    for chain in _chains():
        q = torch.tensor(np.array(chain.draft), requires_grad=True)
        calls = expected_calls_torch(chain, q, 9, gamma, bonus)
        assert abs(calls.item() - chain.protocol(9, gamma, bonus=bonus).target_calls) < 1e-12
        calls.backward()
        adj = expected_calls_gradient(chain, 9, gamma, bonus)
        np.testing.assert_allclose(adj, q.grad.numpy(), atol=1e-12, rtol=0)


@pytest.mark.parametrize("bonus", [True, False])
def test_gradient_matches_finite_differences_of_the_exact_engine(bonus):
    """Directional derivatives on the simplex (rows stay laws), the engine recomputed from scratch."""
    rng = np.random.default_rng(3)
    for chain in _chains():
        T, g = 8, 3
        grad = expected_calls_gradient(chain, T, g, bonus)
        for _ in range(3):
            d = rng.normal(size=chain.draft.shape)
            d -= d.mean(-1, keepdims=True)  # tangent to the simplex
            h = 1e-6

            ns = chain.transition_law.toarray().reshape(chain.n_states, chain.vocab_size, -1)
            calls = [
                st.DecodingChain(chain.target, chain.draft + e * d, chain.initial, ns)
                .protocol(T, g, bonus=bonus)
                .target_calls
                for e in (h, -h)
            ]
            fd = (calls[0] - calls[1]) / (2 * h)
            assert abs(fd - float((grad * d).sum())) < 1e-6 * (1 + abs(fd))


def test_gradient_sign_and_flat_region():
    """Where q > p the calls do not depend on q(x|s); where q < p more draft mass helps."""
    chain = st.DecodingChain.random(4, concentration=1.0, similarity=0.2, rng=5)
    grad = expected_calls_gradient(chain, 12, 2)
    assert np.all(grad[chain.draft > chain.target] == 0.0)
    assert np.all(grad[chain.draft < chain.target] < 0.0)


@pytest.fixture(scope="module")
def lab():
    chain = context_chain(4, 0.4, 0.3, rng=7)
    fam = TiedDraft.last_token(4)
    fits = {d: fit_draft(chain, fam, d, 16) for d in DIVERGENCES}
    return chain, fam, fits


def test_each_divergence_fit_minimises_its_own_loss(lab):
    chain, fam, fits = lab
    w = state_weights(chain, 16)
    rng = np.random.default_rng(0)

    def loss(name, laws):
        return float(w @ divergence(name, chain.target, fam.expand(laws)))

    for name, fit in fits.items():
        own = loss(name, fit.laws)
        for other in fits.values():
            assert own <= loss(name, other.laws) + 1e-9, (name, other.objective)
        for _ in range(20):
            laws = fit.laws * np.exp(0.05 * rng.normal(size=fit.laws.shape))
            laws /= laws.sum(-1, keepdims=True)
            assert own <= loss(name, laws) + 1e-9, name


def test_forward_and_reverse_kl_closed_forms(lab):
    """Forward KL: the weighted mean of the target rows of a context; reverse KL: the weighted
    geometric mean, normalised."""
    chain, fam, fits = lab
    w = state_weights(chain, 16)
    for g in range(fam.n_groups):
        m = fam.groups == g
        wg = w[m] / w[m].sum()
        np.testing.assert_allclose(fits["forward_kl"].laws[g], wg @ chain.target[m], atol=1e-12)
        geo = np.exp(wg @ np.log(chain.target[m]))
        np.testing.assert_allclose(fits["reverse_kl"].laws[g], geo / geo.sum(), atol=1e-12)


def test_tv_fit_minimises_theorem1_and_theorem1_is_rejections(lab):
    chain, fam, fits = lab
    th = {k: f.evaluate(2)["theorem1"] for k, f in fits.items()}
    assert all(th["tv"] <= v + 1e-9 for v in th.values())
    for f in fits.values():
        assert abs(f.chain.expected_rejections(16, 3, bonus=False) - f.evaluate(3)["theorem1"]) < 1e-10


def test_visible_target_is_recovered_by_every_divergence():
    chain = context_chain(3, 0.7, 1.0, rng=1)
    fam = TiedDraft.last_token(3)
    for d in DIVERGENCES:
        fit = fit_draft(chain, fam, d, 12)
        np.testing.assert_allclose(fit.chain.draft, chain.target, atol=1e-6)
        assert fit.evaluate(2)["acceptance"] > 1 - 1e-6


def test_multistep_fit_never_below_its_start_and_improves_forward_kl(lab):
    chain, fam, fits = lab
    for g in (1, 3):
        tuned = fit_draft(chain, fam, "tokens_per_call", 16, gamma=g, init=fits["forward_kl"], max_iter=40)
        assert tuned.evaluate(g)["tokens_per_call"] > fits["forward_kl"].evaluate(g)["tokens_per_call"]
        again = fit_draft(chain, fam, "tokens_per_call", 16, gamma=g, init=fits["tv"], max_iter=5)
        assert again.evaluate(g)["tokens_per_call"] >= fits["tv"].evaluate(g)["tokens_per_call"]
        assert tuned.label == f"tokens_per_call@{g}"


def test_fitted_drafts_exact_values_match_monte_carlo(lab):
    chain, fam, fits = lab
    tuned = fit_draft(chain, fam, "tokens_per_call", 16, gamma=3, init=fits["forward_kl"], max_iter=30)
    for i, fit in enumerate([*fits.values(), tuned]):
        for bonus in (True, False):
            sim = st.simulate(fit.chain, 16, 3, 4000, rng=10 + i, bonus=bonus)
            ex = fit.chain.protocol(16, 3, bonus=bonus)
            for stat in ("target_calls", "rejections", "accepted"):
                assert abs(sim.mean(stat) - getattr(ex, stat)) < 5 * sim.se(stat), (fit.label, bonus, stat)
            if not bonus:  # Theorem 1: rejections with the bonus off = the TV sum
                ev = fit.evaluate(3)
                assert abs(sim.mean("rejections") - ev["theorem1"]) < 5 * sim.se("rejections")


def test_errors_name_the_argument():
    chain = context_chain(3, 0.5, 0.5, rng=0)
    fam = TiedDraft.last_token(3)
    with pytest.raises(ValueError, match="objective"):
        fit_draft(chain, fam, "kl", 8)
    with pytest.raises(ValueError, match="gamma"):
        fit_draft(chain, fam, "tokens_per_call", 8)
    with pytest.raises(ValueError, match="chain"):
        fit_draft(st.DecodingChain.random(4, rng=0), fam, "tv", 8)
    with pytest.raises(ValueError, match="groups"):
        TiedDraft(np.array([0, 2]), 3)
    with pytest.raises(ValueError, match="init"):
        fit_draft(chain, fam, "jsd", 8, init=np.full((2, 3), 1 / 3))
    with pytest.raises(ValueError, match="visible"):
        context_chain(3, 0.5, 1.5)

"""TLI (a draft with another vocabulary) in the real decoder and the kit, against its exact law.

Exact = ``tli_round_law`` (Fraction enumeration); the kit's verdict on the TLI whole sampler
(and on its ``raw_q`` bug) must agree with the exact total variation; the decoder's output law
passes a chi-square test against the target's law and its accepted drafts match the exact
engine within 5 SE.
"""

from fractions import Fraction as F

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from _helpers import assert_within_se  # noqa: E402

import spectheory as st  # noqa: E402
from spectheory.analysis.verdicts import law_total_variation, random_fraction_table, table_law_fn  # noqa: E402
from spectheory.decoder import speculative_generate  # noqa: E402
from spectheory.decoder.vocab import TLIDraft, TokenTableModel, tli_logits  # noqa: E402
from spectheory.laws.vocabularies import tli_draft_law  # noqa: E402
from spectheory.montecarlo import pooled_chisquare  # noqa: E402
from spectheory.testing import check_sampler  # noqa: E402
from spectheory.testing.vocab_samplers import tli_sampler  # noqa: E402
from spectheory.verifiers.round_laws import generation_law, mean_accepted, target_law  # noqa: E402
from spectheory.verifiers.tli import tli_round_law  # noqa: E402

P_MIN = 1e-6  # chi-square p-value threshold, about 5 SE


def test_exact_tli_is_lossless_with_the_shared_mass_acceptance():
    tab_t = random_fraction_table(5, 3)
    tab_d = [row + extra for row, extra in zip(random_fraction_table(6, 3), ([F(1)], [F(0)], [F(2)]))]
    tab_d = [[x / sum(r) for x in r] for r in tab_d]  # V_d = 4: token 3 is draft-only
    t, d = table_law_fn(tab_t), table_law_fn(tab_d)
    for g in (1, 2):
        law = generation_law(lambda c, k: tli_round_law(t, d, 3, k, c), g, g + 1)
        assert law_total_variation(law, target_law(t, 3, g + 1)) == 0
    q_i = tli_draft_law(np.array(tab_d[0], dtype=object), [0, 1, 2, -1], 3)
    assert mean_accepted(tli_round_law(t, d, 3, 1)) == sum(min(a, b) for a, b in zip(tab_t[0], q_i))
    # a different map: draft token 0 is target token 2, token 3 is target token 0
    law = generation_law(lambda c, k: tli_round_law(t, d, 3, k, c, to_target=[2, -1, 1, 0]), 2, 3)
    assert law_total_variation(law, target_law(t, 3, 3)) == 0


def _raw_q_first_token_tv(p, q_d, shared):
    """Exact TV of the first token of the ``raw_q`` bug at gamma 1: draft from q_I, verify with q_d."""
    mass = sum(q_d[v] for v in shared)
    q_i = [q_d[v] / mass if v in shared else F(0) for v in range(len(p))]
    r = [q_d[v] if v in shared else F(0) for v in range(len(p))]
    out = [F(0)] * len(p)
    rejected = F(0)
    for x in shared:
        a = min(F(1), p[x] / r[x])
        out[x] += q_i[x] * a
        rejected += q_i[x] * (1 - a)
    res = [max(p[y] - r[y], F(0)) for y in range(len(p))]
    for y in range(len(p)):
        out[y] += rejected * res[y] / sum(res)
    return sum(abs(a - b) for a, b in zip(out, p)) / 2


def test_kit_verdicts_agree_with_the_exact_laws():
    p, q_d = [F(1, 3)] * 3, [F(1, 4), F(1, 4), F(1, 2)]
    assert _raw_q_first_token_tv(p, q_d, [0, 1]) == F(1, 3)  # the bug is biased, exactly
    tli = generation_law(lambda c, k: tli_round_law(lambda _: p, lambda _: q_d, 3, k, c, [0, 1, -1]), 1, 2)
    assert law_total_variation(tli, target_law(lambda _: p, 3, 2)) == 0  # TLI is lossless, exactly
    opts = {"n_samples": 500, "gammas": (2,), "vocab_sizes": (3,), "rng": 0}
    assert check_sampler(tli_sampler(), **opts).passed
    report = check_sampler(tli_sampler(bug="raw_q"), **opts)
    assert not report.passed and "first_token_law" in report.failed


def test_tli_logits_and_guards():
    z = tli_logits(torch.tensor([[0.0, 1.0, 2.0, 3.0]]), [2, -1, 0, 1], 3)
    assert z.tolist() == [[2.0, 3.0, 0.0]]
    for bad in ([0, 0, 1, 2], [0, 1, 2], [-2, 0, 1, 2], [-1, -1, -1, -1], [0, 1, 2, 3]):
        with pytest.raises(ValueError, match="to_target"):
            tli_logits(torch.zeros(4), bad, 3)
    draft = TokenTableModel(torch.zeros(3, 4), [0, 1, 2, 1])
    tli = TLIDraft(draft, [0, 1, -1, -1], 3)
    with pytest.raises(ValueError, match="context token"):
        tli(torch.tensor([[0, 2]]))  # target token 2 has no draft token
    assert TLIDraft(draft, [0, 1, -1, -1], 3, context_map=[0, 1, 3])(torch.tensor([[2]])).shape == (1, 1, 3)
    with pytest.raises(ValueError, match="state_of"):
        TokenTableModel(torch.zeros(3, 4), [0, 1, 2])


def _models(seed):
    """A 3-token target and a 5-token merged-token draft (tokens 3, 4 end in bytes 1, 2)."""
    rng = np.random.default_rng(seed)
    P = rng.dirichlet(np.ones(3), size=3)
    Qd = rng.dirichlet(np.ones(5), size=3)
    target = TokenTableModel(torch.from_numpy(np.log(P)), [0, 1, 2])
    draft = TLIDraft(TokenTableModel(torch.from_numpy(np.log(Qd)), [0, 1, 2, 1, 2]), [0, 1, 2, -1, -1], 3)
    return P, tli_draft_law(Qd, [0, 1, 2, -1, -1], 3), target, draft


@pytest.mark.parametrize("gamma,temperature", [(2, 1.0), (3, 0.7)])
def test_decoder_runs_tli_losslessly_and_accepts_as_the_exact_engine(gamma, temperature):
    P, q_i, target, draft = _models(3)
    n, T = 4000, 3
    res = speculative_generate(
        target, draft, [[0]] * n, T, gamma, temperature=temperature, seed=list(range(n))
    )
    Pt = P ** (1 / temperature)
    Pt /= Pt.sum(1, keepdims=True)
    Qt = q_i ** (1 / temperature)
    Qt /= Qt.sum(1, keepdims=True)
    law = Pt[0][:, None] * Pt  # first two tokens after the prompt [0]
    chi = pooled_chisquare(np.array([t[:2] for t in res.tokens]), law)
    assert chi["impossible_samples"] == 0 and chi["pvalue"] > P_MIN
    assert res.stats.rejections.sum() > n // 4  # the draft really differs
    exact = st.DecodingChain(Pt, Qt, initial=np.eye(3)[0]).protocol(T, gamma).accepted
    assert_within_se(*res.stats.mean_se("accepted"), exact, "TLI accepted drafts", atol=1e-5)

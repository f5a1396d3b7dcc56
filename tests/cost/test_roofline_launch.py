"""``docs/cost.md`` §6: past the ridge speculation loses at every gamma only without fixed costs.

With no launch overhead (the named H200 roofline) and plain decoding compute-bound
(``B >= m* = 206``), a target call scoring ``gamma + 1`` tokens per row costs exactly
``(gamma + 1) a_B`` and every gamma loses. A launch overhead per forward (issue 41, item 5:
0.5 ms for the 7B target, 0.05 ms for the 68M draft) is paid once per call instead of once per
token, and with every draft accepted speculation wins at ``B = 256`` and ``B = 1024``.
"""

import pytest

import spectheory as st
from spectheory.cost import CostModel, named_cost
from spectheory.cost.examples import H200_BANDWIDTH, HOPPER_BF16_FLOPS, llama_roofline

T = 512
EVERY_DRAFT_ACCEPTED = st.DecodingChain.iid([0.5, 0.5], [0.5, 0.5])
DOCS_CHAIN = st.DecodingChain.random(16, concentration=0.5, similarity=0.6, rng=0)


def _with_launch(target_launch, draft_launch):
    return CostModel(
        llama_roofline(6.74e9, 32, 4096, HOPPER_BF16_FLOPS, H200_BANDWIDTH, launch=target_launch),
        llama_roofline(6.8e7, 2, 768, HOPPER_BF16_FLOPS, H200_BANDWIDTH, launch=draft_launch),
    )


def test_the_ridge_is_206_tokens():
    assert named_cost("llama2-7b/68m-h200").target.ridge_tokens() == pytest.approx(206.125, rel=1e-12)
    assert _with_launch(5e-4, 5e-5).target.ridge_tokens() == pytest.approx(206.125, rel=1e-12)


@pytest.mark.parametrize("chain", [EVERY_DRAFT_ACCEPTED, DOCS_CHAIN], ids=["p=q", "docs-chain"])
def test_without_launch_every_gamma_loses_past_the_ridge(chain):
    model = named_cost("llama2-7b/68m-h200")
    for gamma in range(1, 13):
        res = chain.protocol(64, gamma)
        for B in (256, 1024):
            assert res.speedup(model, batch=B) < 1


def test_with_launch_overhead_speculation_wins_past_the_ridge():
    res = EVERY_DRAFT_ACCEPTED.protocol(T, 11)
    model = _with_launch(5e-4, 5e-5)
    assert res.speedup(model, batch=256) == pytest.approx(1.1032, abs=5e-5)
    assert res.speedup(model, batch=1024) == pytest.approx(1.0180, abs=5e-5)
    assert res.speedup(named_cost("llama2-7b/68m-h200"), batch=256) < 1  # the same round, no launch

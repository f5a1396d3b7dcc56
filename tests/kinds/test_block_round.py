"""Block drafters as a round kind (issue 39, item 2): exact engine = Monte Carlo within 5 SE, the
output law is the target's, perfect heads accept everything, the acceptance LP beats the
cross-entropy head depth by depth, and a round-start drafter whose AL(K) falls."""

from __future__ import annotations

from fractions import Fraction as F

import numpy as np
import pytest

import spectheory as st
from spectheory.kinds.block import BlockDrafter, BlockRound
from spectheory.objectives.block_drafts import acceptance_lp, acceptance_lp_drafter, block_long_run

CHAIN = st.DecodingChain.random(3, concentration=0.5, similarity=0.5, rng=1)


def _random_drafter(v, depth, markov, seed):
    rng = np.random.default_rng(seed)
    first = rng.dirichlet(np.full(v, 0.5), size=v)
    shape = (v, depth - 1, v) if markov else (v, depth - 1)
    return BlockDrafter(first, rng.dirichlet(np.full(v, 0.5), size=shape))


@pytest.mark.parametrize(
    "drafter",
    [
        BlockDrafter.marginals(CHAIN, 3),
        BlockDrafter.marginals(CHAIN, 3, of="draft"),
        BlockDrafter.markov_head(CHAIN, 3, of="draft"),
        _random_drafter(3, 3, True, 0),
        _random_drafter(3, 3, False, 1),
    ],
    ids=["oracle marginals", "draft marginals", "markov head", "random markov", "random parallel"],
)
def test_exact_equals_monte_carlo_within_5_se(drafter):
    rnd = BlockRound(drafter)
    exact = CHAIN.protocol(24, rnd)
    sim = st.simulate(CHAIN, 24, rnd, 6000, rng=7)
    for name in ("target_calls", "rejections", "accepted"):
        mean, se = sim.mean_se(name)
        assert abs(mean - getattr(exact, name)) <= 5 * se + 1e-9, (name, mean, getattr(exact, name), se)


def test_the_output_law_is_the_targets():
    """The first emitted token of a block round, drawn from start state 0, has the target's law."""
    from spectheory.rounds.base import RoundRuns
    from spectheory.rounds.sampler import ChainSampler

    rnd = BlockRound(_random_drafter(3, 3, True, 2))
    R = 60_000
    runs = RoundRuns(3, np.zeros(R, dtype=np.int64), np.zeros(R, dtype=np.int64), np.zeros(R), True)
    out = rnd.play(ChainSampler(CHAIN), runs, np.random.default_rng(4))
    first = np.where(out.accepted >= 1, out.path[:, 0], out.final)
    law = np.bincount(first, minlength=3) / R
    exact = CHAIN.target[0]
    assert np.all(np.abs(law - exact) <= 5 * np.sqrt(exact * (1 - exact) / R) + 1e-12)


def test_a_perfect_markov_head_accepts_everything():
    head = BlockDrafter.markov_head(CHAIN, 4, of="target")  # first-order: the target itself
    assert block_long_run(CHAIN, head, 4).tokens_per_call == pytest.approx(5.0)
    assert CHAIN.protocol(21, BlockRound(head)).target_calls == pytest.approx(5.0)  # 21 = 4 x 5 + 1


def test_acceptance_lp_is_optimal_and_beats_cross_entropy_given_the_same_first_depth():
    rng = np.random.default_rng(0)
    w, rows = rng.dirichlet([1, 1, 1]), rng.dirichlet([0.5, 0.5, 0.5], size=3)
    q, best = acceptance_lp(w, rows)
    for _ in range(300):  # no law does better
        other = rng.dirichlet([0.5, 0.5, 0.5])
        assert (w * np.minimum(rows, other).sum(1)).sum() <= best + 1e-9
    assert (w * np.minimum(rows, q).sum(1)).sum() == pytest.approx(best, abs=1e-9)
    for seed in range(3):
        chain = st.DecodingChain.random(4, concentration=0.4, similarity=0.5, rng=seed)
        lp = block_long_run(chain, acceptance_lp_drafter(chain, 3), 3).conditional_acceptance
        ce = block_long_run(chain, BlockDrafter.marginals(chain, 3), 3).conditional_acceptance
        assert lp[0] == pytest.approx(ce[0], abs=1e-9) and lp[1] >= ce[1] - 1e-9


def test_a_round_start_drafter_can_make_al_fall():
    # the target alternates 0 -> 1 -> 0; from start 0 the head is right for three depths
    chain = st.DecodingChain([[0.0, 1.0], [1.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]])
    head = BlockDrafter(
        [[0.0, 1.0], [0.3, 0.7]],
        [[[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], [[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]]],
    )
    al = [block_long_run(chain, head, k).tokens_per_call for k in (1, 2, 3, 4)]
    assert al[2] == pytest.approx(4.0) and al[3] == pytest.approx(float(F(19, 6)))
    sim = st.simulate(chain, 400, BlockRound(head, 4), 3000, rng=5)
    mean, se = sim.mean_se("target_calls")
    assert abs(400 / mean - 19 / 6) < 5 * 400 / mean**2 * se + 400 / mean**2 * 2  # + start transient


def test_bad_inputs():
    with pytest.raises(ValueError, match="sum to 1"):
        BlockDrafter([[0.5, 0.4], [0.5, 0.5]], np.zeros((2, 0, 2)))
    with pytest.raises(ValueError, match="at most the drafter's depth"):
        BlockRound(BlockDrafter.marginals(CHAIN, 2), 3)
    with pytest.raises(ValueError, match="tree"):
        BlockRound(BlockDrafter.marginals(CHAIN, 2), verifier="tree_rrs")
    with pytest.raises(TypeError, match="BlockDrafter"):
        BlockRound(CHAIN.draft)
    with pytest.raises(ValueError, match="laws for 3 states"):
        st.simulate(
            st.DecodingChain.random(4, rng=0), 5, BlockRound(BlockDrafter.marginals(CHAIN, 2)), 10, rng=0
        )


class _RatioOneEarly(st.verifiers.TokenVerifier):
    """WRONG on purpose: the ratio at depth i uses the head's law of depth i + 1."""

    name = "ratio_one_early"
    inline_token_round = False

    def verify_round(self, target_laws, draft_laws, draft_tokens, k, rng=None):
        d = np.asarray(draft_laws, dtype=np.float64)
        return super().verify_round(
            target_laws, np.concatenate([d[:, 1:], d[:, -1:]], 1), draft_tokens, k, rng
        )


def test_kit_passes_token_verification_and_flags_the_ratio_taken_one_depth_early():
    from spectheory.testing import check_round

    drafter = BlockDrafter.marginals(CHAIN, 3)
    assert check_round(BlockRound(drafter), rng=0).passed
    report = check_round(BlockRound(drafter, verifier=_RatioOneEarly()), rng=0)
    assert not report.passed, report


def test_exact_engine_refused_for_a_rule_that_is_not_token_verification():
    from spectheory.rounds import UnsupportedRoundError

    rnd = BlockRound(BlockDrafter.marginals(CHAIN, 2), verifier=_RatioOneEarly())
    assert not rnd.tags().exact and rnd.tags().monte_carlo
    with pytest.raises(UnsupportedRoundError, match="token verification"):
        CHAIN.protocol(8, rnd)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_markov_head_of_the_draft_is_the_draft_itself_on_first_order_chains(seed):
    """Two engines: the block engine's long run for the draft's Markov head and the path engine's
    AL(K) of the draft (spectheory.stopping.al_curves) agree."""
    from spectheory.stopping.al_curves import acceptance_length_curve

    chain = st.DecodingChain.random(4, concentration=0.6, similarity=0.5, rng=seed)
    head = BlockDrafter.markov_head(chain, 4, of="draft")
    block = [block_long_run(chain, head, k).tokens_per_call for k in (1, 2, 3, 4)]
    assert np.allclose(block, acceptance_length_curve(chain, [1, 2, 3, 4]), atol=1e-10)


def test_the_decoder_runs_a_block_round_with_the_shipped_medusa_heads():
    """BlockRound(gamma=3) in the decoder: one path of head-sampled drafts checked by token
    verification, token for token the Medusa loop on a path-shaped tree; the chain engines
    refuse a round without depth laws."""
    pytest.importorskip("torch")
    from spectheory.decoder import generate, load_model
    from spectheory.decoder.medusa import load_heads, medusa_generate
    from spectheory.rounds import UnsupportedRoundError
    from spectheory.trees import DraftTree

    target, (heads, _) = load_model("target"), load_heads()
    prompts = [list(b"def main("), list(b"import os\n")]
    got = generate(target, heads, prompts, 12, BlockRound(gamma=3), seed=3)
    ref = medusa_generate(target, heads, prompts, 12, DraftTree.from_branching([1, 1, 1]), "tree_rrs", seed=3)
    assert all((a == b).all() for a, b in zip(got.tokens, ref.tokens))
    assert all(len(t) == 12 for t in got.tokens)
    with pytest.raises(UnsupportedRoundError, match="BlockDrafter"):
        st.simulate(CHAIN, 8, BlockRound(gamma=2), 10, rng=0)
    with pytest.raises(UnsupportedRoundError, match="token verification"):
        generate(target, heads, prompts, 4, BlockRound(gamma=2, verifier="block"), seed=0)


def test_a_path_shaped_head_tree_is_the_block_round():
    """Two engines: the tree kind's per-node engine from one start at a time and the block
    round's round recursion."""
    from spectheory.kinds.block import BlockTreeRound
    from spectheory.kinds.tree import DraftTree

    for drafter in (BlockDrafter.marginals(CHAIN, 3, of="draft"), _random_drafter(3, 3, False, 4)):
        a = CHAIN.protocol(20, BlockRound(drafter))
        b = CHAIN.protocol(
            20, BlockTreeRound(drafter, tree=DraftTree.from_branching([1, 1, 1]), verifier="tree_rrs")
        )
        for key in ("target_calls", "rejections", "accepted"):
            assert getattr(b, key) == pytest.approx(getattr(a, key), abs=1e-10), key


@pytest.mark.parametrize("verifier", ["tree_topk", "tree_rrs"])
def test_head_trees_exact_equals_monte_carlo_within_5_se(verifier):
    from spectheory.kinds.block import BlockTreeRound

    rnd = BlockTreeRound(_random_drafter(3, 3, False, 5), n_nodes=6, verifier=verifier)
    assert rnd.tree.n_nodes == 7 and rnd.tree.max_depth <= 3
    exact = CHAIN.protocol(20, rnd)
    sim = st.simulate(CHAIN, 20, rnd, 6000, rng=9)
    for name in ("target_calls", "rejections"):
        mean, se = sim.mean_se(name)
        assert abs(mean - getattr(exact, name)) <= 5 * se + 1e-9, (name, mean, getattr(exact, name), se)


def test_head_trees_refuse_markov_heads_and_bad_shapes():
    from spectheory.kinds.block import BlockTreeRound, head_tree
    from spectheory.kinds.tree import DraftTree

    with pytest.raises(TypeError, match="parallel"):
        BlockTreeRound(BlockDrafter.markov_head(CHAIN, 3), n_nodes=4)
    with pytest.raises(ValueError, match="Markov"):
        head_tree(BlockDrafter.markov_head(CHAIN, 3), 4)
    with pytest.raises(ValueError, match="exceeds"):
        BlockTreeRound(BlockDrafter.marginals(CHAIN, 2), tree=DraftTree.from_branching([1, 1, 1]))
    with pytest.raises(ValueError, match="exactly one"):
        BlockTreeRound(BlockDrafter.marginals(CHAIN, 2))

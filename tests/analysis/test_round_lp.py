"""Block verification is optimal among lossless single-path rules whatever they read (off-path
laws included): the LP of spectheory.analysis.round_lp, with exact rational dual certificates."""

from fractions import Fraction as F

import pytest

from spectheory.analysis.round_lp import lossless_round_optimum
from spectheory.analysis.verdicts import random_fraction_table, rule_exact, table_law_fn

P, Q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]


@pytest.mark.parametrize("gamma,want", [(1, F(2, 3)), (2, F(11, 9)), (3, F(5, 3))])
def test_sun_example_block_is_the_lp_optimum(gamma, want):
    r = lossless_round_optimum(lambda c: P, lambda c: Q, 2, gamma)
    assert r["certified"] and r["bound"] == r["block"] == want
    assert abs(r["optimum"] - float(want)) < 1e-9


@pytest.mark.parametrize("seed,V", [(s, V) for s in range(4) for V in (2, 3)])
def test_random_chains_block_is_certified_optimal_off_path_included(seed, V):
    t = table_law_fn(random_fraction_table(seed, V))
    d = table_law_fn(random_fraction_table(100 + seed, V))
    r = lossless_round_optimum(t, d, V, 2)
    assert r["dual_feasible"] and r["certified"], r
    # the LP's context is any prefix: one step into the chain
    assert lossless_round_optimum(t, d, V, 2, prefix=(V - 1,))["certified"]


def test_the_bound_excludes_the_biased_rules_and_is_not_trivial():
    # HSD's listing accepts 4/3 > 11/9 on Sun's example: above every lossless rule, so biased
    r = lossless_round_optimum(lambda c: P, lambda c: Q, 2, 2)
    assert rule_exact("hsd_listing", lambda c: P, lambda c: Q, 2, 2)["mean_accepted"] > r["bound"]
    # a coarse rationalisation of the dual is no certificate (the check can fail)
    assert not lossless_round_optimum(lambda c: P, lambda c: Q, 2, 3, max_denominator=2)["certified"]

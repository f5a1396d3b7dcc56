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


def accepted_prefix_mass(law, i):
    """``A_i(z) = P(tau >= i, X_{1:i} = z)`` from a round law ``{emitted: probability}``."""
    out = {}
    for e, w in law.items():
        if len(e) - 1 >= i:
            out[e[:i]] = out.get(e[:i], 0) + w
    return out


@pytest.mark.parametrize("seed,V,gamma", [(s, V, g) for s in range(3) for V in (2, 3) for g in (1, 2, 3)])
def test_closed_form_bound_is_block_verification_pointwise(seed, V, gamma):
    """Theorem 6: BV attains m_i(z) = min_s q(z_1:s) p(z_s+1:i | z_1:s) for every prefix; every
    lossless single-path rule drafted from q stays below it pointwise."""
    from spectheory.analysis.round_lp import single_path_bound
    from spectheory.verifiers.block_exact import block_emission_law
    from spectheory.verifiers.round_laws import exact_round_law

    t = table_law_fn(random_fraction_table(10 + seed, V))
    d = table_law_fn(random_fraction_table(200 + seed, V))
    m = single_path_bound(t, d, V, gamma, per_prefix=True)
    block = block_emission_law(t, d, V, gamma)
    assert single_path_bound(t, d, V, gamma) == rule_exact("block", t, d, V, gamma)["mean_accepted"]
    for i in range(1, gamma + 1):
        a = accepted_prefix_mass(block, i)
        assert a == {z: w for z, w in m.items() if len(z) == i}
        for name in ("token", "point_mass", "sample_match", "hsd"):
            law = exact_round_law(name, t, d, V, gamma)
            assert all(w <= m.get(z, 0) for z, w in accepted_prefix_mass(law, i).items()), name


def test_a_biased_rule_breaks_the_pointwise_bound():
    from spectheory.analysis.round_lp import single_path_bound
    from spectheory.verifiers.round_laws import exact_round_law

    m = single_path_bound(lambda c: P, lambda c: Q, 2, 2, per_prefix=True)
    a = accepted_prefix_mass(exact_round_law("hsd_listing", lambda c: P, lambda c: Q, 2, 2), 2)
    assert a[(1, 0)] == F(2, 9) > m[(1, 0)] == F(1, 9)
    assert lossless_round_optimum(lambda c: P, lambda c: Q, 2, 2)["bound"] == single_path_bound(
        lambda c: P, lambda c: Q, 2, 2
    )

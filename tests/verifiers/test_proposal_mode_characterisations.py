"""Propositions 1 and 3 of ``docs/proposal_modes.md`` on an exhaustive rational grid.

Every pair ``(p, q)`` of laws whose probabilities are multiples of ``1/N`` on ``V`` tokens: the
package's Fraction enumeration of one round (``proposal_round_law``, ``gamma = 1``) against the
stated characterisations, exactly. The default run takes ``N = 4``, ``V <= 4`` (1,476 pairs);
the slow run (``-m slow``, about 20 s) adds ``V = 5`` at ``N = 4, 5`` and ``V <= 4`` at
``N = 6`` (28,665 pairs). The issue-41 counterexamples to the former statements are named tests.
"""

from fractions import Fraction as F
from functools import cache
from itertools import product

import pytest

from spectheory.verifiers.round_laws import first_token_law, mean_accepted, proposal_round_law


@cache
def grid(V, N):
    """Every law on ``V`` tokens with probabilities in ``{0, 1/N, ..., 1}``."""
    return tuple(tuple(F(c, N) for c in w) for w in product(range(N + 1), repeat=V) if sum(w) == N)


def pairs(V, N):
    return [(p, q) for p in grid(V, N) for q in grid(V, N)]


def round_law(mode, p, q):
    return proposal_round_law(mode, lambda c: list(p), lambda c: list(q), len(p), 1)


def is_point_mass(law):
    return max(law) == 1


def argmax(q):
    return max(range(len(q)), key=lambda v: (q[v], -v))


def equal_acceptance(p, q):
    """Proposition 1's characterisation of ``beta = alpha``: disjoint supports, or p or q a point mass."""
    disjoint = all(a == 0 or b == 0 for a, b in zip(p, q))
    return disjoint or is_point_mass(p) or is_point_mass(q)


def soft_argmax_lossless(p, q):
    """Proposition 3's characterisation: ``p = 1_{x*}``, ``q = 1_{x*}``, or ``p(x*) = 0`` and
    ``q`` restricted to ``supp(p)`` proportional to ``p``."""
    x = argmax(q)
    if p[x] == 1 or q[x] == 1:
        return True
    if p[x] != 0:
        return False
    support = [y for y, a in enumerate(p) if a]
    scale = sum(q[y] for y in support)  # q(supp p) = the constant of proportionality
    return all(q[y] == scale * p[y] for y in support)


def check_propositions(V, N):
    for p, q in pairs(V, N):
        alpha = mean_accepted(round_law("token", p, q))
        beta = mean_accepted(round_law("point_mass", p, q))
        assert alpha == sum(min(a, b) for a, b in zip(p, q)) and beta == sum(a * b for a, b in zip(p, q))
        assert beta <= alpha
        assert (beta == alpha) == equal_acceptance(p, q), (p, q)
        per_token = all(min(a, b) == 0 or max(a, b) == 1 for a, b in zip(p, q))
        assert per_token == equal_acceptance(p, q), (p, q)
        lossless = first_token_law(round_law("argmax_soft", p, q), V) == list(p)
        assert lossless == soft_argmax_lossless(p, q), (p, q)


@pytest.mark.parametrize("V", [1, 2, 3, 4])
def test_propositions_1_and_3_on_the_grid(V):
    check_propositions(V, 4)


@pytest.mark.slow
@pytest.mark.parametrize(("V", "N"), [(5, 4), (5, 5), (2, 6), (3, 6), (4, 6)])
def test_propositions_1_and_3_on_the_full_grid(V, N):
    check_propositions(V, N)


@pytest.mark.parametrize(("p", "q"), [((F(1), F(0)), (F(1, 2), F(1, 2))), ((F(1, 2), F(1, 2)), (F(1), F(0)))])
def test_a_point_mass_accepts_as_often_under_point_mass_proposals(p, q):
    """The former "strictly less efficient unless disjoint or p = q a point mass" fails here."""
    assert p != q
    alpha = mean_accepted(round_law("token", p, q))
    assert alpha == mean_accepted(round_law("point_mass", p, q)) == F(1, 2)


def test_soft_argmax_is_lossless_when_q_puts_mass_off_the_target_support():
    """The former "iff" said biased: ``q`` is not ``(1 - l) p + l 1_{x*}`` (it charges token 2)."""
    p, q = (F(0), F(1), F(0)), (F(1, 2), F(1, 4), F(1, 4))
    assert first_token_law(round_law("argmax_soft", p, q), 3) == list(p)
    assert soft_argmax_lossless(p, q)
    l = q[0]
    assert list(q) != [(1 - l) * a + l * (y == 0) for y, a in enumerate(p)]


def test_proposition_4_greedy_accepts_less_than_sampled_iff_the_modes_differ():
    """``V = 2``, ``q = (c, 1 - c)`` with ``1/2 <= c < 1`` (so ``x* = 0``): exact-match acceptance
    of greedy drafting ``p(x*)`` is below sampled drafting's ``beta`` iff ``p(0) < 1/2``."""
    for p, q in pairs(2, 12):
        if not F(1, 2) <= q[0] < 1:
            continue
        greedy = mean_accepted(round_law("argmax_onehot", p, q))
        sampled = mean_accepted(round_law("sample_match", p, q))
        assert greedy - sampled == (1 - q[0]) * (2 * p[0] - 1)
        assert (greedy < sampled) == (p[0] < F(1, 2))

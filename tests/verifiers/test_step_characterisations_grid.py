"""The "iff"s of one rejection-based step, on an exhaustive rational grid.

Every target ``p``, draft ``q`` and acceptance ``b`` whose entries are multiples of ``1/4`` on
``V <= 4`` tokens (about 800,000 triples, vectorised), against the statements of
:mod:`spectheory.verifiers.rejection` (Theorem 2), :mod:`spectheory.verifiers.biased`
(Theorems 4-5 and the naive law) and :mod:`spectheory.verifiers.rejection_step`:

- an unbiased rule rejects with probability ``rho >= TV``, with equality iff ``b = min(1, p/q)``
  on the support of ``q``;
- a rule with the optimal rejection law has loss ``L* = sum (a - p)_+`` and ``rho + L* >= TV``,
  with equality iff it over-accepts (``b >= min(1, p/q)`` on the support of ``q``);
- the naive law ``P = p`` loses ``L_naive >= L*``, with equality iff ``rho = 0`` or
  ``a <= (1 - rho) p`` on the support of ``p``;
- an unbiased rejection law exists iff ``q b <= p``.
"""

from itertools import product

import numpy as np
import pytest

from spectheory.verifiers.biased import biased_step, over_accepts
from spectheory.verifiers.rejection_step import standard_acceptance, unbiased_rejection_law

N, TOL = 4, 1e-12


def laws(V):
    return np.array([w for w in product(range(N + 1), repeat=V) if sum(w) == N], float) / N


def grid(V):
    """Every ``(p, q, b)`` of the grid as three arrays of shape ``(n, V)``."""
    L, B = laws(V), np.array(list(product(range(N + 1), repeat=V)), float) / N
    i, j, k = np.meshgrid(np.arange(len(L)), np.arange(len(L)), np.arange(len(B)), indexing="ij")
    return L[i.ravel()], L[j.ravel()], B[k.ravel()]


@pytest.mark.parametrize("V", [2, 3, 4])
def test_one_step_characterisations(V):
    p, q, b = grid(V)
    tv = 0.5 * np.abs(p - q).sum(1)
    opt, naive = biased_step(p, q, b, "optimal"), biased_step(p, q, b, "target")
    a, rho = opt.accepted, opt.rejection
    on_q = q > 0
    # Theorem 4: the optimal law's loss is sum (a - p)_+; Theorem 5: rho + L* >= TV, equality iff over-accepting
    np.testing.assert_allclose(opt.loss, np.maximum(a - p, 0).sum(1), atol=TOL)
    assert np.all(rho + opt.loss >= tv - TOL)
    on_line = np.abs(rho + opt.loss - tv) <= TOL
    assert np.array_equal(on_line, over_accepts(p, q, b))
    # Theorem 2: unbiased rules (a <= p, i.e. L* = 0) reject at least TV, exactly TV iff b = min(1, p/q) on supp q
    unbiased = np.all(a <= p + TOL, axis=1)
    assert np.array_equal(unbiased, opt.loss <= TOL)
    standard = np.all(~on_q | (np.abs(b - standard_acceptance(p, q)) <= TOL), axis=1)
    assert np.all(rho[unbiased] >= tv[unbiased] - TOL)
    assert np.array_equal(np.abs(rho - tv)[unbiased] <= TOL, standard[unbiased])
    # the naive law: L_naive >= L*, equality iff rho = 0 or a <= (1 - rho) p on supp p
    assert np.all(naive.loss >= opt.loss - TOL)
    below = np.all((p == 0) | (a <= (1 - rho)[:, None] * p + TOL), axis=1)
    assert np.array_equal(np.abs(naive.loss - opt.loss) <= TOL, (rho <= TOL) | below)


@pytest.mark.parametrize("V", [2, pytest.param(3, marks=pytest.mark.slow)])
def test_an_unbiased_rejection_law_exists_iff_the_accepted_mass_is_below_the_target(V):
    for p, q, b in zip(*grid(V)):
        exists = bool(np.all(q * b <= p + TOL))
        try:
            unbiased_rejection_law(p, q, b)
        except ValueError:
            assert not exists
        else:
            assert exists

r"""Result 1: one speculative step emits a token distributed exactly as the target.

Statement
---------
Let p = target and q = draft be laws on a finite vocabulary of size V. Draw x ~ q, accept
it with probability :math:`\min(1, p(x)/q(x))`, otherwise emit y ~ r with the residual
:math:`r = \max(p - q, 0) / Z`, :math:`Z = \sum_z \max(p(z) - q(z), 0)` (and r = p when
Z = 0). Then the emitted token Y has :math:`P(Y = y) = p(y)` for every y.

Proof
-----
Tokens with q(x) = 0 are never proposed, and contribute
:math:`q(x)\min(1, p/q) = 0 = \min(p(x), q(x))` to the accepted mass, so take q > 0 where
the ratio appears. Then

.. math::
    P(Y = y) = q(y)\min\!\Big(1, \frac{p(y)}{q(y)}\Big)
               + \rho\,\frac{\max(p(y) - q(y), 0)}{Z},\qquad
    \rho = \sum_x q(x)\Big(1 - \min\!\Big(1, \frac{p(x)}{q(x)}\Big)\Big).

*Pointwise lemma* (two cases, p >= q or p <= q): :math:`q\min(1, p/q) = \min(p, q)` and
:math:`\min(p, q) + \max(p - q, 0) = p`.
*General V*: summing the lemma, :math:`\rho = 1 - \sum \min(p, q) = \sum p - \sum \min(p, q)
= \sum \max(p - q, 0) = Z`, so :math:`P(Y = y) = \min(p(y), q(y)) + \max(p(y) - q(y), 0) = p(y)`
when Z > 0; when Z = 0, p = q, rho = 0 and :math:`P(Y = y) = \min(p, p) = p`.
:func:`check` verifies the lemma in both cases, the general-V summation with sympy ``Sum``
over an ``IndexedBase`` (symbolic V), and, independently, the full formula for V = 2 and
V = 3 on every sign pattern of p - q with the last probability of each law written as
1 - (sum of the others). Patterns whose residual mass vanishes identically are shown to force
p = q and are covered by the p = q case.
"""

from __future__ import annotations

import sympy as sp

from ._sym import (
    assert_equal,
    assert_zero,
    close_simplex,
    law_symbols,
    pull_constants,
    resolve,
    sign_patterns,
)

TITLE = "one-step speculative law equals the target"


def step_law(target, draft):
    """Symbolic law of the emitted token, written from the protocol (Min/Max unresolved)."""
    accept = [q * sp.Min(1, p / q) for p, q in zip(target, draft)]
    rho = sum(q - a for q, a in zip(draft, accept))
    excess = [sp.Max(p - q, 0) for p, q in zip(target, draft)]
    mass = sum(excess)
    return [a + rho * e / mass for a, e in zip(accept, excess)], mass, rho


def _check_lemma() -> None:
    p, q = sp.symbols("p q", positive=True)
    for signs in sign_patterns([p - q]):
        assert_equal(
            resolve(q * sp.Min(1, p / q), signs),
            resolve(sp.Min(p, q), signs),
            f"q min(1, p/q) = min(p, q) on {signs}",
        )
        assert_equal(
            resolve(sp.Min(p, q) + sp.Max(p - q, 0), signs), p, f"min(p, q) + max(p - q, 0) = p on {signs}"
        )


def _check_general_v() -> None:
    i, V = sp.symbols("i V", integer=True, positive=True)
    p, m = sp.IndexedBase("p"), sp.IndexedBase("m")  # m[i] = min(p_i, q_i)
    # lemma: max(p_i - q_i, 0) = p_i - m[i]
    Z = pull_constants(sp.Sum(p[i] - m[i], (i, 1, V)))
    rho = 1 - sp.Sum(m[i], (i, 1, V))
    Z = Z.subs(sp.Sum(p[i], (i, 1, V)), 1)  # sum of the target = 1
    assert_zero(rho - Z, "general V: rejection probability equals residual mass")


def _check_explicit(V: int) -> None:
    target, draft = law_symbols("p", V), law_symbols("q", V)
    law, mass, rho = step_law(target, draft)
    for signs in sign_patterns([p - q for p, q in zip(target, draft)]):
        Z = close_simplex(close_simplex(resolve(mass, signs), target), draft)
        if sp.expand(Z) == 0:
            # only the all-equal-sign patterns; there sum_x s*(p_x - q_x) = 0 with every term
            # >= 0, hence p = q, the case checked below
            s = set(signs.values())
            assert len(s) == 1, f"residual mass vanishes on a mixed pattern {signs}"
            total = close_simplex(close_simplex(sum(target) - sum(draft), target), draft)
            assert_zero(total, "sum of p - q")
            continue
        for y in range(V):
            got = close_simplex(close_simplex(resolve(law[y], signs), target), draft)
            want = close_simplex(target[y], target)
            assert_equal(got, want, f"V={V}, P(Y={y}) on pattern {list(signs.values())}")
    # p = q: no rejection, the accepted token is p-distributed
    equal = {q: p for p, q in zip(target, draft)}
    pattern = sign_patterns([p - q for p, q in zip(target, draft)])[0]
    assert_zero(resolve(rho.subs(equal), pattern), f"V={V}, rho at p = q")
    for y in range(V):
        accepted = resolve((draft[y] * sp.Min(1, target[y] / draft[y])).subs(equal), pattern)
        assert_equal(accepted, target[y], f"V={V}, accepted mass at p = q")


def check() -> None:
    """Prove result 1 (raises AssertionError if sympy does not reduce an identity to 0)."""
    _check_lemma()
    _check_general_v()
    for V in (2, 3):
        _check_explicit(V)


if __name__ == "__main__":
    check()
    print(f"PASS  {TITLE}")

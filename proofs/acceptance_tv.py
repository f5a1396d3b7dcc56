r"""Result 2: the acceptance probability is :math:`\sum_x \min(p, q) = 1 - \mathrm{TV}(p, q)`.

Statement
---------
With p = target, q = draft on V tokens, one speculative step (x ~ q, accept with
:math:`\min(1, p(x)/q(x))`) accepts with probability

.. math:: \beta = \sum_x q(x)\min\!\Big(1, \frac{p(x)}{q(x)}\Big) = \sum_x \min(p(x), q(x))
          = 1 - \mathrm{TV}(p, q),\qquad \mathrm{TV}(p, q) = \tfrac12 \sum_x |p(x) - q(x)|.

Proof
-----
Pointwise, in both cases p >= q and p <= q (q > 0; a token with q = 0 is never proposed and
:math:`\min(p, 0) = 0`): :math:`q\min(1, p/q) = \min(p, q) = (p + q - |p - q|)/2`.
Summing over x with :math:`\sum p = \sum q = 1` gives
:math:`\beta = (1 + 1 - \sum|p - q|)/2 = 1 - \mathrm{TV}`. :func:`check` verifies the pointwise
lemma in both cases, the summation for a symbolic V (sympy ``Sum``), and, independently,
the whole identity for V = 2 and V = 3 on every sign pattern of p - q with the last
probability of each law written as 1 - (sum of the others).
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

TITLE = "acceptance = sum min(target, draft) = 1 - TV"


def _check_lemma() -> None:
    p, q = sp.symbols("p q", positive=True)
    for signs in sign_patterns([p - q]):
        accept = resolve(q * sp.Min(1, p / q), signs)
        assert_equal(accept, resolve(sp.Min(p, q), signs), f"q min(1, p/q) = min(p, q) on {signs}")
        assert_equal(
            accept, resolve((p + q - sp.Abs(p - q)) / 2, signs), f"min(p, q) = (p + q - |p - q|)/2 on {signs}"
        )


def _check_general_v() -> None:
    i, V = sp.symbols("i V", integer=True, positive=True)
    p, q = sp.IndexedBase("p"), sp.IndexedBase("q")
    beta = pull_constants(sp.Sum((p[i] + q[i] - sp.Abs(p[i] - q[i])) / 2, (i, 1, V)))
    beta = beta.subs({sp.Sum(p[i], (i, 1, V)): 1, sp.Sum(q[i], (i, 1, V)): 1})
    tv = pull_constants(sp.Sum(sp.Abs(p[i] - q[i]) / 2, (i, 1, V)))
    assert_zero(beta - (1 - tv), "general V: sum min(p, q) = 1 - TV")


def _check_explicit(V: int) -> None:
    target, draft = law_symbols("p", V), law_symbols("q", V)
    beta = sum(q * sp.Min(1, p / q) for p, q in zip(target, draft))
    mins = sum(sp.Min(p, q) for p, q in zip(target, draft))
    tv = sum(sp.Abs(p - q) for p, q in zip(target, draft)) / 2
    for signs in sign_patterns([p - q for p, q in zip(target, draft)]):

        def closed(e, signs=signs):
            return close_simplex(close_simplex(resolve(e, signs), target), draft)

        assert_equal(closed(beta), closed(mins), f"V={V}: beta = sum min on {list(signs.values())}")
        assert_equal(closed(beta), 1 - closed(tv), f"V={V}: beta = 1 - TV on {list(signs.values())}")


def check() -> None:
    """Prove result 2 (raises AssertionError if sympy does not reduce an identity to 0)."""
    _check_lemma()
    _check_general_v()
    for V in (2, 3):
        _check_explicit(V)


if __name__ == "__main__":
    check()
    print(f"PASS  {TITLE}")

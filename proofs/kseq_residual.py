r"""Result 6: validity of the K-SEQ residual of SpecTr (Sun et al. 2023).

Statement
---------
p = target, q = draft on V tokens, k i.i.d. candidates :math:`x_1..x_k \sim q`, a scale
:math:`\rho \ge 1`. Let :math:`m(y) = \min(q(y), p(y)/\rho)`, :math:`\beta = \sum_y m(y)` and
:math:`P = (1 - \beta)^k`. Candidate i is accepted with probability
:math:`\min(1, p(x_i)/(\rho q(x_i)))`, in order; the first accepted candidate is emitted;
if all k are rejected, a token is drawn from

.. math:: R(y) = \frac{p(y) - m(y)\,(1 - P)/\beta}{P}.

Then, for every V, k >= 1 and rho:

1. :math:`P(\text{accept}) = 1 - (1 - \beta)^k` and :math:`\sum_y R(y) = 1`;
2. the emitted token has law exactly p (whenever R is a law);
3. :math:`1 - (1 - \beta)^k \le \rho\beta` (*validity*) implies :math:`R \ge 0`; conversely
   :math:`R \ge 0` implies validity as soon as some token has :math:`0 < p(y) \le \rho q(y)`.
   Without such a token the converse fails: p = (1, 0), q = (1/2, 1/2), rho = 6/5, k = 2 has
   R = (1, 0) >= 0 but :math:`1 - (1 - \beta)^2 = 3/4 > \rho\beta = 3/5` (checked exactly).
   (REFERENCES.md states "valid iff"; this is the precise form.)

Proof
-----
Each candidate, independently, is accepted and equal to y with probability
:math:`q(y)\min(1, p(y)/(\rho q(y))) = m(y)`, and rejected with probability
:math:`1 - \beta`. So :math:`P(\text{emit } y \text{ by acceptance}) = \sum_{i=1}^{k}
(1 - \beta)^{i-1} m(y) = m(y)(1 - P)/\beta` (sympy sums it for symbolic k) and the output is
:math:`m(1 - P)/\beta + P R = p`. Summing over y with :math:`\sum m = \beta`,
:math:`\sum p = 1` gives :math:`\sum R = 1` (sympy ``Sum``, symbolic V). Sign of R: where
:math:`p \le \rho q` (m = p/rho), :math:`R = p(\rho\beta - (1 - P))/(\rho\beta P)`; where
:math:`p > \rho q` (m = q), :math:`R - p(\rho\beta - (1 - P))/(\rho\beta P) =
(p/\rho - q)(1 - P)/(\beta P) \ge 0`. Both identities are checked for symbolic V, k.
Independently, for V = 2 and k = 2, 3, every candidate sequence and accept/reject branch
is enumerated with symbolic p, q, rho and every min resolved on all sign patterns of
:math:`p - \rho q`; the output law, :math:`\sum R` and the two forms of R are checked. (The
pattern :math:`p \ge \rho q` everywhere forces rho = 1 and p = q, where beta = 1, every
candidate is accepted and R is never used.)
"""

from __future__ import annotations

import itertools

import sympy as sp

from ._sym import assert_equal, assert_zero, law_symbols, pull_constants, resolve, sign_patterns

TITLE = "K-SEQ residual (SpecTr): a law when valid (iff, given a token with 0 < p <= rho q), output = target"


def _general() -> None:
    beta, rho = sp.symbols("beta rho", positive=True)
    k = sp.Symbol("k", integer=True, positive=True)
    i = sp.Symbol("i", integer=True, positive=True)
    m, pt, d = sp.symbols("m p q", positive=True)
    P = (1 - beta) ** k
    accepted = sp.summation((1 - beta) ** (i - 1) * m, (i, 1, k))
    accepted = sp.piecewise_fold(accepted)
    # sympy splits at beta = 0 (1 - beta = 1); beta > 0 here, take the generic branch
    if isinstance(accepted, sp.Piecewise):
        accepted = [e for e, c in accepted.args if not isinstance(c, sp.Eq)][0]
    assert_zero(sp.simplify(accepted - m * (1 - P) / beta), "sum_i (1 - beta)^(i-1) m = m (1 - P)/beta")
    R = (pt - m * (1 - P) / beta) / P
    assert_equal(m * (1 - P) / beta + P * R, pt, "output law = target")
    valid_gap = rho * beta - (1 - P)  # >= 0 is validity
    capped = pt * valid_gap / (rho * beta * P)
    assert_equal(R.subs(m, pt / rho), capped, "R where p <= rho q")
    assert_equal(
        R.subs(m, d) - capped, (pt / rho - d) * (1 - P) / (beta * P), "R - (capped form) where p > rho q"
    )
    # sum over a symbolic vocabulary
    j, V = sp.symbols("j V", integer=True, positive=True)
    p_, m_ = sp.IndexedBase("p"), sp.IndexedBase("m")
    total = pull_constants(sp.Sum((p_[j] - m_[j] * (1 - P) / beta) / P, (j, 1, V)))
    total = total.subs({sp.Sum(p_[j], (j, 1, V)): 1, sp.Sum(m_[j], (j, 1, V)): beta})
    assert_zero(sp.simplify(total - 1), "sum_y R(y) = 1 (symbolic V)")
    # P(accept) = sum_y m(y)(1 - P)/beta = 1 - (1 - beta)^k
    acc = pull_constants(sp.Sum(m_[j] * (1 - P) / beta, (j, 1, V))).subs(sp.Sum(m_[j], (j, 1, V)), beta)
    assert_zero(sp.simplify(acc - (1 - P)), "P(accept) = 1 - (1 - beta)^k")


def _counterexample() -> None:
    target, draft = [sp.Integer(1), sp.Integer(0)], [sp.Rational(1, 2), sp.Rational(1, 2)]
    rho, k = sp.Rational(6, 5), 2
    m = [sp.Min(d, t / rho) for t, d in zip(target, draft)]
    beta = sum(m)
    P = (1 - beta) ** k
    R = [(t - mm * (1 - P) / beta) / P for t, mm in zip(target, m)]
    assert all(r >= 0 for r in R) and sum(R) == 1, R
    assert 1 - P > rho * beta, "counterexample must violate validity"


def _explicit(k: int) -> None:
    V = 2
    target, draft = law_symbols("p", V), law_symbols("q", V)
    rho = sp.Symbol("rho", positive=True)
    simplex = {target[-1]: 1 - target[0], draft[-1]: 1 - draft[0]}
    m = [sp.Min(d, t / rho) for t, d in zip(target, draft)]
    beta = sum(m)
    P = (1 - beta) ** k
    R = [(t - mm * (1 - P) / beta) / P for t, mm in zip(target, m)]
    out = [sp.Integer(0)] * V
    for xs in itertools.product(range(V), repeat=k):
        prob = sp.Mul(*[draft[x] for x in xs])
        alive = sp.Integer(1)
        for x in xs:
            acc = sp.Min(1, target[x] / (rho * draft[x]))
            out[x] += prob * alive * acc
            alive *= 1 - acc
        for y in range(V):
            out[y] += prob * alive * R[y]
    for signs in sign_patterns([t - rho * d for t, d in zip(target, draft)]):

        def closed(e, signs=signs):
            return sp.sympify(resolve(e, signs)).subs(simplex)

        pattern = list(signs.values())
        if all(v > 0 for v in pattern):
            # p >= rho q everywhere: sum gives 1 >= rho, so rho = 1 and p = q; then beta = 1,
            # every candidate is accepted and R (0/0) is never used
            assert_equal(
                closed(sum(t - rho * d for t, d in zip(target, draft))),
                1 - rho,
                f"k={k}: pattern {pattern} forces rho <= 1",
            )
            assert_equal(
                resolve(beta.subs({rho: 1, draft[0]: target[0], draft[1]: target[1]}), signs).subs(simplex),
                1,
                f"k={k}: beta = 1 at p = q, rho = 1",
            )
            continue
        for y in range(V):
            assert_equal(closed(out[y]), closed(target[y]), f"k={k}: output law at {y} on {pattern}")
        assert_equal(closed(sum(R)), 1, f"k={k}: residual sums to 1 on {pattern}")
        assert_equal(
            closed(
                1
                - sum(
                    sp.Mul(*[1 - sp.Min(1, target[x] / (rho * draft[x])) for x in xs])
                    * sp.Mul(*[draft[x] for x in xs])
                    for xs in itertools.product(range(V), repeat=k)
                )
            ),
            closed(1 - P),
            f"k={k}: P(accept) = 1 - (1 - beta)^k on {pattern}",
        )
        valid_gap = rho * beta - (1 - P)
        for y in range(V):
            capped = target[y] * valid_gap / (rho * beta * P)
            if signs[sp.expand(target[y] - rho * draft[y])] < 0:
                assert_equal(closed(R[y]), closed(capped), f"k={k}: R({y}) capped form on {pattern}")
            else:
                assert_equal(
                    closed(R[y] - capped),
                    closed((target[y] / rho - draft[y]) * (1 - P) / (beta * P)),
                    f"k={k}: R({y}) uncapped form on {pattern}",
                )


def check() -> None:
    """Prove result 6 (raises AssertionError if sympy does not reduce an identity to 0)."""
    _general()
    _counterexample()
    for k in (2, 3):
        _explicit(k)


if __name__ == "__main__":
    check()
    print(f"PASS  {TITLE}")

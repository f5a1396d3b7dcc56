r"""Result 5: over-accepting rules with the optimal rejection law lie on the line rho + loss = TV.

Statement
---------
Let p = target, q = draft on V tokens and let a verifier accept the proposed token x ~ q
with probability :math:`b(x) \in [\min(1, p(x)/q(x)), 1]` (*over-acceptance*: at least the
lossless rule). Accepted mass :math:`a(x) = q(x) b(x)`, rejection probability
:math:`\rho = 1 - \sum_x a(x)`. On rejection emit a token from

.. math:: P^* = \max(p - a, 0) / Z^*,\qquad Z^* = \sum_x \max(p(x) - a(x), 0).

The output law is :math:`o = a + \rho P^*`, its loss :math:`\mathrm{TV}(o, p)`. Then

.. math:: \mathrm{TV}(o, p) = \sum_x \max(a(x) - p(x), 0) \quad\text{and}\quad
          \rho + \mathrm{TV}(o, p) = \mathrm{TV}(p, q),

so every such rule lies on the straight line from (0, TV) to (TV, 0) in the
(rejection, loss) plane. (P* is optimal: for any rejection law P, every x with
:math:`a(x) > p(x)` has :math:`o(x) - p(x) \ge a(x) - p(x)`, so the loss is at least
:math:`\sum_x \max(a - p, 0)`; and for any b at all, :math:`\rho + \sum (a - p)_+ =
1 - \sum\min(a, p) \ge 1 - \sum\min(q, p) = \mathrm{TV}` because a <= q: no rule is below
the line.)

Proof
-----
Case split per token. If :math:`p(x) \ge q(x)`: :math:`\min(1, p/q) = 1` forces b = 1 and
a = q <= p. If :math:`p(x) \le q(x)`: :math:`a(x) \ge p(x)`, a comparison added to the sign
table. On each pattern, :func:`check` resolves every min/max mechanically and proves with
sympy: (i) :math:`Z^* - \rho = L := \sum_{x: p \le q}(a - p) \ge 0` (a sum of table terms);
(ii) :math:`o(x) - p(x) = -(p(x) - q(x)) L / Z^*` where p >= q (so :math:`|o - p|` is minus
it) and :math:`o(x) - p(x) = a(x) - p(x) \ge 0` where p <= q; (iii) hence
:math:`\mathrm{TV}(o, p) = \sum \max(a - p, 0)` and :math:`\rho + \mathrm{TV}(o, p) = \mathrm{TV}(p, q)`,
for V = 2 and V = 3 with the last probability of each law as 1 - (sum of the others),
b symbolic. Patterns where :math:`Z^*` vanishes identically force p = q (checked) and then
a = p, rho = 0, loss 0. The general-V form follows from the pointwise lemmas
:math:`(p - a)_+ - (a - p)_+ = p - a`, :math:`(p - a)_+ = (p - q)_+` under over-acceptance,
and :math:`|p - q| = 2(p - q)_+ - (p - q)`, summed with sympy ``Sum`` for a symbolic V.
"""

from __future__ import annotations

import sympy as sp

from ._sym import assert_equal, assert_zero, law_symbols, pull_constants, resolve, sign_patterns

TITLE = "Pareto line: rejection + optimal TV loss = TV for over-accepting rules"


def _pointwise_lemmas() -> None:
    p, q, b = sp.symbols("p q b", positive=True)
    for signs in sign_patterns([p - q]):
        if signs[sp.expand(p - q)] > 0:
            a, extra = q, {}  # b >= min(1, p/q) = 1 forces b = 1
        else:
            a, extra = q * b, {sp.expand(q * b - p): 1}  # b >= p/q: a >= p
        table = {**signs, **extra}
        pos = lambda e, table=table: resolve(sp.Max(e, 0), table)  # noqa: E731
        assert_equal(pos(p - a) - pos(a - p), p - a, f"(p - a)+ - (a - p)+ = p - a on {signs}")
        assert_equal(pos(p - a), pos(p - q), f"(p - a)+ = (p - q)+ on {signs}")
        assert_equal(
            resolve(sp.Abs(p - q), signs),
            2 * pos(p - q) - (p - q),
            f"|p - q| = 2 (p - q)+ - (p - q) on {signs}",
        )


def _general_v() -> None:
    i, V = sp.symbols("i V", integer=True, positive=True)
    p, q, a = sp.IndexedBase("p"), sp.IndexedBase("q"), sp.IndexedBase("a")
    u = sp.IndexedBase("u")  # u[i] = (p_i - a_i)+ = (p_i - q_i)+ (lemmas)
    S = lambda e: pull_constants(sp.Sum(e, (i, 1, V)))  # noqa: E731
    ones = {sp.Sum(p[i], (i, 1, V)): 1, sp.Sum(q[i], (i, 1, V)): 1}
    rho = 1 - S(a[i])
    loss = S(u[i] - (p[i] - a[i])).subs(ones)  # (a - p)+ = (p - a)+ - (p - a)
    tv = S((2 * u[i] - (p[i] - q[i])) / 2).subs(ones)  # |p - q| = 2 (p - q)+ - (p - q)
    assert_zero(rho + loss - tv, "general V: rho + sum (a - p)+ = TV(p, q)")


def _explicit(V: int) -> None:
    target, draft, accept = law_symbols("p", V), law_symbols("q", V), law_symbols("b", V)
    simplex = {target[-1]: 1 - sum(target[:-1]), draft[-1]: 1 - sum(draft[:-1])}
    for signs in sign_patterns([p - q for p, q in zip(target, draft)]):
        up = [signs[sp.expand(target[x] - draft[x])] > 0 for x in range(V)]
        a = [draft[x] if up[x] else draft[x] * accept[x] for x in range(V)]
        table = dict(signs)
        table.update({sp.expand(a[x] - target[x]): 1 for x in range(V) if not up[x]})
        R = lambda e, table=table: sp.sympify(resolve(e, table)).subs(simplex)  # noqa: E731
        pattern = [1 if u else -1 for u in up]
        rho = 1 - sum(a)
        excess = [sp.Max(target[x] - a[x], 0) for x in range(V)]
        Zs = sum(excess)
        if len(set(up)) == 1:
            # all p - q of one sign while sum (p - q) = 0: forces p = q, checked below
            assert_zero(sp.expand((sum(target) - sum(draft)).subs(simplex)), "sum (p - q)")
            continue
        # mixed pattern: some p(x) > q(x) unless p = q, so Z* >= p(x) - q(x) > 0 off p = q
        out = [a[x] + rho * excess[x] / Zs for x in range(V)]
        L = sum(a[x] - target[x] for x in range(V) if not up[x])
        assert_equal(R(Zs - rho), R(L), f"V={V}: Z* - rho = L on {pattern}")
        abs_gap = []
        for x in range(V):
            if up[x]:
                assert_equal(
                    R(out[x] - target[x]),
                    R(-(target[x] - draft[x]) * L / Zs),
                    f"V={V}: o - p = -(p - q) L / Z* at token {x} on {pattern}",
                )
                abs_gap.append(-(out[x] - target[x]))  # (p - q) >= 0, L >= 0, Z* > 0
            else:
                assert_equal(
                    R(out[x] - target[x]),
                    R(a[x] - target[x]),
                    f"V={V}: o - p = a - p at token {x} on {pattern}",
                )
                abs_gap.append(out[x] - target[x])  # a - p >= 0 (table)
        loss = sum(abs_gap) / 2
        assert_equal(
            R(loss),
            R(sum(sp.Max(a[x] - target[x], 0) for x in range(V))),
            f"V={V}: TV(o, p) = sum (a - p)+ on {pattern}",
        )
        tv = sum(sp.Abs(target[x] - draft[x]) for x in range(V)) / 2
        assert_equal(R(rho + loss), R(tv), f"V={V}: rho + loss = TV(p, q) on {pattern}")
    # p = q: b >= min(1, p/q) = 1, so a = p, rho = 0 and the output is p (zero loss)
    a_eq = [sp.Min(1, p / p) * p for p in target]
    assert_zero(sum(a_eq) - sum(target), f"V={V}: rho = 0 at p = q")


def check() -> None:
    """Prove result 5 (raises AssertionError if sympy does not reduce an identity to 0)."""
    _pointwise_lemmas()
    _general_v()
    for V in (2, 3):
        _explicit(V)


if __name__ == "__main__":
    check()
    print(f"PASS  {TITLE}")

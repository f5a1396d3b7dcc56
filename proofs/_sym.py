r"""Shared machinery of the symbolic proofs: case splits that turn min/max/abs into polynomials.

A statement about laws built from ``min``, ``max`` and ``|.|`` is piecewise rational. The
proofs split the domain into *sign patterns*: for every comparison that appears (for example
:math:`p(x) - q(x)` for each token), one of the two closed half-spaces
:math:`s \cdot (p(x) - q(x)) \ge 0`, :math:`s = \pm 1`. Inside a pattern every
``Min``/``Max``/``Abs`` equals one of its arguments, so the formula becomes a rational
function and :mod:`sympy` can decide an identity by cancelling it to zero. The patterns cover
the whole domain (where two arguments tie, both choices give the same value), so checking
every pattern proves the identity everywhere.

Notation: p = target, q = draft, as everywhere in spectheory.

:func:`resolve` does the replacement *mechanically* from the sign table (it never trusts a
hand-written case formula): for ``Min(a, b)`` it finds the sign of ``a - b`` by writing
``a - b = c * key / den`` with ``key`` a compared difference of the table, ``c`` and ``den``
of known sign (products of positive symbols). A comparison it cannot certify raises
:class:`AssertionError`, so an unproved step never passes silently.
"""

from __future__ import annotations

import itertools

import sympy as sp

__all__ = [
    "law_symbols",
    "close_simplex",
    "resolve",
    "sign_patterns",
    "assert_zero",
    "assert_equal",
    "pull_constants",
]


def law_symbols(name: str, size: int) -> list[sp.Symbol]:
    """``size`` positive real symbols ``name1 .. name<size>`` for the entries of a law."""
    return list(sp.symbols(f"{name}1:{size + 1}", positive=True))


def close_simplex(expr, law: list[sp.Symbol]):
    """Substitute the last entry of ``law`` by ``1 - sum(others)`` (the law sums to 1)."""
    return sp.sympify(expr).subs(law[-1], 1 - sum(law[:-1]))


def sign_patterns(keys: list) -> list[dict]:
    """All ``2**len(keys)`` sign tables ``{expand(key): s}`` meaning ``s * key >= 0``."""
    keys = [sp.expand(k) for k in keys]
    return [dict(zip(keys, signs)) for signs in itertools.product((1, -1), repeat=len(keys))]


def _sign_of(diff, signs: dict, simplex: dict | None = None) -> int:
    """+1 if ``diff >= 0`` and -1 if ``diff <= 0`` on the pattern, else AssertionError.

    ``simplex`` (optional) maps the last entry of each law to ``1 - sum(others)``; it is
    applied to the numerator only, so the comparison is read on the simplex, while the
    denominator keeps its positive symbols."""
    num, den = sp.fraction(sp.together(diff))
    num = sp.expand(num.subs(simplex) if simplex else num)
    if num == 0:
        return 1
    den_sign = 1 if den.is_positive else (-1 if den.is_negative else 0)
    if den_sign == 0:
        raise AssertionError(f"cannot certify the sign of the denominator {den}")
    for key, s in signs.items():  # fast path: num = +-key
        if sp.expand(num - key) == 0:
            return s * den_sign
        if sp.expand(num + key) == 0:
            return -s * den_sign
    for key, s in signs.items():  # num = (positive or negative factor) * key
        ratio = sp.cancel(num / key)
        if ratio.is_positive:
            return s * den_sign
        if ratio.is_negative:
            return -s * den_sign
    raise AssertionError(f"cannot certify the sign of {diff} from the case split {signs}")


def resolve(expr, signs: dict, simplex: dict | None = None):
    """Replace every Min/Max/Abs in ``expr`` by the argument it equals on the pattern ``signs``
    (``simplex``: see :func:`_sign_of`)."""

    def pick(e):
        if isinstance(e, sp.Abs):
            return e.args[0] if _sign_of(e.args[0], signs, simplex) > 0 else -e.args[0]
        best = e.args[0]
        for other in e.args[1:]:
            s = _sign_of(best - other, signs, simplex)
            if isinstance(e, sp.Min) and s > 0:
                best = other
            elif isinstance(e, sp.Max) and s < 0:
                best = other
        return best

    expr = sp.sympify(expr)
    while expr.has(sp.Min, sp.Max, sp.Abs):
        # innermost first: atoms whose arguments are already free of Min/Max/Abs, each once
        inner = [
            e
            for e in expr.atoms(sp.Min, sp.Max, sp.Abs)
            if not any(a.has(sp.Min, sp.Max, sp.Abs) for a in e.args)
        ]
        expr = expr.xreplace({e: pick(e) for e in inner})
    return expr


def assert_zero(expr, what: str) -> None:
    """Raise AssertionError unless the rational expression ``expr`` cancels to 0."""
    reduced = sp.cancel(sp.together(sp.sympify(expr)))
    if reduced != 0 and sp.count_ops(reduced) < 400:  # small leftovers: try harder
        reduced = sp.simplify(reduced)
    if reduced != 0:
        raise AssertionError(f"{what}: sympy reduces the difference to {reduced}, not 0")


def assert_equal(lhs, rhs, what: str) -> None:
    """Raise AssertionError unless ``lhs - rhs`` cancels to 0."""
    assert_zero(sp.sympify(lhs) - sp.sympify(rhs), what)


def pull_constants(expr):
    """Rewrite every ``Sum(c * f(i), lims)`` as ``c * Sum(f(i), lims)`` after expanding sums
    over added terms (linearity of a finite sum, the only rule the general-V proofs use)."""

    def split(body, *limits):
        index = limits[0][0]
        const = [f for f in sp.Mul.make_args(body) if not f.has(index)]
        rest = [f for f in sp.Mul.make_args(body) if f.has(index)]
        return sp.Mul(*const) * sp.Sum(sp.Mul(*rest), *limits)

    return sp.expand(sp.expand(expr).replace(sp.Sum, split))

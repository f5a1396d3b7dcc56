r"""The best lossless single-path round, whatever the verifier reads: an LP with an exact certificate.

Notation: p = target, q = draft, ``gamma`` drafted tokens ``X = X_{1:gamma} ~ q`` (autoregressive)
after a context ``c``. A round emits ``e = (X_{1:tau}, y)``: ``tau`` accepted drafts, then one
token. Whatever a verifier reads -- the laws on the drafted path, the laws at *off-path*
contexts (``p(. | c, x_{<i}, v)`` for ``v != x_i``, as the GBV paper's extension allows), any
private randomness -- its round is summarised by the joint law ``pi(x, e)`` of the draft and
what it emits, and it is lossless exactly when

- ``sum_e pi(x, e) = q(x)`` for every drafted path ``x`` (the drafts are the draft's), and
- for every ``z`` of ``gamma + 1`` tokens, ``sum_{x, e prefix of z} pi(x, e) p(z_{|e|+1:} | c, e)
  = p(z | c)``: the emitted tokens, continued by the target, have the target's law (the
  definition of a valid verifier, Sun et al. 2024);

its expected accepted drafts are ``sum pi(x, e) tau(e)``. So the optimum of this linear program
bounds every lossless single-path rule, off-path information included, and "block verification
stays optimal with off-path probabilities" is exactly "block verification's value attains the
LP's optimum". :func:`lossless_round_optimum` solves it (HiGHS), rationalises the dual and
checks it *exactly* in Fractions: a dual-feasible ``y`` with ``b.y`` equal to block verification's
exact value proves, on that instance, that no lossless single-path rule accepts more.

The general proof (``docs/sequence_rules.md``, Theorem 6): for every lossless single-path rule,
whatever it reads, ``A_i(z) = P(tau >= i, X_{1:i} = z_{1:i}) <= m_i(z) = min_{0<=s<=i}
q(z_{1:s}) p(z_{s+1:i} | z_{1:s})`` (validity gives ``A_{k+1}(w y) <= p(y | w) A_k(w)``, and
``A_s <= q``), and block verification attains every ``m_i(z)``; :func:`single_path_bound`
computes ``sum_i sum_z m_i(z)``, so ``E[tau] <= single_path_bound`` is the LP optimum in closed
form.

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.analysis.round_lp import lossless_round_optimum
>>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
>>> r = lossless_round_optimum(p, q, 2, 2)
>>> r["certified"], r["bound"], r["block"]
(True, Fraction(11, 9), Fraction(11, 9))
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from .._guards import check_int

__all__ = ["lossless_round_optimum", "single_path_bound"]

LawFn = Callable[[tuple[int, ...]], Sequence[Any]]


def _seq_prob(fn: LawFn, ctx: tuple[int, ...], toks: tuple[int, ...]) -> Any:
    w: Any = 1
    for t in toks:
        w = w * fn(ctx)[t]
        ctx = ctx + (t,)
    return w


def single_path_bound(
    target_fn: LawFn,
    draft_fn: LawFn,
    vocab_size: int,
    gamma: int,
    prefix: tuple[int, ...] = (),
    per_prefix: bool = False,
) -> Any:
    r"""The most accepted drafts of any lossless single-path round: ``sum_{i<=gamma} sum_z m_i(z)``.

    ``m_i(z_{1:i}) = min_{0<=s<=i} q(z_{1:s} | c) p(z_{s+1:i} | c, z_{1:s})`` bounds
    ``P(tau >= i, X_{1:i} = z_{1:i})`` for every lossless rule, whatever it reads, and block
    verification attains it (``docs/sequence_rules.md``, Theorem 6). With Fraction laws the
    value is exact. ``per_prefix=True`` returns ``{z_{1:i}: m_i(z)}`` instead (``i = 1..gamma``).

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.analysis.round_lp import single_path_bound
    >>> p, q = (lambda c: [F(1, 3), F(2, 3)]), (lambda c: [F(2, 3), F(1, 3)])
    >>> [single_path_bound(p, q, 2, g) for g in (1, 2, 3)]   # block verification's values
    [Fraction(2, 3), Fraction(11, 9), Fraction(5, 3)]
    """
    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    c = tuple(prefix)
    out: dict[tuple[int, ...], Any] = {}
    for i in range(1, g + 1):
        for z in itertools.product(range(V), repeat=i):
            m = min(
                _seq_prob(draft_fn, c, z[:s]) * _seq_prob(target_fn, c + z[:s], z[s:]) for s in range(i + 1)
            )
            if m != 0:
                out[z] = m
    return out if per_prefix else sum(out.values(), 0)


def lossless_round_optimum(
    target_fn: LawFn,
    draft_fn: LawFn,
    vocab_size: int,
    gamma: int,
    prefix: tuple[int, ...] = (),
    max_denominator: int = 10**6,
) -> dict[str, Any]:
    r"""The LP optimum of a lossless single-path round (module docstring), with an exact dual bound.

    Parameters
    ----------
    target_fn, draft_fn : callable
        ``fn(context tuple) -> V`` probabilities (Fractions, for the exact certificate).
    vocab_size, gamma : int
    prefix : tuple of int
        The context ``c`` of the round.
    max_denominator : int
        The dual's values are rationalised with ``Fraction.limit_denominator``.

    Returns
    -------
    dict
        ``optimum`` (float, HiGHS), ``bound`` (Fraction: ``b.y`` of the rationalised dual),
        ``dual_feasible`` (bool: ``A^T y >= c`` holds exactly, so ``bound`` bounds every
        lossless rule), ``block`` (Fraction: block verification's expected accepted drafts,
        :func:`~spectheory.verifiers.block_exact.block_emission_law`) and ``certified``
        (``dual_feasible and bound == block``: block verification is optimal on the instance).
    """
    from scipy.optimize import linprog

    from ..verifiers.block_exact import block_emission_law
    from ..verifiers.round_laws import mean_accepted

    V = check_int(vocab_size, "vocab_size", 1)
    g = check_int(gamma, "gamma", 1)
    c = tuple(prefix)
    xs = [x for x in itertools.product(range(V), repeat=g) if _seq_prob(draft_fn, c, x) != 0]
    zs = {z: i for i, z in enumerate(itertools.product(range(V), repeat=g + 1))}
    variables = [(x, tau, y) for x in xs for tau in range(g + 1) for y in range(V)]
    entries: dict[tuple[int, int], Any] = {}
    for j, (x, tau, y) in enumerate(variables):
        entries[(xs.index(x), j)] = 1
        e = x[:tau] + (y,)
        for rest in itertools.product(range(V), repeat=g - tau):
            w = _seq_prob(target_fn, c + e, rest)
            if w != 0:
                entries[(len(xs) + zs[e + rest], j)] = w
    b = [_seq_prob(draft_fn, c, x) for x in xs] + [_seq_prob(target_fn, c, z) for z in zs]
    A = np.zeros((len(b), len(variables)))
    for (i, j), w in entries.items():
        A[i, j] = float(w)
    cost = np.array([tau for _, tau, _ in variables], dtype=np.float64)
    res = linprog(-cost, A_eq=A, b_eq=np.array(b, dtype=np.float64), bounds=(0, None), method="highs")
    if res.status != 0:
        raise ValueError(f"target_fn, draft_fn: the LP did not solve ({res.message})")
    dual = [
        Fraction(float(v)).limit_denominator(check_int(max_denominator, "max_denominator", 1))
        for v in -res.eqlin.marginals
    ]
    lhs: dict[int, Any] = {}
    for (i, j), w in entries.items():
        lhs[j] = lhs.get(j, 0) + w * dual[i]
    feasible = all(lhs.get(j, 0) >= tau for j, (_, tau, _) in enumerate(variables))
    bound = sum((bi * yi for bi, yi in zip(b, dual)), Fraction(0))
    block = mean_accepted(block_emission_law(target_fn, draft_fn, V, g, c))
    return {
        "optimum": float(-res.fun),
        "bound": bound,
        "dual_feasible": feasible,
        "block": block,
        "certified": bool(feasible and bound == block),
    }

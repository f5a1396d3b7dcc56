r"""Gumbel-max list sampling (GLS; Rowan, Phan & Khisti, NeurIPS 2025, arXiv 2506.05632), exactly.

Notation: p = target, q = draft (the paper writes ``p_X`` for the draft, ``q_Y`` for the
target). Algorithm 1 of the paper, at one position with ``K`` drafts: draw shared
``E^(k)_i ~ Exp(1)`` (``-ln U``) for drafts ``k = 1..K`` and tokens ``i``; the drafts are
``X^(k) = argmin_i E^(k)_i / q_i`` (i.i.d. ``q``) and the target's token is
``Y = argmin_i min_k E^(k)_i / p_i`` (law ``p``: ``min_k E^(k)_i ~ Exp(K)``); accept iff
``Y`` is one of the drafts. Algorithm 2 runs this position by position over the drafts that
still agree with the emitted prefix (fresh exponentials per position), so every emitted token
has the target's law (Proposition 3): no rejection sampling, and the output depends on the
draft model only through the drafted tokens ("drafter invariance").

**Exact list law** (:func:`gls_list_law`): ``P(Y = y, exactly n of the c drafts equal y)``. Fix
``y`` (``p_y, q_y > 0``); let ``t = min_k E^(k)_y / p_y`` (density ``c p_y e^{-c p_y t}``), the
draft ``k*`` attaining it has ``E_y = p_y t`` and, by memorylessness, the others ``E_y = p_y t
+ s`` with ``s ~ Exp(1)``. Given these, the drafts' other exponentials are independent and

- draft with ``E_y = a`` hits (``X = y``) and is compatible with ``Y = y`` with probability
  ``exp(-sum_{i != y} max(p_i t, q_i a / q_y))``; compatible with ``Y = y`` at all with
  ``exp(-t (1 - p_y))``.

Homogeneity (``a = t a'``) makes every factor an exponential of ``-t`` times a piecewise-linear
function of ``a'``, so the hit probability of a non-minimal draft,
``H(t) = t \int_0^inf exp(-t (u + Phi(p_y + u))) du`` with
``Phi(a') = sum_{i != y} max(p_i, q_i a' / q_y)``, is a finite sum of exponentials
``c_j e^{-r_j t}`` with rational ``c_j, r_j`` (one per linear piece), and

.. math::
   P(Y = y, n) = \int_0^\infty c\,p_y e^{-c p_y t}\Big[h_*(t)\tbinom{c-1}{n-1} H^{n-1} M^{c-n}
   + m_*(t) \tbinom{c-1}{n} H^{n} M^{c-1-n}\Big] dt,

with ``h_* = e^{-t Phi(p_y)}``, ``m_* = e^{-t(1 - p_y)} - h_*``, ``M = e^{-t(1 - p_y)} - H``:
an exponential polynomial integrated term by term (``\int c e^{-r t} = c / r``), exact in
Fractions. Summing over ``n`` gives ``p_y`` exactly (the list law's marginal is the target).
With ``c = 1`` it is Daliri et al.'s Gumbel coupling, ``P(X = Y = y) = 1 / sum_i max(p_i/p_y,
q_i/q_y)``. Tokens with ``q_y = 0`` are never drafted (``n = 0``).

Examples
--------
>>> from fractions import Fraction as F
>>> from spectheory.verifiers.gls import GLS_K2, gls_acceptance
>>> from spectheory.verifiers.round_laws import mean_accepted
>>> p, q = [F(1, 3), F(2, 3)], [F(2, 3), F(1, 3)]
>>> gls_acceptance(p, q, 1), gls_acceptance(p, q, 2)   # i.i.d. drafts' optimum at K = 2: 8/9
(Fraction(2, 3), Fraction(22, 27))
>>> GLS_K2.name, mean_accepted(GLS_K2.round_law(lambda c: p, lambda c: q, 2, 1))   # one position
('gls_k2', Fraction(22, 27))
"""

from __future__ import annotations

from math import comb
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_rng, check_int
from .._typing import RNGLike
from .round_law_rule import KDraftsRule

__all__ = [
    "gls_list_law",
    "gls_acceptance",
    "gls_round_law",
    "gls_sample",
    "gls_exponentials_given_drafts",
    "GLSDrafts",
    "GLS_K2",
]

ExpPoly = dict  # {rate: coefficient}: sum_j c_j exp(-r_j t)


def _mul(a: ExpPoly, b: ExpPoly) -> ExpPoly:
    out: ExpPoly = {}
    for ra, ca in a.items():
        for rb, cb in b.items():
            out[ra + rb] = out.get(ra + rb, 0) + ca * cb
    return out


def _add(a: ExpPoly, b: ExpPoly, sb: Any = 1) -> ExpPoly:
    out = dict(a)
    for r, c in b.items():
        out[r] = out.get(r, 0) + sb * c
    return out


def _pow(a: ExpPoly, n: int) -> ExpPoly:
    out: ExpPoly = {0 * next(iter(a)) if a else 0: 1}
    for _ in range(n):
        out = _mul(out, a)
    return out


def _hit_other(p: list, q: list, y: int) -> ExpPoly:
    """``H(t)`` of the module docstring as an exponential polynomial."""
    py, qy = p[y], q[y]
    others = [i for i in range(len(p)) if i != y]
    # u_i: where draft token i switches from the p-part to the q-part of Phi(p_y + u)
    br = sorted({p[i] * qy / q[i] - py for i in others if q[i] > 0 and p[i] * qy / q[i] - py > 0})
    edges = [0 * py] + br
    out: ExpPoly = {}
    for j, u0 in enumerate(edges):
        u1 = edges[j + 1] if j + 1 < len(edges) else None
        mid_q = [i for i in others if q[i] > 0 and p[i] * qy / q[i] - py <= u0]
        alpha = sum((p[i] for i in others if i not in mid_q), 0 * py) + sum(
            (q[i] * py / qy for i in mid_q), 0 * py
        )
        beta = sum((q[i] / qy for i in mid_q), 0 * py)
        slope = 1 + beta
        out = _add(out, {alpha + slope * u0: 1 / slope})
        if u1 is not None:
            out = _add(out, {alpha + slope * u1: 1 / slope}, -1)
    return out


def gls_list_law(target: ArrayLike, draft: ArrayLike, c: int) -> np.ndarray:
    r"""``law[y, n] = P(Y = y, exactly n of the c drafts equal y)`` under GLS (module docstring).

    Parameters
    ----------
    target, draft : array_like, shape (V,)
        Laws (floats, or ``fractions.Fraction`` for exact values).
    c : int >= 1
        Number of drafts in the list.

    Returns
    -------
    ndarray, shape (V, c + 1)
        Object array when the laws hold Fractions, float64 otherwise. Rows sum to ``target``.

    Examples
    --------
    >>> from fractions import Fraction as F
    >>> from spectheory.verifiers.gls import gls_list_law
    >>> law = gls_list_law([F(1, 2), F(1, 2)], [F(1, 4), F(3, 4)], 2)
    >>> [str(v) for v in law.sum(1)], str(law[:, 0].sum())   # target marginal; P(no draft hits)
    (['1/2', '1/2'], '7/48')
    """
    p, q = list(np.asarray(target, dtype=object)), list(np.asarray(draft, dtype=object))
    if len(p) != len(q) or len(p) < 1:
        raise ValueError(f"target and draft: expected two 1-d laws of one length, got {len(p)} and {len(q)}")
    c = check_int(c, "c", 1)
    exact = all(not isinstance(v, float) for v in p + q)
    if not exact:
        p, q = [float(v) for v in p], [float(v) for v in q]
    V = len(p)
    out = np.zeros((V, c + 1), dtype=object)
    out[:] = 0
    for y in range(V):
        py = p[y]
        if py == 0:
            continue
        if q[y] == 0:
            out[y, 0] = py
            continue
        comp = {1 - py: 1}  # e^{-t (1 - p_y)}
        phi = sum((max(p[i], q[i] * py / q[y]) for i in range(V) if i != y), 0 * py)
        h_star = {phi: 1}
        m_star = _add(comp, h_star, -1)
        H = _hit_other(p, q, y)
        M = _add(comp, H, -1)
        dens = {c * py: c * py}
        for n in range(c + 1):
            term: ExpPoly = {}
            if n >= 1:
                term = _add(term, _mul(h_star, _mul(_pow(H, n - 1), _pow(M, c - n))), comb(c - 1, n - 1))
            if n <= c - 1:
                term = _add(term, _mul(m_star, _mul(_pow(H, n), _pow(M, c - 1 - n))), comb(c - 1, n))
            out[y, n] = sum((co / r for r, co in _mul(dens, term).items()), 0 * py)
    return out if exact else out.astype(np.float64)


def gls_acceptance(target: ArrayLike, draft: ArrayLike, K: int) -> Any:
    """``P(Y in {X^(1..K)})`` at one position: ``1 - sum_y law[y, 0]`` (:func:`gls_list_law`)."""
    law = gls_list_law(target, draft, K)
    return 1 - law[:, 0].sum()


def gls_round_law(
    target_fn: Any, draft_fn: Any, vocab_size: int, M: int, gamma: int, prefix: tuple[int, ...] = ()
) -> dict[tuple[int, ...], Any]:
    r"""Exact law of the tokens one round of Algorithm 2 emits, ``{emitted: probability}``.

    ``M`` drafts of ``gamma`` tokens; at a position with ``c`` agreeing drafts the emitted token
    and the number of drafts still agreeing have the list law (:func:`gls_list_law`): ``n = 0``
    ends the round with that token, ``n >= 1`` continues with ``c = n``; after ``gamma``
    accepted tokens a bonus token follows. The shape of
    :func:`spectheory.verifiers.round_laws.proposal_round_law` (``target_fn(ctx)``,
    ``draft_fn(ctx)``: next-token laws after a context tuple; Fractions: exact).
    """
    V = check_int(vocab_size, "vocab_size", 1)
    M, g = check_int(M, "M", 1), check_int(gamma, "gamma", 1)
    out: dict[tuple[int, ...], Any] = {}

    def walk(s: tuple[int, ...], c: int, pr: Any) -> None:
        ctx = prefix + s
        p = target_fn(ctx)
        if len(s) == g:
            for y in range(V):
                if p[y] != 0:
                    out[s + (y,)] = out.get(s + (y,), 0) + pr * p[y]
            return
        law = gls_list_law(p, draft_fn(ctx), c)
        for y in range(V):
            if law[y, 0] != 0:
                out[s + (y,)] = out.get(s + (y,), 0) + pr * law[y, 0]
            for n in range(1, c + 1):
                if law[y, n] != 0:
                    walk(s + (y,), n, pr * law[y, n])

    walk((), M, 1)
    return out


class GLSDrafts(KDraftsRule):
    r"""GLS (Algorithm 2) with ``K`` drafts of ``gamma`` tokens as a rule with a round law
    (:func:`gls_round_law`).

    Not a single-path Verifier (it checks ``K`` draft sequences; its engines' round is
    ``BatchRound(K, gamma, reading="gls")``); named ``"gls_k{K}"``; lossless (Proposition 3). The
    module docstring has an example.
    """

    stem = "gls_k"
    law = staticmethod(gls_round_law)


#: GLS with two drafts (the claimed-vs-exact table's ``"gls_k2"``).
GLS_K2 = GLSDrafts(2)


def gls_sample(
    target: ArrayLike, draft: ArrayLike, K: int, n: int, rng: RNGLike = None
) -> tuple[np.ndarray, np.ndarray]:
    """Algorithm 1, ``n`` times: ``(drafts [n, K], y [n])`` from shared exponentials.

    Examples
    --------
    >>> from spectheory.verifiers.gls import gls_sample
    >>> x, y = gls_sample([0.5, 0.5], [0.9, 0.1], 2, 1000, rng=0)
    >>> x.shape, y.shape
    ((1000, 2), (1000,))
    """
    t = np.asarray(target, dtype=np.float64)
    d = np.asarray(draft, dtype=np.float64)
    K, n = check_int(K, "K", 1), check_int(n, "n", 1)
    E = -np.log(1.0 - as_rng(rng).random((n, K, t.size)))
    with np.errstate(divide="ignore"):
        x = np.argmin(E / d, axis=-1)
        y = np.argmin((E / t).min(1), axis=-1)
    return x, y


def gls_exponentials_given_drafts(
    draft_rows: np.ndarray, tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    r"""Exponentials ``E [R, V]`` distributed as Algorithm 1's given that ``argmin E / q = token``.

    Exponential races: ``T_i = E_i / q_i ~ Exp(q_i)``, ``min T ~ Exp(1)`` independent of the
    argmin, and the others exceed the minimum by independent ``Exp(q_i)`` (memorylessness).
    So ``E_x = q_x m`` and ``E_i = q_i m + G_i`` (``G_i ~ Exp(1)``; ``E_i = G_i`` where
    ``q_i = 0``), ``m ~ Exp(1)``. Lets a verifier that sees only the drafted tokens run GLS
    with its exact law (the kit, which hands verifiers drafted tokens, uses it).
    """
    q = np.asarray(draft_rows, dtype=np.float64)
    x = np.asarray(tokens, dtype=np.int64)
    R, V = q.shape
    m = -np.log(1.0 - rng.random(R))
    G = -np.log(1.0 - rng.random((R, V)))
    E = q * m[:, None] + G
    E[np.arange(R), x] = q[np.arange(R), x] * m
    return E

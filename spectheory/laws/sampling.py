r"""Sampling primitives and the standard token-verification rule, vectorised over rounds.

Random draws are kept apart from the rules: :func:`sample_categorical` and
:func:`token_rule` are pure functions of hand-given uniforms, and
:func:`token_verify_round` only draws the uniforms and calls :func:`token_rule`.
Notation: p = target, q = draft (code says ``target``/``draft``).

The round-verification signature (the contract shared with :mod:`spectheory.verifiers`)::

    verify_round(target_laws [R, g+1, V], draft_laws [R, g, V], draft_tokens [R, g],
                 k [R], rng) -> (n_accepted [R] int, final_token [R] int)

Row ``i`` of ``target_laws``/``draft_laws`` is the law at the ``i``-th drafted position
along run ``r``'s draft path; ``target_laws[r, k[r]]`` is the law after all ``k[r]``
drafts (the bonus law). Only the first ``k[r] <= g`` drafts count; the rest is padding.
``final_token`` is the residual sample when ``n_accepted < k`` and the bonus sample (from
``target_laws[r, k]``) when ``n_accepted == k``.

Validation: the pure rules on hand-given uniforms (:func:`token_rule`,
:func:`spectheory.verifiers.block.block_rule`) check shapes, token ranges, ``k`` and the law
values (finite, non-negative; :func:`check_round_laws`). The ``*_verify_round`` functions the
simulator calls once per round check shapes, token ranges and ``k`` but **skip the law-value
check** (a full pass over ``[R, g+1, V]`` costs 10-25% of a round at ``V = 1000``): their laws
come from a :class:`~spectheory.DecodingChain`, validated when it is built. Call the pure
rule when the laws come from elsewhere.
"""
from __future__ import annotations

import numpy as np

__all__ = ["sample_categorical", "sample_from_cdf", "CdfTable", "normalized_cdf", "token_rule", "token_verify_round", "residual_weights",
           "check_round_laws", "RESIDUAL_MASS_TOL"]

#: Residual mass below this is rounding noise of (near-)equal laws: the residual is then
#: taken to be the target itself (the convention of :func:`spectheory.residual`).
RESIDUAL_MASS_TOL = 1e-15


def sample_categorical(probs, u) -> np.ndarray:
    r"""Inverse-CDF categorical sampling, batched over leading axes.

    Returns, for each row, the smallest index ``x`` with :math:`F(x) > u`, where
    :math:`F = \mathrm{cumsum}(w) / \sum w` is the row's normalised CDF (last entry
    exactly 1). Rows need not be normalised (they are non-negative weights with positive
    total). A token of weight zero is
    never returned, and ``u`` in ``[0, 1)`` always gives an index in ``[0, V)``.

    Parameters
    ----------
    probs : array_like, shape (..., V)
        Non-negative weights with positive row sums (not checked, for speed).
    u : array_like, shape (...)
        Uniforms in ``[0, 1)``.

    Returns
    -------
    ndarray of int64, shape (...)

    Examples
    --------
    >>> from spectheory.laws.sampling import sample_categorical
    >>> sample_categorical([[0.2, 0.0, 0.8], [0.2, 0.0, 0.8]], [0.19, 0.2]).tolist()
    [0, 2]
    """
    probs = np.asarray(probs, dtype=np.float64)
    u = np.asarray(u, dtype=np.float64)
    if probs.shape[:-1] != u.shape:
        raise ValueError(f"u: expected shape {probs.shape[:-1]}, got {u.shape}")
    return sample_from_cdf(normalized_cdf(probs), u)


def normalized_cdf(weights) -> np.ndarray:
    r"""Row-wise CDF ``cumsum(w) / sum(w)`` over the last axis; the last entry is exactly 1.

    Equal consecutive entries (zero-weight tokens) stay equal, so :func:`sample_from_cdf`
    never returns a zero-weight token. Shapes ``(..., V)``; row sums must be positive.
    """
    cdf = np.cumsum(weights, axis=-1)
    cdf /= cdf[..., -1:]
    return cdf


def sample_from_cdf(cdf, u) -> np.ndarray:
    r"""Inverse CDF: the number of entries ``<= u`` of each row of a normalised CDF.

    ``cdf`` ``(..., V)`` as from :func:`normalized_cdf` (last entry exactly 1), ``u``
    ``(...)`` in ``[0, 1)``. The result is the first index whose CDF exceeds ``u``: a
    token of positive weight, in ``[0, V)``.
    """
    return np.count_nonzero(cdf <= u[..., None], axis=-1).astype(np.int64)


class CdfTable:
    r"""Rows of normalised CDFs with a guide table, for exact O(1)-expected inverse CDF.

    Guide-table (cutpoint) method: ``guide[r, c]`` is the first index ``x`` with
    ``cdf[r, x] > c / V``. For ``u`` in ``[c/V, (c+1)/V)`` the inverse CDF (first ``x``
    with ``cdf[r, x] > u``) is at or after ``guide[r, c]``, and a short forward scan finds
    it (on average at most about one step). Results are identical to
    ``sample_from_cdf(cdf[rows], u)`` for every ``u``.

    Parameters
    ----------
    weights : array_like, shape (..., V)
        Non-negative weights with positive row sums; flattened to ``M`` rows.

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.laws.sampling import CdfTable
    >>> table = CdfTable([[0.2, 0.0, 0.8], [0.0, 0.5, 0.5]])
    >>> table.sample(np.array([0, 0, 1, 1]), np.array([0.1, 0.2, 0.0, 0.5])).tolist()
    [0, 2, 1, 2]
    """

    def __init__(self, weights):
        w = np.asarray(weights, dtype=np.float64)
        V = w.shape[-1]
        self.cdf = np.ascontiguousarray(normalized_cdf(w).reshape(-1, V))
        M = self.cdf.shape[0]
        self.grid = np.arange(V) / V
        # e[r, x]: first cell c with grid[c] >= cdf[r, x]; guide[r, c] = #{x : e[r, x] <= c}
        #        = #{x : cdf[r, x] <= grid[c]}  (comparisons in floating point, as at sampling)
        e = np.searchsorted(self.grid, self.cdf.ravel(), side="left")
        cnt = np.bincount(np.repeat(np.arange(M) * (V + 1), V) + e, minlength=M * (V + 1))
        self.guide = np.cumsum(cnt.reshape(M, V + 1)[:, :V], axis=1).astype(np.int32).ravel()
        self.flat = self.cdf.ravel()
        self.V = V
        for a in (self.cdf, self.grid, self.guide):
            a.setflags(write=False)

    def sample(self, rows, u) -> np.ndarray:
        """Inverse CDF of rows ``rows`` ``[R]`` at uniforms ``u`` ``[R]`` in ``[0, 1)``."""
        V = self.V
        u = np.asarray(u, dtype=np.float64)
        c = np.minimum((u * V).astype(np.int64), V - 1)
        c -= self.grid[c] > u                      # guard against rounding of u * V
        base = np.asarray(rows, dtype=np.int64) * V
        x = np.take(self.guide, base + c).astype(np.int64)  # first x with cdf > grid[c] <= u
        idx = np.flatnonzero(np.take(self.flat, base + x) <= u)
        while idx.size:                            # forward scan; cdf[V-1] = 1 > u stops it
            x[idx] += 1
            idx = idx[np.take(self.flat, base[idx] + x[idx]) <= u[idx]]
        return x


def residual_weights(target, draft) -> np.ndarray:
    r"""Unnormalised residual :math:`\max(p - q, 0)`, or ``target`` where its mass is zero.

    A zero residual mass means target == draft up to rounding, in which case a rejection
    has probability zero (or rounding size) and the target law is the correct fallback,
    as in :func:`spectheory.residual`. Shapes ``(..., V)``.
    """
    excess = np.maximum(target - draft, 0.0)
    mass = excess.sum(axis=-1, keepdims=True)
    return np.where(mass > RESIDUAL_MASS_TOL, excess, target)


def check_round_laws(target_laws, draft_laws):
    """Raise ValueError if a round's laws have NaN, infinite or negative entries (argument
    named). Row sums are not checked (inverse-CDF sampling normalises)."""
    for a, name in ((target_laws, "target_laws"), (draft_laws, "draft_laws")):
        if a.size and not a.min() >= 0:          # NaN fails the comparison too
            raise ValueError(f"{name}: laws must be finite and non-negative")
        if a.size and not np.isfinite(a.max()):
            raise ValueError(f"{name}: laws must be finite and non-negative")


def _check_round_args(target_laws, draft_laws, draft_tokens, k):
    t = np.asarray(target_laws, dtype=np.float64)
    d = np.asarray(draft_laws, dtype=np.float64)
    x = np.asarray(draft_tokens)
    kk = np.asarray(k)
    if d.ndim != 3:
        raise ValueError(f"draft_laws: expected shape (R, g, V), got {d.shape}")
    R, g, V = d.shape
    if g < 1:
        raise ValueError("draft_laws: need at least one drafted position (g >= 1)")
    if t.shape != (R, g + 1, V):
        raise ValueError(f"target_laws: expected shape {(R, g + 1, V)}, got {t.shape}")
    if x.shape != (R, g) or not np.issubdtype(x.dtype, np.integer):
        raise ValueError(f"draft_tokens: expected an int array of shape {(R, g)}, got {x.dtype} {x.shape}")
    if x.size and (x.min() < 0 or x.max() >= V):
        raise ValueError(f"draft_tokens: entries must lie in [0, {V})")
    if kk.shape != (R,) or not np.issubdtype(kk.dtype, np.integer):
        raise ValueError(f"k: expected an int array of shape ({R},), got {kk.dtype} {kk.shape}")
    if kk.size and (kk.min() < 1 or kk.max() > g):
        raise ValueError(f"k: entries must lie in [1, {g}]")
    return t, d, x.astype(np.int64), kk.astype(np.int64)


def _token_rule(t, d, x, k, u_accept, u_final):
    R, g, _ = d.shape
    rows = np.arange(R)
    tx = np.take_along_axis(t[:, :g], x[..., None], axis=-1)[..., 0]
    dx = np.take_along_axis(d, x[..., None], axis=-1)[..., 0]
    # accept x with probability min(1, t(x)/d(x)):  u < t/d  <=>  u * d < t  (d(x) > 0 for drafted x)
    ok = (u_accept * dx < tx) & (np.arange(g)[None, :] < k[:, None])
    j = np.cumprod(ok, axis=1).sum(axis=1).astype(np.int64)
    rejected = j < k
    jc = np.minimum(j, g - 1)
    law = np.where(rejected[:, None], residual_weights(t[rows, jc], d[rows, jc]), t[rows, k])
    return j, sample_categorical(law, u_final)


def token_rule(target_laws, draft_laws, draft_tokens, k, u_accept, u_final):
    r"""Standard token verification of a round (Leviathan et al. 2023), given the uniforms.

    Pseudo-code, for each run ``r`` (p = target, q = draft)::

        for i in 0 .. k-1:
            if u_accept[i] * q_i(x_i) < p_i(x_i):       # i.e. u < min(1, p_i(x_i)/q_i(x_i))
                continue                                  # accept draft token x_i
            return i, inverse_cdf(max(p_i - q_i, 0), u_final)   # reject: residual sample
        return k, inverse_cdf(p_k, u_final)               # all accepted: bonus sample

    Parameters
    ----------
    target_laws : array_like, shape (R, g+1, V)
    draft_laws : array_like, shape (R, g, V)
    draft_tokens : array_like of int, shape (R, g)
    k : array_like of int, shape (R,)
        Number of drafts that count, ``1 <= k <= g``.
    u_accept : array_like, shape (R, g)
        Uniforms in ``[0, 1)`` for the acceptance tests (entry ``i`` for draft ``i``).
    u_final : array_like, shape (R,)
        Uniform for the residual or bonus sample (see :func:`sample_categorical`).

    Returns
    -------
    n_accepted : ndarray of int64, shape (R,)
    final_token : ndarray of int64, shape (R,)

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.laws.sampling import token_rule
    >>> target = np.array([[[0.5, 0.5], [0.5, 0.5]]])      # R=1, g=1, V=2
    >>> draft = np.array([[[0.8, 0.2]]])
    >>> # draft token 0: accepted iff u * 0.8 < 0.5, i.e. u < 0.625; residual is token 1
    >>> token_rule(target, draft, [[0]], [1], [[0.7]], [0.3])
    (array([0]), array([1]))
    >>> token_rule(target, draft, [[0]], [1], [[0.6]], [0.3])
    (array([1]), array([0]))
    """
    t, d, x, kk = _check_round_args(target_laws, draft_laws, draft_tokens, k)
    R, g = x.shape
    ua = np.asarray(u_accept, dtype=np.float64)
    uf = np.asarray(u_final, dtype=np.float64)
    if ua.shape != (R, g):
        raise ValueError(f"u_accept: expected shape {(R, g)}, got {ua.shape}")
    if uf.shape != (R,):
        raise ValueError(f"u_final: expected shape ({R},), got {uf.shape}")
    if np.any((ua < 0) | (ua >= 1)) or np.any((uf < 0) | (uf >= 1)):
        raise ValueError("u_accept, u_final: uniforms must lie in [0, 1)")
    check_round_laws(t, d)
    return _token_rule(t, d, x, kk, ua, uf)


def token_verify_round(target_laws, draft_laws, draft_tokens, k, rng=None):
    r"""Standard token verification of a round with fresh uniforms from ``rng``.

    Draws ``u_accept ~ U[0,1)^{R x g}`` and ``u_final ~ U[0,1)^R`` and applies
    :func:`token_rule` (see there for the rule and shapes). Lossless: the emitted
    tokens follow the target law. Checks shapes, token range and ``k`` but not the law
    values (the simulator's hot path; see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from spectheory.laws.sampling import token_verify_round
    >>> laws = np.full((3, 2, 4), 0.25)        # target == draft: everything accepted
    >>> j, y = token_verify_round(laws, laws[:, :1], np.zeros((3, 1), int), np.ones(3, int), rng=0)
    >>> j.tolist()
    [1, 1, 1]
    """
    t, d, x, kk = _check_round_args(target_laws, draft_laws, draft_tokens, k)
    rng = np.random.default_rng(rng)
    R, g = x.shape
    return _token_rule(t, d, x, kk, rng.random((R, g)), rng.random(R))

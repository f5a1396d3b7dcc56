r"""A gallery of deliberately buggy speculative verifiers, one per bug class seen in the wild.

Each function has the kit's interface ``verify(target_probs [k+1, V], draft_probs [k, V],
draft_tokens [k], rng) -> emitted`` and differs from
:func:`spectheory.testing.reference_verify` by one realistic mistake (p = target, q = draft).
:data:`GALLERY` maps a name to ``(verify, bug description, checks expected to fail)``; the
tests assert that :func:`spectheory.testing.check_verifier` flags every one, and
``simulations/testing_kit_power.py`` measures how many samples it needs for each.

>>> from spectheory.testing.gallery import GALLERY
>>> len(GALLERY) >= 10
True
"""

from __future__ import annotations

import numpy as np

__all__ = ["GALLERY"]


def _inv_cdf(weights, u):
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    return int(np.count_nonzero(cdf <= u))


def _excess(t, d):
    e = np.maximum(t - d, 0.0)
    return e if e.sum() > 1e-15 else t


def _accepted(t, d, x, u):
    k = len(x)
    j = np.arange(k)
    ok = u * d[j, x] < t[j, x]
    return k if ok.all() else int(np.argmin(ok))


def _emit(x, n, y):
    return np.append(np.asarray(x[:n], dtype=np.int64), np.int64(y))


def residual_not_normalised(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Samples the residual by inverse CDF on ``max(p - q, 0)`` without dividing by its mass."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))
    if n == k:
        return _emit(x, n, _inv_cdf(t[k], rng.random()))
    cdf = np.cumsum(np.maximum(t[n] - d[n], 0.0))  # BUG: total mass TV < 1
    y = min(int(np.count_nonzero(cdf <= rng.random())), len(cdf) - 1)
    return _emit(x, n, y)


def draft_law_mismatch(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Ratio and residual use the draft law before temperature 0.5 was applied, not the law sampled from."""
    t, x = target_probs, draft_tokens
    d = np.sqrt(draft_probs)  # BUG: q**(1/2) renormalised = law at T=2 ...
    d = d / d.sum(-1, keepdims=True)  # ... but the tokens were drawn from q
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))
    y = _inv_cdf(t[k] if n == k else _excess(t[n], d[n]), rng.random())
    return _emit(x, n, y)


def shared_uniform(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Draws one uniform and reuses it for every draft position."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    u = rng.random()
    n = _accepted(t, d, x, np.full(k, u))  # BUG: same u at every position
    y = _inv_cdf(t[k] if n == k else _excess(t[n], d[n]), rng.random())
    return _emit(x, n, y)


def first_draft_unverified(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Accepts the first draft token without a test (verification starts at position 1)."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    u = rng.random(k)
    u[0] = 0.0
    ok = u * d[np.arange(k), x] < t[np.arange(k), x]
    ok[0] = True  # BUG
    n = k if ok.all() else int(np.argmin(ok))
    y = _inv_cdf(t[k] if n == k else _excess(t[n], d[n]), rng.random())
    return _emit(x, n, y)


def no_stop_after_rejection(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Replaces a rejected token by a residual sample but keeps verifying the later drafts."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    out = []
    for j in range(k):  # BUG: no break after a rejection
        if rng.random() * d[j, x[j]] < t[j, x[j]]:
            out.append(int(x[j]))
        else:
            out.append(_inv_cdf(_excess(t[j], d[j]), rng.random()))
    out.append(_inv_cdf(t[k], rng.random()))
    return np.array(out, dtype=np.int64)


def leq_accepts_zero(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Accepts with ``u <= p/q``, so at ``u = 0`` a token of target probability 0 passes."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    u = rng.random(k)
    j = np.arange(k)
    ok = u * d[j, x] <= t[j, x]  # BUG: <= instead of <
    n = k if ok.all() else int(np.argmin(ok))
    y = _inv_cdf(t[k] if n == k else _excess(t[n], d[n]), rng.random())
    return _emit(x, n, y)


def bonus_from_draft(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Draws the bonus token from the last draft law instead of the target's bonus row."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))
    y = _inv_cdf(d[k - 1] if n == k else _excess(t[n], d[n]), rng.random())  # BUG: d[k-1]
    return _emit(x, n, y)


def bonus_row_off_by_one(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Draws the bonus token from ``target_probs[k-1]`` (the last draft position) instead of ``[k]``."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))
    y = _inv_cdf(t[k - 1] if n == k else _excess(t[n], d[n]), rng.random())  # BUG: t[k-1]
    return _emit(x, n, y)


def nan_when_equal(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Normalises every position's residual eagerly; 0/0 = NaN where target == draft crashes the sampler."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))
    excess = np.maximum(t[:k] - d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        res = excess / excess.sum(-1, keepdims=True)  # BUG: NaN rows when t == d
    recovered = [rng.choice(len(r), p=r) for r in res]  # raises on NaN, like torch.multinomial
    y = _inv_cdf(t[k], rng.random()) if n == k else recovered[n]
    return _emit(x, n, y)


def residual_wrong_sign(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Samples the residual from ``max(q - p, 0)`` (p and q swapped, as between papers)."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))
    y = _inv_cdf(t[k] if n == k else _excess(d[n], t[n]), rng.random())  # BUG: swapped
    return _emit(x, n, y)


def ratio_inverted(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Accepts with ``min(1, q(x)/p(x))`` (p and q swapped in the ratio)."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(d, t, x, rng.random(k))  # BUG: swapped; u * p < q
    y = _inv_cdf(t[k] if n == k else _excess(t[n], d[n]), rng.random())
    return _emit(x, n, y)


def resample_from_target(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """After a rejection samples from the target instead of the residual."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    n = _accepted(t, d, x, rng.random(k))
    y = _inv_cdf(t[n], rng.random())  # BUG when n < k: should be the residual
    return _emit(x, n, y)


def wasteful_lossless(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Lossless but wasteful: accepts with half the optimal probability, residual fixed accordingly."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    j = np.arange(k)
    ok = rng.random(k) < 0.5 * np.minimum(1.0, t[j, x] / d[j, x])  # acceptance b = min(1, p/q) / 2 ...
    n = k if ok.all() else int(np.argmin(ok))
    if n == k:
        return _emit(x, n, _inv_cdf(t[k], rng.random()))
    a = 0.5 * np.minimum(t[n], d[n])  # ... with the unbiased rejection law
    return _emit(x, n, _inv_cdf(np.maximum(t[n] - a, 0.0), rng.random()))


def global_random_state(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Ignores ``rng`` and draws from NumPy's global random state (not reproducible from a seed)."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    # The deliberate bug this sampler exists for: the kit must catch draws from NumPy's global
    # state (not reproducible from the seed), so the legacy calls stay.
    n = _accepted(t, d, x, np.random.random(k))  # noqa: NPY002
    y = _inv_cdf(t[k] if n == k else _excess(t[n], d[n]), np.random.random())  # noqa: NPY002
    return _emit(x, n, y)


def accept_all_positions_equal_law(
    target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
) -> np.ndarray:
    """Uses the first position's laws at every position (rows not advanced with the draft)."""
    t, d, x = target_probs, draft_probs, draft_tokens
    k = len(x)
    tt = np.repeat(t[:1], k + 1, axis=0)  # BUG: row 0 everywhere
    dd = np.repeat(d[:1], k, axis=0)
    n = _accepted(tt, dd, x, rng.random(k))
    y = _inv_cdf(tt[k] if n == k else _excess(tt[n], dd[n]), rng.random())
    return _emit(x, n, y)


#: name -> (verify, description, checks that must fail)
GALLERY = {
    "residual_not_normalised": (residual_not_normalised, "residual not normalised", ("first_token_law",)),
    "draft_law_mismatch": (
        draft_law_mismatch,
        "draft law in the ratio differs from the one sampled from (pre-temperature law)",
        ("first_token_law",),
    ),
    "shared_uniform": (shared_uniform, "one uniform reused across positions", ("sequence_law",)),
    "first_draft_unverified": (
        first_draft_unverified,
        "first draft token never verified",
        ("first_token_law",),
    ),
    "no_stop_after_rejection": (no_stop_after_rejection, "no stop after a rejection", ("output_format",)),
    "leq_accepts_zero": (
        leq_accepts_zero,
        "`<=` lets a zero-probability token through",
        ("forced_uniforms",),
    ),
    "bonus_from_draft": (bonus_from_draft, "bonus token drawn from the draft law", ("position_laws",)),
    "bonus_row_off_by_one": (
        bonus_row_off_by_one,
        "bonus token from the previous target row (off by one)",
        ("position_laws",),
    ),
    "nan_when_equal": (nan_when_equal, "NaN residual when target == draft", ("runs_without_error",)),
    "residual_wrong_sign": (
        residual_wrong_sign,
        "residual max(q - p, 0) (p/q swapped)",
        ("first_token_law",),
    ),
    "ratio_inverted": (ratio_inverted, "acceptance min(1, q/p) (p/q swapped)", ("first_token_law",)),
    "resample_from_target": (
        resample_from_target,
        "target instead of the residual after a rejection",
        ("first_token_law",),
    ),
    "wasteful_lossless": (
        wasteful_lossless,
        "lossless but accepts half as often as optimal",
        ("acceptance_rate",),
    ),
    "global_random_state": (
        global_random_state,
        "ignores rng (global random state)",
        ("uncontrolled_randomness",),
    ),
    "rows_not_advanced": (
        accept_all_positions_equal_law,
        "first position's laws used at every position",
        ("position_laws",),
    ),
}

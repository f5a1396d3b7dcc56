r"""A gallery of deliberately buggy speculative verifiers, one per bug class seen in the wild.

Each function has the kit's interface ``verify(target_probs [k+1, V], draft_probs [k, V],
draft_tokens [k], rng) -> emitted`` and differs from
:func:`spectheory.testing.reference_verify` by one realistic mistake (p = target, q = draft).
``_variant`` builds all but one as standard speculative sampling with one step replaced (the
laws, the acceptance test, the bonus or residual law, the draw), and so do the field and
engine galleries (``gallery_field``, ``gallery_engines``).
:data:`GALLERY` maps a name to ``(verify, bug description, checks expected to fail)``; the
tests assert that :func:`spectheory.testing.check_verifier` flags every one, and
``simulations/testing_kit_power.py`` measures how many samples it needs for each.

>>> from spectheory.testing.gallery import GALLERY
>>> len(GALLERY) >= 10
True
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["GALLERY"]


def _inv_cdf(weights, u):
    cdf = np.cumsum(weights)
    cdf /= cdf[-1]
    return int(np.count_nonzero(cdf <= u))


def _excess(t, d):
    e = np.maximum(t - d, 0.0)
    return e if e.sum() > 1e-15 else t


def _first_failure(ok):
    """Drafts accepted given each position's test outcome: those before the first failure."""
    return len(ok) if ok.all() else int(np.argmin(ok))


def _accepted(t, d, x, u):
    j = np.arange(len(x))
    return _first_failure(u * d[j, x] < t[j, x])


def _emit(x, n, y):
    return np.append(np.asarray(x[:n], dtype=np.int64), np.int64(y))


def _same_laws(t, d):
    return t, d


def _accept(t, d, x, rng):
    return _accepted(t, d, x, rng.random(len(x)))


def _bonus_row(t, d):
    return t[len(d)]


def _draw(law, rng):
    return _inv_cdf(law, rng.random())


def _token_step(bonus=_bonus_row, residual=_excess, draw=_draw):
    """The emitted-token step: ``draw`` from ``bonus(t, d)`` when all ``k`` drafts are accepted,
    else from ``residual(t[n], d[n])``."""

    def token(t, d, n, rng):
        return draw(bonus(t, d) if n == len(d) else residual(t[n], d[n]), rng)

    return token


_token = _token_step()


def _torch_draw(law, rng):
    """Draws the emitted token by ``torch.multinomial`` (torch's generator, not ``rng``)."""
    import torch

    return int(torch.multinomial(torch.from_numpy(law), 1))


def _torch_leq(uniforms):
    """The acceptance step ``u <= p/q`` in float32 torch, ``u = uniforms(ratio)`` (``<=``: u = 0 accepts p = 0)."""

    def accept(t, d, x, rng):
        import torch

        j = np.arange(len(x))
        ratio = torch.from_numpy(t[j, x] / d[j, x]).float()
        return _first_failure((uniforms(ratio) <= ratio).numpy())

    return accept


Steps = Callable[..., Any]


def _variant(
    name: str,
    doc: str,
    *,
    laws: Steps = _same_laws,
    accept: Steps = _accept,
    bonus: Steps = _bonus_row,
    residual: Steps = _excess,
    draw: Steps = _draw,
    token: Steps | None = None,
) -> Callable[..., np.ndarray]:
    """Standard speculative sampling with some of its steps replaced: the gallery's one skeleton.

    A round is ``t, d = laws(target_probs, draft_probs)``; ``n = accept(t, d, draft_tokens, rng)``
    drafts accepted; then one token, ``token(t, d, n, rng)``, by default ``draw(law, rng)`` of
    ``bonus(t, d)`` (``n = k``) or of ``residual(t[n], d[n])`` (a rejection at ``n``). The
    defaults are the correct steps (p = target, q = draft): ``u_j * q_j(x_j) < p_j(x_j)`` with
    ``u = rng.random(k)``, the bonus row ``p_k``, the residual ``max(p_n - q_n, 0)``, an
    inverse-CDF draw with one uniform of ``rng``.

    Returns the verifier ``verify(target_probs, draft_probs, draft_tokens, rng) -> emitted``
    named ``name`` with the docstring ``doc``.
    """

    emitted = token or _token_step(bonus, residual, draw)

    def verify(
        target_probs: np.ndarray, draft_probs: np.ndarray, draft_tokens: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        t, d = laws(target_probs, draft_probs)
        n = accept(t, d, draft_tokens, rng)
        return _emit(draft_tokens, n, emitted(t, d, n, rng))

    verify.__name__ = verify.__qualname__ = name
    verify.__doc__ = doc
    return verify


def _unnormalised_residual(t, d, n, rng):
    if n == len(d):
        return _inv_cdf(t[n], rng.random())
    cdf = np.cumsum(np.maximum(t[n] - d[n], 0.0))  # BUG: total mass TV < 1
    return min(int(np.count_nonzero(cdf <= rng.random())), len(cdf) - 1)


residual_not_normalised = _variant(
    "residual_not_normalised",
    "Samples the residual by inverse CDF on ``max(p - q, 0)`` without dividing by its mass.",
    token=_unnormalised_residual,
)


def _sqrt_draft(t, d):
    d = np.sqrt(d)  # BUG: q**(1/2) renormalised = law at T=2 ...
    return t, d / d.sum(-1, keepdims=True)  # ... but the tokens were drawn from q


draft_law_mismatch = _variant(
    "draft_law_mismatch",
    "Ratio and residual use the draft law before temperature 0.5 was applied, not the law sampled from.",
    laws=_sqrt_draft,
)

shared_uniform = _variant(
    "shared_uniform",
    "Draws one uniform and reuses it for every draft position.",
    accept=lambda t, d, x, rng: _accepted(t, d, x, np.full(len(x), rng.random())),  # BUG: same u everywhere
)


def _first_untested(t, d, x, rng):
    j = np.arange(len(x))
    ok = rng.random(len(x)) * d[j, x] < t[j, x]
    ok[0] = True  # BUG
    return _first_failure(ok)


first_draft_unverified = _variant(
    "first_draft_unverified",
    "Accepts the first draft token without a test (verification starts at position 1).",
    accept=_first_untested,
)


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


def _accepted_leq(t, d, x, u):
    j = np.arange(len(x))
    return _first_failure(u * d[j, x] <= t[j, x])  # BUG: <= instead of <


leq_accepts_zero = _variant(
    "leq_accepts_zero",
    "Accepts with ``u <= p/q``, so at ``u = 0`` a token of target probability 0 passes.",
    accept=lambda t, d, x, rng: _accepted_leq(t, d, x, rng.random(len(x))),
)

bonus_from_draft = _variant(
    "bonus_from_draft",
    "Draws the bonus token from the last draft law instead of the target's bonus row.",
    bonus=lambda t, d: d[-1],  # BUG: d[k-1]
)

bonus_row_off_by_one = _variant(
    "bonus_row_off_by_one",
    "Draws the bonus token from ``target_probs[k-1]`` (the last draft position) instead of ``[k]``.",
    bonus=lambda t, d: t[len(d) - 1],  # BUG: t[k-1]
)


def _eager_residuals(t, d, n, rng):
    k = len(d)
    excess = np.maximum(t[:k] - d, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        res = excess / excess.sum(-1, keepdims=True)  # BUG: NaN rows when t == d
    recovered = [rng.choice(len(r), p=r) for r in res]  # raises on NaN, like torch.multinomial
    return _inv_cdf(t[k], rng.random()) if n == k else recovered[n]


nan_when_equal = _variant(
    "nan_when_equal",
    "Normalises every position's residual eagerly; 0/0 = NaN where target == draft crashes the sampler.",
    token=_eager_residuals,
)

residual_wrong_sign = _variant(
    "residual_wrong_sign",
    "Samples the residual from ``max(q - p, 0)`` (p and q swapped, as between papers).",
    residual=lambda tn, dn: _excess(dn, tn),  # BUG: swapped
)

ratio_inverted = _variant(
    "ratio_inverted",
    "Accepts with ``min(1, q(x)/p(x))`` (p and q swapped in the ratio).",
    accept=lambda t, d, x, rng: _accept(d, t, x, rng),  # BUG: swapped; u * p < q
)

resample_from_target = _variant(
    "resample_from_target",
    "After a rejection samples from the target instead of the residual.",
    residual=lambda tn, dn: tn,  # BUG when n < k: should be the residual
)


def _half_acceptance(t, d, x, rng):
    j = np.arange(len(x))
    b = 0.5 * np.minimum(1.0, t[j, x] / d[j, x])  # acceptance b = min(1, p/q) / 2 ...
    return _first_failure(rng.random(len(x)) < b)


wasteful_lossless = _variant(
    "wasteful_lossless",
    "Lossless but wasteful: accepts with half the optimal probability, residual fixed accordingly.",
    accept=_half_acceptance,
    residual=lambda tn, dn: np.maximum(
        tn - 0.5 * np.minimum(tn, dn), 0.0
    ),  # ... with the unbiased rejection law
)

# The deliberate bug this sampler exists for: the kit must catch draws from NumPy's global
# state (not reproducible from the seed), so the legacy calls stay.
global_random_state = _variant(
    "global_random_state",
    "Ignores ``rng`` and draws from NumPy's global random state (not reproducible from a seed).",
    accept=lambda t, d, x, rng: _accepted(t, d, x, np.random.random(len(x))),  # noqa: NPY002
    draw=lambda law, rng: _inv_cdf(law, np.random.random()),  # noqa: NPY002
)

accept_all_positions_equal_law = _variant(
    "accept_all_positions_equal_law",
    "Uses the first position's laws at every position (rows not advanced with the draft).",
    laws=lambda t, d: (np.repeat(t[:1], len(t), axis=0), np.repeat(d[:1], len(d), axis=0)),  # BUG: row 0
)


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

r"""Gallery: samplers correct on clean laws that break on hostile numerics (p = target, q = draft).

Each is standard token verification written the way engine code often is, one numerical
habit away from the reference; every one passes the default kit (clean float64 laws, drafts
drawn from ``q``, so ``q(x) > 0``) and is flagged by the hostile families of
:mod:`spectheory.testing.hostile`:

* ``nan_ratio_accepts`` -- rejects when ``u >= p(x)/q(x)``: on a masked draft the ratio is 0/0 =
  NaN, ``u >= NaN`` is False, and the drafted token of target probability 0 is *emitted*
  (``zero_probability`` on ``masked_drafts``);
* ``ratio_zero_division`` -- the ratio in Python floats, ``float(p) / float(q)``: a masked draft
  raises ``ZeroDivisionError`` (``runs_without_error`` on ``masked_drafts``);
* ``choice_as_law`` -- the bonus token drawn with ``rng.choice(V, p=row)`` on the row as float64,
  trusting it to be a law: rows of float16, bfloat16 or float32 that do not sum to 1 within
  numpy's ``1e-8`` raise ``ValueError`` (``runs_without_error`` on ``float16``, ``bfloat16``,
  ``neg_inf_logits``).

:data:`HOSTILE_BUGS` maps a name to ``(verify, description, hostile families that break it,
checks of which at least one fails there)``; ``tests/testing/test_hostile.py`` checks each is
flagged there and passes the default kit.

>>> from spectheory.testing import check_verifier
>>> from spectheory.testing.gallery_hostile import HOSTILE_BUGS
>>> verify = HOSTILE_BUGS["nan_ratio_accepts"][0]
>>> report = check_verifier(verify, n_samples=200, rng=0, hostile=["masked_drafts"])
>>> report.config["hostile"][0]["failed"][:2]    # it emits the masked draft
['zero_probability', 'forced_uniforms']
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ..laws.sampling import normalized_cdf, sample_from_cdf

__all__ = ["HOSTILE_BUGS", "nan_ratio_accepts", "ratio_zero_division", "choice_as_law"]


def _draw(weights, rng):
    w = np.asarray(weights, dtype=np.float64)
    return int(sample_from_cdf(normalized_cdf(w), np.array(rng.random())))


def _residual(tp, dp):
    return np.maximum(np.asarray(tp, np.float64) - np.asarray(dp, np.float64), 0.0)


def nan_ratio_accepts(
    target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: np.random.Generator
) -> np.ndarray:
    """Token verification rejecting when ``u >= p/q`` (a NaN ratio never rejects)."""
    x = np.asarray(draft_tokens, dtype=np.int64)
    for j, xj in enumerate(x):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.float64(target_probs[j, xj]) / np.float64(draft_probs[j, xj])
        if rng.random() >= ratio:  # BUG: 0/0 = NaN, and u >= NaN is False: accepted
            return np.append(x[:j], _draw(_residual(target_probs[j], draft_probs[j]), rng))
    return np.append(x, _draw(target_probs[len(x)], rng))


def ratio_zero_division(
    target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: np.random.Generator
) -> np.ndarray:
    """Token verification with the ratio in Python floats (``q(x) = 0`` raises)."""
    x = np.asarray(draft_tokens, dtype=np.int64)
    for j, xj in enumerate(x):
        ratio = float(target_probs[j, xj]) / float(draft_probs[j, xj])  # BUG: ZeroDivisionError
        if rng.random() >= min(1.0, ratio):
            return np.append(x[:j], _draw(_residual(target_probs[j], draft_probs[j]), rng))
    return np.append(x, _draw(target_probs[len(x)], rng))


def choice_as_law(
    target_probs: Any, draft_probs: Any, draft_tokens: Any, rng: np.random.Generator
) -> np.ndarray:
    """Token verification drawing the bonus with ``rng.choice(V, p=row)`` (the row trusted to sum to 1)."""
    x = np.asarray(draft_tokens, dtype=np.int64)
    for j, xj in enumerate(x):
        if rng.random() * float(draft_probs[j, xj]) >= float(target_probs[j, xj]):
            return np.append(x[:j], _draw(_residual(target_probs[j], draft_probs[j]), rng))
    row = np.asarray(target_probs[len(x)], dtype=np.float64)
    return np.append(x, int(rng.choice(row.size, p=row)))  # BUG: raises unless the row sums to 1


#: name -> (verify, description, hostile families that break it, checks of which at least one fails there)
HOSTILE_BUGS: dict[str, tuple[Callable[..., Any], str, tuple[str, ...], tuple[str, ...]]] = {
    "nan_ratio_accepts": (
        nan_ratio_accepts,
        "rejects when u >= p/q: a masked draft's 0/0 ratio is NaN and accepts a token of target probability 0",
        ("masked_drafts",),
        ("zero_probability",),
    ),
    "ratio_zero_division": (
        ratio_zero_division,
        "the ratio in Python floats: a masked draft (q(x) = 0) raises ZeroDivisionError",
        ("masked_drafts",),
        ("runs_without_error",),
    ),
    "choice_as_law": (
        choice_as_law,
        "the bonus drawn with rng.choice(V, p=row): float16/bfloat16/float32 rows not summing to 1 raise",
        ("float16", "bfloat16", "neg_inf_logits"),
        ("runs_without_error",),
    ),
}

r"""Hostile numerics: the instance families whose *inputs* are what engines really hand a sampler.

An engine's probabilities are not clean float64 laws: top-k / top-p masking zeroes entries
after the drafts were drawn, kernels return ``-inf`` logits, a NaN, float16 or bfloat16
rows that do not sum to 1, exact ties, denormals. Each family below is an
:class:`~spectheory.testing.Instance` whose laws (``target``, ``draft``: the truth the kit
judges against) are float64 and normalised, while ``shown`` holds the arrays the sampler is
handed (:meth:`~spectheory.testing.Instance.sample_drafts`). What a correct sampler must do on
each (p = target, q = draft) is its entry of :data:`HOSTILE_FAMILIES`:

==================  =============================================================================
family              what the sampler is handed, and what it must do
==================  =============================================================================
``masked_drafts``   the target masked to its top half, the draft drawn *before* the same mask
                    was applied to it: a drafted token can have ``q(x) = 0`` and ``p(x) = 0``
                    (0/0 in ``p/q``). It must reject it: no NaN, no exception, no token of
                    target probability 0, and the law stays the target's (the mask zeroes ``q``
                    only where ``p = 0``, which leaves ``min(p, q)`` and ``(p - q)_+`` as they were)
``masked_target``   a target masked to 2 tokens (top-k with k = 2): only those emitted, the law right
``neg_inf_logits``  float32 softmax of logits with ``-inf`` entries on both sides: exact zeros,
                    rows summing to 1 only to float32 precision; never a ``-inf`` token, law right
``nan_rows``        a NaN in one target entry (a bad kernel): raise ``ValueError`` (or
                    ``FloatingPointError``) naming it -- a refusal -- or emit well-formed tokens,
                    none of them the NaN one; never another exception, never a garbage token.
                    The law tests do not run (a NaN row has none)
``float16``         float16 rows (subnormals included) that do not sum to 1: each row is its law
                    up to its sum; no exception, no token of probability 0, the law of the
                    normalised rows
``bfloat16``        the same in bfloat16 (8 bits of mantissa; handed as float32 arrays, as
                    ``tensor.float()`` gives them)
``ties``            exact ties: ``p/q`` exactly 1, joint ratios exactly 1 (the opt-in family of
                    :mod:`~spectheory.testing.instances`)
``denormals``       float64 subnormal probabilities (``1e-310``, ``5e-324``) beside exact zeros
                    on both sides: no overflow to NaN, no token of probability 0, law right
==================  =============================================================================

A run asks for them with ``check_verifier(..., hostile=True)`` (or a list of names), or a
sampler declares ``hostile = True``; they are opt-in, so the default run and its recorded
numbers stay as they were. The report lists each hostile instance with what it requires and
whether the sampler met it (``config["hostile"]``, :func:`spectheory.testing._plan.hostile_verdicts`), the first broken one with a small call
that reproduces it (its arrays printed exactly, dtype included).

>>> from spectheory.testing import check_verifier, reference_verify
>>> report = check_verifier(reference_verify, n_samples=200, rng=0, hostile=["masked_drafts", "nan_rows"])
>>> [(h["family"], h["passed"]) for h in report.config["hostile"]]
[('masked_drafts', True), ('nan_rows', True)]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = [
    "HOSTILE_FAMILIES",
    "HOSTILE_SET",
    "REFUSABLE",
    "hostile_families",
    "refused",
]


def _cf(rows_t, rows_d, V):
    """Context-free ``(target [k+1, V, V], draft [k, V, V])`` from one row per position."""
    t = np.repeat(np.asarray(rows_t)[:, None, :], V, axis=1)
    d = np.repeat(np.asarray(rows_d)[:, None, :], V, axis=1)
    return t, d


def _top(rng, V, keep):
    p = rng.dirichlet(np.ones(V))
    p[np.argsort(p)[: V - keep]] = 0.0  # top-k masking
    return p / p.sum()


def _fam_masked_drafts(rng, V, k):
    rows_t = [_top(rng, V, max(1, V // 2)) for _ in range(k + 1)]
    rows_d = [0.3 * rows_t[j] + 0.7 * rng.dirichlet(np.ones(V)) for j in range(k)]
    t, d = _cf(rows_t, rows_d, V)
    return t, d, None, np.where(t[:k] > 0, d, 0.0)  # the draft masked after it was drawn


def _fam_masked_target(rng, V, k):
    rows_t = [_top(rng, V, min(2, V - 1)) for _ in range(k + 1)]
    return _cf(rows_t, [rng.dirichlet(np.ones(V)) for _ in range(k)], V)


def _fam_neg_inf(rng, V, k):
    def row():
        z = (2.0 * rng.normal(size=V)).astype(np.float32)
        z[rng.choice(V, size=max(1, V // 3), replace=False)] = -np.inf
        e = np.exp(z - z.max())
        return e / e.sum()

    t, d = _cf([row() for _ in range(k + 1)], [row() for _ in range(k)], V)
    return t.astype(np.float64), d.astype(np.float64), t, d


def _fam_nan(rng, V, k):
    t, d = _cf(
        [rng.dirichlet(np.ones(V)) for _ in range(k + 1)], [rng.dirichlet(np.ones(V)) for _ in range(k)], V
    )
    j, v = int(rng.integers(k + 1)), int(rng.integers(V))
    t[j, :, v] = 0.0  # the truth: that entry is no token to emit
    t /= t.sum(-1, keepdims=True)
    shown = t.copy()
    shown[j, :, v] = np.nan  # a bad kernel
    return t, d, shown, None


def _low(rng, V, conc, tiny):
    p = rng.dirichlet(np.full(V, conc))
    perm = rng.permutation(V)
    p[perm[0]] = tiny  # a subnormal in float16 (3e-6), or in float64
    if V > 3:
        p[perm[1]] = 0.0
    return p / p.sum()


def _bf16(a):
    """Round to bfloat16 (nearest, ties to even), as float32."""
    b = np.asarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = ((b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) >> np.uint64(16)) << np.uint64(16)
    return r.astype(np.uint32).view(np.float32)


def _fam_half(dtype):
    def build(rng, V, k):
        t, d = _cf(
            [_low(rng, V, 0.5, 3e-6) for _ in range(k + 1)], [_low(rng, V, 0.5, 3e-6) for _ in range(k)], V
        )
        st, sd = (t.astype(np.float16), d.astype(np.float16)) if dtype == "float16" else (_bf16(t), _bf16(d))
        return st.astype(np.float64), sd.astype(np.float64), st, sd

    return build


def _fam_denormals(rng, V, k):
    def row():
        p = _low(rng, V, 0.7, 1e-310)
        p[rng.integers(V)] = 5e-324 if V > 2 else p[rng.integers(V)]
        return p

    return _cf([row() for _ in range(k + 1)], [row() for _ in range(k)], V)


#: name -> (builder(rng, V, k) -> (target, draft[, shown target or None, shown draft or None]),
#: description: what is handed and what a correct sampler must do, needs several positions)
HOSTILE_FAMILIES: dict[str, tuple[Any, str, bool]] = {
    "masked_drafts": (
        _fam_masked_drafts,
        "masked drafts: target top-k masked, the draft masked after drawing (q(x) = 0 = p(x), 0/0 in p/q); "
        "must reject it: no NaN, no exception, no token of target probability 0, the law right",
        True,
    ),
    "masked_target": (
        _fam_masked_target,
        "target masked to 2 tokens (top-2): only those emitted, the law right",
        True,
    ),
    "neg_inf_logits": (
        _fam_neg_inf,
        "float32 softmax of logits with -inf entries on both sides (exact zeros, rows off 1 by float32 "
        "rounding): never a -inf token, no exception, the law right",
        True,
    ),
    "nan_rows": (
        _fam_nan,
        "a NaN in one target entry (a bad kernel): refuse (ValueError/FloatingPointError) or emit "
        "well-formed tokens, never the NaN one; no other exception",
        True,
    ),
    "float16": (
        _fam_half("float16"),
        "float16 rows (subnormals included) not summing to 1: each row its law up to its sum; no "
        "exception, no token of probability 0, the law of the normalised rows",
        True,
    ),
    "bfloat16": (
        _fam_half("bfloat16"),
        "bfloat16 rows (handed as float32) not summing to 1: each row its law up to its sum; no "
        "exception, no token of probability 0, the law of the normalised rows",
        True,
    ),
    "denormals": (
        _fam_denormals,
        "float64 subnormal probabilities (1e-310, 5e-324) beside exact zeros on both sides: no overflow "
        "to NaN, no exception, no token of probability 0, the law right",
        True,
    ),
}

#: Families on which a refusal (``ValueError``/``FloatingPointError``) is correct, and whose law is not tested.
REFUSABLE = ("nan_rows",)

#: The hostile set a ``hostile=True`` run adds (``ties`` lives in the instances' opt-in families).
HOSTILE_SET = (
    "masked_drafts",
    "masked_target",
    "neg_inf_logits",
    "nan_rows",
    "float16",
    "bfloat16",
    "ties",
    "denormals",
)


def hostile_families(hostile: bool | str | Sequence[str] | None) -> list[str]:
    """The hostile families a run adds: none (False/None), all of :data:`HOSTILE_SET` (True), or the named ones.

    >>> hostile_families(["float16"]), len(hostile_families(True))
    (['float16'], 8)
    """
    if hostile is None or hostile is False:
        return []
    if hostile is True:
        return list(HOSTILE_SET)
    names = [hostile] if isinstance(hostile, str) else list(hostile)
    for n in names:
        if n not in HOSTILE_SET:
            raise ValueError(f"hostile: unknown family {n!r}; choose from {list(HOSTILE_SET)}")
    return names


def refused(family: str, err: Any) -> bool:
    """Whether the error ``err`` (the runner's ``(row, repr, traceback)``) is a correct refusal on ``family``."""
    return err is not None and family in REFUSABLE and err[1].startswith(("ValueError", "FloatingPointError"))

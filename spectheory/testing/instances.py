r"""Test instances for the conformance kit: small context-dependent laws with exact answers.

An :class:`Instance` (:mod:`spectheory.testing.round_instance`, where its laws and exact
answers are described) is one speculative round of ``k`` draft tokens as a tiny first-order
tree. This module builds them: the adversarial *families* (:data:`FAMILIES`,
:func:`make_instance`) are the cases on which real samplers break, and
:func:`constant_uniform_rng` gives the extreme uniforms ``0`` and ``1 - 2**-53``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from .._guards import as_rng, check_int
from .._typing import RNGLike
from .hostile import HOSTILE_FAMILIES
from .round_instance import Instance

__all__ = [
    "Instance",
    "FAMILIES",
    "OPT_IN_FAMILIES",
    "ALL_FAMILIES",
    "make_instance",
    "constant_uniform_rng",
    "dyadic_law",
    "tied_pair",
    "iid_instance",
]

TINY = 1e-6


# ------------------------------------------------------------------------- families
def _dir(rng, V, conc=1.0):
    return rng.dirichlet(np.full(V, conc))


def _with_zeros(rng, V, n_zero):
    law = _dir(rng, V)
    if n_zero:
        law[rng.choice(V, size=min(n_zero, V - 1), replace=False)] = 0.0
    return law / law.sum()


def _context_free(rows_t, rows_d, V):
    t = np.repeat(np.asarray(rows_t)[:, None, :], V, axis=1)
    d = np.repeat(np.asarray(rows_d)[:, None, :], V, axis=1)
    return t, d


def _fam_disjoint(rng, V, k):
    h = max(1, V // 2)
    t0 = np.zeros(V)
    t0[:h] = _dir(rng, h)
    d0 = np.zeros(V)
    d0[h:] = _dir(rng, V - h)
    rows_t = [t0] + [_dir(rng, V) for _ in range(k)]
    rows_d = [d0] + [_dir(rng, V) for _ in range(k - 1)]
    return _context_free(rows_t, rows_d, V)


def _fam_zeros(rng, V, k):
    rows_t, rows_d = [], []
    for _ in range(k + 1):
        perm = rng.permutation(V)
        nz = max(1, V // 3)
        t = _dir(rng, V)
        t[perm[:nz]] = 0.0  # target zeros on A
        d = 0.6 * t / t.sum() + 0.4 * _dir(rng, V)
        if V >= 3:
            d[perm[nz : 2 * nz][: V - nz - 1]] = (
                0.0  # draft zeros on B (disjoint from A, a common token left)
            )
        rows_t.append(t / t.sum())
        rows_d.append(d / d.sum())
    return _context_free(rows_t, rows_d[:k], V)


def _fam_one_hots(rng, V, k):
    perm = rng.permutation(V)
    a, b = int(perm[0]), int(perm[-1])
    cases_t, cases_d = [], []
    # 0: draft one-hot on a, target spread with t(a) = 0.6 (accepted 60%, residual avoids a)
    t = 0.4 * _dir(rng, V - 1)
    t = np.insert(t, a, 0.6) if V > 1 else np.array([1.0])
    cases_t.append(t / t.sum())
    cases_d.append(np.eye(V)[a])
    # 1: target one-hot on b, draft spread with d(b) = 0.5
    d = 0.5 * _dir(rng, V - 1)
    d = np.insert(d, b, 0.5)
    cases_t.append(np.eye(V)[b])
    cases_d.append(d / d.sum())
    # 2: both one-hot on the same token (always accepted)
    cases_t.append(np.eye(V)[a])
    cases_d.append(np.eye(V)[a])
    # 3: one-hots on different tokens (always rejected)
    cases_t.append(np.eye(V)[b])
    cases_d.append(np.eye(V)[a])
    rows_t = [cases_t[j % 4] for j in range(k)] + [np.eye(V)[b]]
    rows_d = [cases_d[j % 4] for j in range(k)]
    return _context_free(rows_t, rows_d, V)


def _fam_equal(rng, V, k):
    rows = [_dir(rng, V) for _ in range(k)]
    bonus = _dir(rng, V, 0.5)
    return _context_free(rows + [bonus], rows, V)


def _fam_tiny(rng, V, k):
    rows_t, rows_d = [], []
    for _ in range(k + 1):
        perm = rng.permutation(V)
        t = _dir(rng, V) + 0.05
        d = _dir(rng, V) + 0.05
        t[perm[0]] = TINY  # the draft likes a token the target almost never emits
        d[perm[0]] = 0.5 * d.sum()
        if V > 2:
            d[perm[1]] = TINY  # the target likes a token the draft almost never proposes
            t[perm[1]] = 0.5 * t.sum()
        rows_t.append(t / t.sum())
        rows_d.append(d / d.sum())
    return _context_free(rows_t, rows_d[:k], V)


def _fam_flatter(rng, V, k):
    rows_t = [_dir(rng, V, 0.3) for _ in range(k + 1)]
    rows_d = [np.full(V, 1.0 / V) for _ in range(k)]
    return _context_free(rows_t, rows_d, V)


def _fam_sharper(rng, V, k):
    rows_t = [0.5 * _dir(rng, V, 2.0) + 0.5 / V for _ in range(k + 1)]
    rows_d = []
    for j in range(k):
        s = rows_t[j] ** 4
        rows_d.append(s / s.sum())
    return _context_free(rows_t, rows_d, V)


def _fam_positions(rng, V, k):
    # distinct laws per position: a peaked law rotated by one token per position
    base_t, base_d = _dir(rng, V, 0.5), _dir(rng, V, 0.5)
    base_d = 0.5 * base_d + 0.5 * base_t
    rows_t = [np.roll(base_t, j) for j in range(k + 1)]
    rows_d = [np.roll(base_d, 2 * j) for j in range(k)]
    return _context_free(rows_t, rows_d, V)


def _fam_markov(rng, V, k):
    t = rng.dirichlet(np.full(V, 0.7), size=(k + 1, V))
    d = 0.5 * t[:k] + 0.5 * rng.dirichlet(np.full(V, 0.7), size=(k, V))
    # a few exact zeros in the target, kept consistent (rows renormalised)
    mask = rng.random(t.shape) < 0.15
    mask[..., 0] = False
    t = np.where(mask, 0.0, t)
    t /= t.sum(-1, keepdims=True)
    return t, d


def dyadic_law(rng: np.random.Generator, V: int, total: int = 64) -> np.ndarray:
    """A law ``[V]`` of multiples of ``1/total`` (a power of two), all positive: sums and ratios exact."""
    cuts = np.sort(rng.choice(np.arange(1, total), size=V - 1, replace=False))
    return np.diff(np.concatenate([[0], cuts, [total]])) / total


def tied_pair(t: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """``t`` with the values of two tokens swapped: ratio exactly 1 elsewhere, ``r`` and ``1/r`` on the pair."""
    d = t.copy()
    a, b = rng.choice(t.size, size=2, replace=False)
    d[a], d[b] = t[b], t[a]
    return d


def _fam_ties(rng, V, k):
    # Sun et al.'s binary example generalised: one dyadic law at every position, the draft the
    # same law with two tokens' values swapped, so p/q is exactly 1 on the other tokens and the
    # joint ratio of a block drafting a then b is exactly 1
    t = dyadic_law(rng, V)
    d = tied_pair(t, rng)
    return _context_free([t] * k + [dyadic_law(rng, V)], [d] * k, V)


#: name -> (builder(rng, V, k) -> (target [k+1,V,V], draft [k,V,V]), description, needs several positions)
FAMILIES = {
    "disjoint_supports": (
        _fam_disjoint,
        "target and draft have disjoint supports at the first position "
        "(every draft is rejected; the residual is the target)",
        False,
    ),
    "zeros": (
        _fam_zeros,
        "target and draft with exact zeros at different tokens, one law per position",
        True,
    ),
    "one_hots": (
        _fam_one_hots,
        "one-hot target, one-hot draft, both one-hot (equal and different), cycling over positions",
        True,
    ),
    "equal": (
        _fam_equal,
        "target == draft at every drafted position (never rejected, bonus always drawn)",
        True,
    ),
    "tiny": (_fam_tiny, "probabilities of 1e-6 in the target where the draft is large and vice versa", False),
    "flatter_draft": (_fam_flatter, "uniform draft against a peaked target", True),
    "sharper_draft": (_fam_sharper, "draft = target**4 renormalised (much sharper than the target)", True),
    "positions": (_fam_positions, "context-free, a distinct law at every position (rotated)", True),
    "markov": (
        _fam_markov,
        "context-dependent laws (first-order tree: each row depends on the previous token), with exact zeros",
        True,
    ),
}


#: Families a run uses only when named (``families=[...]``, or ``hostile=``), so the default run
#: and its recorded numbers stay as they were: exact ties (``p/q`` exactly 1, joint ratios exactly
#: 1) and the hostile numerics of :mod:`spectheory.testing.hostile` (their builders also return
#: the arrays the sampler is handed, ``Instance.shown``).
OPT_IN_FAMILIES = {
    "ties": (
        _fam_ties,
        "exact ties: dyadic laws, the draft the target with two tokens' values swapped "
        "(p/q exactly 1 elsewhere; joint ratio exactly 1 along a block, Sun et al.'s binary example)",
        True,
    ),
    **HOSTILE_FAMILIES,
}

#: Every family a run may name.
ALL_FAMILIES = {**FAMILIES, **OPT_IN_FAMILIES}


def make_instance(family: str, vocab_size: int, k: int, rng: RNGLike) -> Instance:
    """Build one instance of ``family`` (a key of :data:`ALL_FAMILIES`) with ``V`` tokens and ``k`` drafts.

    Examples
    --------
    >>> from spectheory.testing.instances import make_instance
    >>> inst = make_instance("equal", 3, 2, rng=0)
    >>> inst.name, inst.first_acceptance()
    ('equal V=3 k=2', 1.0)
    """
    if family not in ALL_FAMILIES:
        raise ValueError(f"family: unknown {family!r}; choose from {sorted(ALL_FAMILIES)}")
    V = check_int(vocab_size, "vocab_size", 2)
    k = check_int(k, "k", 1)
    rng = as_rng(rng)
    build, desc, _ = ALL_FAMILIES[family]
    t, d, *shown = build(rng, V, k)
    t = t / t.sum(-1, keepdims=True)
    d = d / d.sum(-1, keepdims=True)
    s0 = int(rng.integers(V))
    if shown:  # what the sampler is handed: the laws where the builder gives None
        shown = (t if shown[0] is None else shown[0], d if shown[1] is None else shown[1])
    return Instance(f"{family} V={V} k={k}", desc, t, d, s0, family, tuple(shown) or None)


def iid_instance(target: ArrayLike, draft: ArrayLike, k: int, name: str | None = None) -> Instance:
    """The i.i.d. instance: one target and one draft law at every position and after every token.

    Sun et al.'s binary example is ``iid_instance([1/3, 2/3], [2/3, 1/3], k)``.

    Examples
    --------
    >>> from spectheory.testing.instances import iid_instance
    >>> inst = iid_instance([1 / 3, 2 / 3], [2 / 3, 1 / 3], 3)
    >>> inst.name, inst.k, inst.sequence_law(2).round(4).tolist()
    ('iid V=2 k=3', 3, [[0.1111, 0.2222], [0.2222, 0.4444]])
    """
    t, d = np.asarray(target, dtype=np.float64), np.asarray(draft, dtype=np.float64)
    k = check_int(k, "k", 1)
    if t.ndim != 1 or t.shape != d.shape:
        raise ValueError(f"target, draft: expected two laws of the same length, got {t.shape} and {d.shape}")
    V = t.size
    tt, dd = _context_free([t] * (k + 1), [d] * k, V)
    return Instance(name or f"iid V={V} k={k}", "i.i.d.: one target and one draft law everywhere", tt, dd)


# ------------------------------------------------------------------- boundary uniforms
def _untemper(y: int) -> int:
    """Inverse of MT19937's output tempering (so that a chosen 32-bit output can be planted)."""
    y ^= y >> 18
    y ^= (y << 15) & 0xEFC60000
    x = y
    for _ in range(5):
        x = y ^ ((x << 7) & 0x9D2C5680)
    y = x & 0xFFFFFFFF
    x = y
    for _ in range(3):
        x = y ^ (x >> 11)
    return x & 0xFFFFFFFF


def constant_uniform_rng(which: str) -> np.random.Generator:
    r"""A Generator whose first 312 uniforms ``random()`` are all ``0.0`` (``"low"``) or ``1 - 2**-53`` (``"high"``).

    The extreme values a correct sampler must handle: with ``u = 0`` the test
    ``u <= p(x)/q(x)`` wrongly accepts a token of target probability 0 (``u < ...`` does not),
    and ``u`` just below 1 exposes CDFs that do not reach 1. Built by planting 32-bit outputs
    into MT19937's state. The words are never 0, so integer draws (``integers``) still terminate.

    Examples
    --------
    >>> from spectheory.testing.instances import constant_uniform_rng
    >>> constant_uniform_rng("low").random(3).tolist()
    [0.0, 0.0, 0.0]
    >>> constant_uniform_rng("high").random() == 1 - 2**-53
    True
    """
    if which == "low":
        word = 1  # (a >> 5) == 0 and (b >> 6) == 0  ->  random() == 0.0
    elif which == "high":
        word = 0xFFFFFFFF  # -> random() == (2**53 - 1) / 2**53
    else:
        raise ValueError(f"which: expected 'low' or 'high', got {which!r}")
    bg = np.random.MT19937(0)
    state = bg.state
    state["state"]["key"] = np.full(624, _untemper(word), dtype=np.uint32)
    state["state"]["pos"] = 0
    bg.state = state
    return np.random.Generator(bg)

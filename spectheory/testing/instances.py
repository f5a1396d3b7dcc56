r"""Test instances for the conformance kit: small context-dependent laws with exact answers.

An :class:`Instance` describes one speculative *round* of ``k`` draft tokens as a tiny
first-order tree. Position ``j`` (``0 <= j <= k``) has next-token laws that depend on the
previous token ``s`` (``s = s0`` before the round):

* ``target[j, s]`` -- target law at position ``j`` after token ``s`` (``p``);
* ``draft[j, s]`` -- draft law at position ``j < k`` after token ``s`` (``q``).

The kit draws the draft tokens itself, ``x_0 ~ q_0(. | s0)``, ``x_j ~ q_j(. | x_{j-1})``, and
hands the verifier ``target_probs[j] = target[j, x_{j-1}]`` (``k+1`` rows, the last being the
bonus law after all drafts) and ``draft_probs[j] = draft[j, x_{j-1}]``. A context-free
instance has identical rows for every ``s``. Everything a correct (lossless) verifier must
produce is then known exactly:

* the law of the sequence, once the emitted tokens are *completed* to ``k+1`` tokens by the
  target itself (as the next round would do), is :math:`\prod_j p_j(y_j | y_{j-1})`
  (:meth:`Instance.sequence_law`), with position marginals :meth:`Instance.position_laws`;
* standard token verification accepts at least ``i`` drafts with probability
  :math:`P(N \ge i) = \sum_s a_i(s)`, :math:`a_0 = e_{s_0}`,
  :math:`a_i(s) = \sum_{s'} a_{i-1}(s') \min(p_{i-1}(s|s'), q_{i-1}(s|s'))`
  (:meth:`Instance.accepted_count_law`), the optimum for the first position being
  :math:`\beta = \sum_x \min(p_0(x), q_0(x))`.

The adversarial *families* (:data:`FAMILIES`) are the cases on which real samplers break.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._guards import as_law, as_rng, check_int
from .._typing import RNGLike
from ..laws.sampling import normalized_cdf, sample_from_cdf

__all__ = ["Instance", "FAMILIES", "make_instance", "constant_uniform_rng"]

TINY = 1e-6


@dataclass(frozen=True)
class Instance:
    """One round's laws as a tiny first-order tree (see the module docstring).

    Parameters
    ----------
    name : str
        Family name plus sizes, e.g. ``"markov V=4 k=3"``.
    description : str
        What the instance stresses.
    target : ndarray, shape (k+1, V, V)
        ``target[j, s]``: target law at position ``j`` after token ``s``.
    draft : ndarray, shape (k, V, V)
        ``draft[j, s]``: draft law at position ``j`` after token ``s``.
    s0 : int
        Token before the round.
    """

    name: str
    description: str
    target: np.ndarray
    draft: np.ndarray
    s0: int = 0
    family: str = field(default="custom")

    def __post_init__(self):
        t = as_law(self.target, "target", min_ndim=3)
        d = as_law(self.draft, "draft", min_ndim=3)
        k1, V, V2 = t.shape
        if V != V2 or d.shape != (k1 - 1, V, V) or k1 < 2:
            raise ValueError(
                f"target, draft: expected shapes (k+1, V, V) and (k, V, V) with k >= 1, "
                f"got {t.shape} and {d.shape}"
            )
        s0 = check_int(self.s0, "s0", 0)
        if s0 >= V:
            raise ValueError(f"s0: must lie in [0, {V}), got {s0}")
        object.__setattr__(self, "target", t)
        object.__setattr__(self, "draft", d)
        object.__setattr__(self, "s0", s0)

    @property
    def k(self) -> int:
        """Number of draft tokens per round."""
        return self.draft.shape[0]

    @property
    def vocab_size(self) -> int:
        return self.target.shape[-1]

    # ---------------------------------------------------------------- exact answers
    def sequence_law(self, length: int | None = None) -> np.ndarray:
        r"""Exact target law of the first ``length`` (default ``k+1``) tokens, shape ``(V,)*length``."""
        L = self.k + 1 if length is None else length
        law = self.target[0, self.s0]
        for j in range(1, L):
            law = law[..., :, None] * self.target[j]
        return law

    def position_laws(self) -> np.ndarray:
        r"""Exact target marginal of each position, shape ``(k+1, V)``."""
        out = [self.target[0, self.s0]]
        for j in range(1, self.k + 1):
            out.append(out[-1] @ self.target[j])
        return np.array(out)

    def accepted_count_law(self, stop_token: int | None = None) -> np.ndarray:
        r"""Law of the number ``N`` of accepted drafts under standard token verification, ``(k+1,)``.

        With a ``stop_token``, a round ends once that token is accepted (no further drafts are
        verified): :math:`a_i(s)` then only continues from :math:`a_{i-1}(s')` with
        :math:`s' \ne` the stop token (for :math:`i \ge 2`).
        """
        a = np.zeros(self.vocab_size)
        a[self.s0] = 1.0
        at_least = [1.0]
        for j in range(self.k):
            if stop_token is not None and j >= 1:
                a = a.copy()
                a[stop_token] = 0.0
            a = a @ np.minimum(self.target[j], self.draft[j])
            at_least.append(min(float(a.sum()), at_least[-1]))
        at_least = np.clip(np.array(at_least + [0.0]), 0.0, 1.0)
        return at_least[:-1] - at_least[1:]

    def first_acceptance(self) -> float:
        r""":math:`\beta = \sum_x \min(p_0(x), q_0(x))`, the optimal acceptance of the first draft."""
        return float(np.clip(np.minimum(self.target[0, self.s0], self.draft[0, self.s0]).sum(), 0.0, 1.0))

    def absorbing(self, stop_token: int) -> Instance:
        """The target laws of a protocol that stops at ``stop_token``: after it, only it (absorbing).

        The law a stop-aware sampler must produce, once its output is completed by this
        instance's target (the completion repeats the stop token). Draft laws are unchanged.
        """
        t = self.target.copy()
        t[1:, stop_token] = np.eye(self.vocab_size)[stop_token]
        return Instance(self.name, self.description, t, self.draft, self.s0, self.family)

    # ---------------------------------------------------------------- sampling
    def sample_drafts(self, n: int, rng: RNGLike) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Draw ``n`` draft paths; return ``(target_probs [n,k+1,V], draft_probs [n,k,V], tokens [n,k])``."""
        rng = as_rng(rng)
        k, V = self.k, self.vocab_size
        prev = np.full(n, self.s0, dtype=np.int64)
        tokens = np.empty((n, k), dtype=np.int64)
        tp = np.empty((n, k + 1, V))
        dp = np.empty((n, k, V))
        for j in range(k):
            dp[:, j] = self.draft[j, prev]
            tp[:, j] = self.target[j, prev]
            cdf = normalized_cdf(self.draft[j])[prev]
            prev = sample_from_cdf(cdf, rng.random(n))
            tokens[:, j] = prev
        tp[:, k] = self.target[k, prev]
        return tp, dp, tokens

    def complete(self, emitted: np.ndarray, lengths: np.ndarray, rng: RNGLike) -> np.ndarray:
        """Continue each emitted prefix ``emitted[i, :lengths[i]]`` to ``k+1`` tokens with the target."""
        rng = as_rng(rng)
        out = np.array(emitted, dtype=np.int64, copy=True)
        n = int(out.shape[0])
        cdfs = [normalized_cdf(self.target[j]) for j in range(self.k + 1)]
        prev = np.full(n, self.s0, dtype=np.int64)
        for j in range(self.k + 1):
            u = rng.random(n)
            fill = lengths <= j
            if fill.any():
                out[fill, j] = sample_from_cdf(cdfs[j][prev[fill]], u[fill])
            prev = out[:, j]
        return out

    def emitted_target_prob_zero(self, emitted: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Boolean ``[n]``: the emitted prefix contains a token of target probability exactly 0."""
        n = emitted.shape[0]
        bad = np.zeros(n, dtype=bool)
        prev = np.full(n, self.s0, dtype=np.int64)
        for j in range(emitted.shape[1]):
            live = lengths > j
            tok = np.where(live, emitted[:, j], 0)
            bad |= live & (self.target[j, prev, tok] == 0.0)
            prev = tok
        return bad

    def describe(self) -> str:
        """Human-readable laws (the rows reachable from ``s0`` when context-free, else all)."""
        with np.printoptions(precision=4, suppress=False, linewidth=100):
            lines = [f"{self.name}: {self.description}", f"  s0 = {self.s0}"]
            free = all(np.all(self.target[j] == self.target[j, :1]) for j in range(self.k + 1)) and all(
                np.all(self.draft[j] == self.draft[j, :1]) for j in range(self.k)
            )
            for j in range(self.k + 1):
                rows = [self.s0] if (j == 0 or free) else range(self.vocab_size)
                for s in rows:
                    ctx = "" if (j == 0 or free) else f" | prev={s}"
                    lines.append(f"  target[{j}{ctx}] = {self.target[j, s]}")
                    if j < self.k:
                        lines.append(f"  draft [{j}{ctx}] = {self.draft[j, s]}")
            return "\n".join(lines)


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


def make_instance(family: str, vocab_size: int, k: int, rng: RNGLike) -> Instance:
    """Build one instance of ``family`` (a key of :data:`FAMILIES`) with ``V`` tokens and ``k`` drafts.

    Examples
    --------
    >>> from spectheory.testing.instances import make_instance
    >>> inst = make_instance("equal", 3, 2, rng=0)
    >>> inst.name, inst.first_acceptance()
    ('equal V=3 k=2', 1.0)
    """
    if family not in FAMILIES:
        raise ValueError(f"family: unknown {family!r}; choose from {sorted(FAMILIES)}")
    V = check_int(vocab_size, "vocab_size", 2)
    k = check_int(k, "k", 1)
    rng = as_rng(rng)
    build, desc, _ = FAMILIES[family]
    t, d = build(rng, V, k)
    t = t / t.sum(-1, keepdims=True)
    d = d / d.sum(-1, keepdims=True)
    s0 = int(rng.integers(V))
    return Instance(f"{family} V={V} k={k}", desc, t, d, s0, family)


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

"""Per-position kernel tables of a chain that the stopping engines share (internal)."""

from __future__ import annotations

from contextlib import nullcontext
from functools import lru_cache
from typing import Any

import numpy as np

from ...verifiers.base import get_verifier

#: Components of every value vector: (target calls, draft steps, target-call time, rounds
#: ended by a rejection, bonus tokens); accepted drafts are ``T - rejections - bonus``.
CALLS, DRAFTS, TTIME, REJECTIONS, BONUS = 0, 1, 2, 3, 4
N_COMP = 5


def time_weights(cost: Any) -> np.ndarray:
    """Weights of the value components giving the time ``c * draft steps + target-call time``."""
    w = np.zeros(N_COMP)
    w[DRAFTS], w[TTIME] = cost.c, 1.0
    return w


def single_thread(S):
    """BLAS limited to one thread for mid-sized problems (tiny ones skip threadpoolctl's overhead)."""
    if S < 64:
        return nullcontext()
    from ...exact import blas_single_thread

    return blas_single_thread(S)


class Laws:
    """The tables of one kernel index: target, draft, accepted/rejected masses, draft statistics."""

    def __init__(self, target, draft):
        self.target = target
        self.draft = draft
        self.acc = np.minimum(target, draft)  # accepted mass min(p, q)
        self.rej = np.maximum(target - draft, 0.0)  # residual mass max(p - q, 0)
        with np.errstate(divide="ignore", invalid="ignore"):
            self.ratio = np.where(draft > 0, np.minimum(1.0, target / np.where(draft > 0, draft, 1.0)), 0.0)
            logq = np.where(draft > 0, np.log(np.where(draft > 0, draft, 1.0)), 0.0)
        self.top = draft.max(-1)  # top probability per state
        self.entropy = -(draft * logq).sum(-1)  # entropy (nats) per state


class Checks:
    """What a single-path verifier does with one drafted token at a kernel index and phase.

    Attributes
    ----------
    drafting : ndarray [S, V]
        The law the drafted token is drawn from (the draft's, or one-hot at its argmax for
        greedy drafting, ``Verifier.drafting == "argmax"``).
    acc : ndarray [S, V]
        Mass of "token ``x`` drafted and accepted" (the verifier's ``phase_masses``).
    rej : ndarray [S, V]
        Mass of "the drafted token rejected and ``y`` emitted instead".
    ratio : ndarray [S, V]
        ``acc / drafting``: P(accepted | drafted ``x``) (0 where ``x`` is never drafted).
    """

    def __init__(self, drafting, acc, rej):
        self.drafting, self.acc, self.rej = drafting, acc, rej
        with np.errstate(divide="ignore", invalid="ignore"):
            self.ratio = np.where(drafting > 0, acc / np.where(drafting > 0, drafting, 1.0), 0.0)


def _mass_fn(mass: Any, chain: Any) -> tuple[Any, bool]:
    """``(fn(n, i) -> [S, V], position_dependent)`` of a ``phase_masses`` provider (a callable, an
    array ``[S, V]`` or ``[T, S, V]``)."""
    if callable(mass):
        return mass, not chain.is_homogeneous
    arr = np.asarray(mass, dtype=np.float64)
    if arr.ndim == 3:
        return (lambda n, i: arr[n]), True
    return (lambda n, i: arr), False


class Kernels:
    """Access to a chain's laws by kernel index, the verifier's per-token masses
    (:meth:`check`), and the operator ``vec -> sum_x mass[s,x] vec[next(s,x)]``.

    ``verifier`` is a single-path :class:`~spectheory.verifiers.Verifier` (or a registered
    name) that checks one drafted token at a time (it defines ``phase_masses``); a
    whole-round rule (block verification) raises ``ValueError``: a draft-length policy
    stops on the drafted tokens, so its rounds are not the fixed-length rounds such a rule's
    exact engine (``round_transition``) describes.
    """

    def __init__(self, chain: Any, verifier: Any = "token") -> None:
        chain.require_deterministic("draft-length policies (spectheory.stopping)")
        self.chain = chain
        self.S, self.V = chain.n_states, chain.vocab_size
        self.hom = chain.is_homogeneous
        self.first_order = chain.is_first_order
        self.next_state = chain.next_state
        self._hom = Laws(chain.target, chain.draft) if self.hom else None
        self._at = lru_cache(maxsize=64)(self._build)
        self.verifier = get_verifier(verifier).require_path()
        masses = self.verifier.phase_masses(chain)
        if masses is None:
            raise ValueError(
                f"verifier: {self.verifier.name!r} decides on the whole drafted round (its exact "
                "engine is round_transition), so it has no exact value under a draft-length policy "
                "that stops on the drafted tokens; use a token-by-token rule (phase_masses), "
                "FixedGamma (a path round), or Monte Carlo (st.simulate)"
            )
        (self._acc, pos_a), (self._rej, pos_r) = _mass_fn(masses[0], chain), _mass_fn(masses[1], chain)
        #: Whether the verifier's masses depend on the phase (drafts already accepted).
        self.phase = bool(masses[2])
        self._pos = pos_a or pos_r
        self._checks: dict = {}

    def _build(self, n):
        return Laws(self.chain.target[n], self.chain.draft[n])

    def at(self, n: int) -> Laws:
        return self._hom if self._hom is not None else self._at(int(n))

    def check(self, n: int, i: int) -> Checks:
        """The verifier's :class:`Checks` of the token drafted at kernel index ``n`` with ``i``
        drafts of the round already accepted (cached)."""
        key = (int(n) if self._pos else 0, int(i) if self.phase else 0)
        hit = self._checks.get(key)
        if hit is None:
            draft = self.at(n).draft
            if self.verifier.drafting == "argmax":
                drafting = np.eye(self.V)[np.argmax(draft, axis=-1)]
            else:
                drafting = draft
            acc = np.asarray(self._acc(int(n), int(i)), dtype=np.float64)
            rej = np.asarray(self._rej(int(n), int(i)), dtype=np.float64)
            hit = self._checks[key] = Checks(drafting, acc, rej)
        return hit

    def accept_ratio(self, n: np.ndarray, i: int, s: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``P(accepted | drafted x)`` of the token drafted at kernel indices ``n [R]`` (phase ``i``)
        from states ``s [R]``: the factor of a run's ``accept_prob`` (Monte Carlo)."""
        if not self._pos:
            return self.check(0, i).ratio[s, x]
        out = np.empty(s.shape)
        for pos in np.unique(n):
            sel = n == pos
            out[sel] = self.check(int(pos), i).ratio[s[sel], x[sel]]
        return out

    def push(self, vec, mass):
        """The forward operator: ``out[s'] = sum_{s,x: next(s,x) = s'} vec[s] mass[s, x]`` for
        ``vec [S]`` (the state law after one more token)."""
        if self.first_order:
            return vec @ mass
        return np.bincount(self.next_state.ravel(), weights=(vec[:, None] * mass).ravel(), minlength=self.S)

    def apply(self, mass, vec):
        """``out[s] = sum_x mass[s, x] * vec[next_state[s, x]]`` for ``vec`` of shape ``[S, ...]``."""
        if self.first_order:
            flat = vec.reshape(vec.shape[0], -1)
            return (mass @ flat).reshape((mass.shape[0],) + vec.shape[1:])
        return np.einsum("sv,sv...->s...", mass, vec[self.next_state])

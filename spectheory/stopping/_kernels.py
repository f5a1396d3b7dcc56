"""Per-position kernel tables of a chain that the stopping engines share (internal)."""

from __future__ import annotations

from contextlib import nullcontext
from functools import lru_cache
from typing import Any

import numpy as np

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
    from ..exact import blas_single_thread

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


class Kernels:
    """Access to a chain's laws by kernel index, and the operator ``vec -> sum_x mass[s,x] vec[next(s,x)]``."""

    def __init__(self, chain):
        chain.require_deterministic("draft-length policies (spectheory.stopping)")
        self.chain = chain
        self.S, self.V = chain.n_states, chain.vocab_size
        self.hom = chain.is_homogeneous
        self.first_order = chain.is_first_order
        self.next_state = chain.next_state
        self._hom = Laws(chain.target, chain.draft) if self.hom else None
        self._at = lru_cache(maxsize=64)(self._build)

    def _build(self, n):
        return Laws(self.chain.target[n], self.chain.draft[n])

    def at(self, n: int) -> Laws:
        return self._hom if self._hom is not None else self._at(int(n))

    def apply(self, mass, vec):
        """``out[s] = sum_x mass[s, x] * vec[next_state[s, x]]`` for ``vec`` of shape ``[S, ...]``."""
        if self.first_order:
            flat = vec.reshape(vec.shape[0], -1)
            return (mass @ flat).reshape((mass.shape[0],) + vec.shape[1:])
        return np.einsum("sv,sv...->s...", mass, vec[self.next_state])

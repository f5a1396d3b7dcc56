r"""Sampling from a chain's kernels along drafted paths: the one sampler of every round kind.

A row of a chain is addressed by ``(m, s)``: kernel index ``m`` (the position; ignored for a
homogeneous chain, pass ``None``) and state ``s``. :class:`ChainSampler` draws target, draft and
token-verification residual ``max(target - draft, 0)`` tokens by inverse CDF, and hands out the
rows themselves, single probabilities and the draft's top probability and entropy per row.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..laws.sampling import CdfTable, normalized_cdf, residual_weights, sample_from_cdf

__all__ = ["ChainSampler", "sample_initial", "TABLE_LIMIT"]

#: Chains with at most this many kernel entries get precomputed CDF tables (3 extra copies).
TABLE_LIMIT = 1 << 23
_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_STATS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: Which law :meth:`ChainSampler.sample` draws from.
TARGET, DRAFT, RESIDUAL = 0, 1, 2


class ChainSampler:
    """Inverse-CDF sampling of a chain's target, draft and residual rows.

    CDFs of the three laws are precomputed once per chain (kernels are read-only) when the
    chain has at most :data:`TABLE_LIMIT` entries, and sampled with guide tables
    (:class:`~spectheory.laws.sampling.CdfTable`, O(1) expected per token); otherwise rows are
    gathered and their CDFs computed per call (O(V)). Both give identical tokens for
    identical uniforms.

    Parameters
    ----------
    chain : DecodingChain

    Examples
    --------
    >>> import numpy as np, spectheory as st
    >>> from spectheory.rounds import ChainSampler
    >>> smp = ChainSampler(st.DecodingChain.iid([0.0, 1.0], [1.0, 0.0]))
    >>> smp.sample_target(None, np.zeros(3, int), np.array([0.1, 0.5, 0.9])).tolist()
    [1, 1, 1]
    >>> smp.sample_draft(None, np.zeros(2, int), np.array([0.2, 0.7])).tolist()
    [0, 0]
    """

    def __init__(self, chain: Any) -> None:
        self.chain = chain
        self.hom = chain.is_homogeneous
        self.S = chain.n_states
        self.V = chain.vocab_size
        self.target, self.draft, self.next_state = chain.target, chain.draft, chain.next_state
        self.stochastic = bool(getattr(chain, "is_stochastic", False))
        self._flat = {id(chain.target): chain.target.reshape(-1), id(chain.draft): chain.draft.reshape(-1)}
        self.tables = None
        if self.uses_tables(chain):
            tables = _TABLES.get(chain)
            if tables is None:
                tables = tuple(
                    CdfTable(w)
                    for w in (chain.target, chain.draft, residual_weights(chain.target, chain.draft))
                )
                _TABLES[chain] = tables
            self.tables = tables

    @staticmethod
    def uses_tables(chain: Any) -> bool:
        """Whether the chain is small enough for precomputed CDF tables (:data:`TABLE_LIMIT`)."""
        return bool(chain.target.size <= TABLE_LIMIT)

    # ------------------------------------------------------------------ rows
    def row_index(self, m: Any, s: np.ndarray) -> np.ndarray:
        """Flat row index of ``(m, s)`` in ``kernel.reshape(-1, V)``."""
        return s if self.hom else m * self.S + s

    def rows(self, kernel: np.ndarray, m: Any, s: np.ndarray) -> np.ndarray:
        """``kernel[(m,) s]``: the rows ``[R, V]`` of one of the chain's kernels."""
        return kernel[s] if self.hom else kernel[m, s]

    def probs(self, kernel: np.ndarray, m: Any, s: np.ndarray, x: np.ndarray) -> np.ndarray:
        """``kernel[(m,) s, x]`` for a kernel of the chain (flat ``take``, faster than 2-d indexing)."""
        return np.take(self._flat[id(kernel)], self.row_index(m, s) * self.V + x)

    def draft_stats(self, m: Any, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(top probability, entropy in nats)`` of the draft rows ``(m, s)``."""
        stats = _STATS.get(self.chain)
        if stats is None:
            d = self.chain.draft
            with np.errstate(divide="ignore", invalid="ignore"):
                logq = np.where(d > 0, np.log(np.where(d > 0, d, 1.0)), 0.0)
            stats = (d.max(-1), -(d * logq).sum(-1))
            _STATS[self.chain] = stats
        top, entropy = stats
        return self.rows(top, m, s), self.rows(entropy, m, s)

    # ------------------------------------------------------------------ draws
    def sample(self, which: int, m: Any, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        """Inverse CDF of law ``which`` (:data:`TARGET`, :data:`DRAFT`, :data:`RESIDUAL`) at ``(m, s)``."""
        if self.tables is not None:
            return self.tables[which].sample(self.row_index(m, s), u)
        t = self.rows(self.target, m, s)
        if which == DRAFT:
            w = self.rows(self.draft, m, s)
        elif which == RESIDUAL:
            w = residual_weights(t, self.rows(self.draft, m, s))
        else:
            w = t
        return sample_from_cdf(normalized_cdf(w), u)

    def sample_target(self, m: Any, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.sample(TARGET, m, s, u)

    def sample_draft(self, m: Any, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.sample(DRAFT, m, s, u)

    def sample_residual(self, m: Any, s: np.ndarray, u: np.ndarray) -> np.ndarray:
        return self.sample(RESIDUAL, m, s, u)

    def next_states(self, s: np.ndarray, x: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """States after token ``x`` in state ``s``: the map, or one draw each for stochastic
        transitions (``rng.random(len(s))``, none otherwise)."""
        if self.stochastic:
            return self.chain.sample_next_state(s, x, rng.random(np.shape(s)[0]))
        return self.next_state[s, x]


def sample_initial(chain: Any, size: int, rng: np.random.Generator) -> np.ndarray:
    """``size`` initial states by inverse CDF of ``chain.initial`` (one ``rng.random(size)``).

    ``searchsorted(side="right")`` counts the entries ``<= u``: the rule of
    :func:`~spectheory.laws.sampling.sample_categorical` (and of ``Generator.choice``).
    """
    return np.searchsorted(normalized_cdf(chain.initial), rng.random(size), side="right").astype(np.int64)

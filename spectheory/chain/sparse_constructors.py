"""Constructors of :class:`~spectheory.chain.SparseDecodingChain` (a mixin): from dense kernels
truncated by ``top_k`` / ``mass``, from per-state top-k rows (what a real model gives), and
random sparse chains (tests and benchmarks)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .._guards import SUM_TOL, as_rng, check_int, check_prob
from .._typing import RNGLike
from .sparse_rows import rows_from_top_k, truncate_rows

__all__ = ["SparseChainConstructors"]

_C = TypeVar("_C", bound="SparseChainConstructors")


class SparseChainConstructors:
    """Alternative constructors (mixed into :class:`~spectheory.chain.SparseDecodingChain`)."""

    if TYPE_CHECKING:

        def __init__(
            self,
            target: Any,
            draft: Any,
            initial: ArrayLike | None = None,
            next_state: ArrayLike | None = None,
            *,
            target_tail: ArrayLike | None = None,
            draft_tail: ArrayLike | None = None,
            atol: float = ...,
        ) -> None: ...

    @classmethod
    def from_dense(
        cls: type[_C],
        target: ArrayLike,
        draft: ArrayLike,
        initial: ArrayLike | None = None,
        next_state: ArrayLike | None = None,
        *,
        top_k: int | None = None,
        mass: float | None = None,
        atol: float = SUM_TOL,
    ) -> _C:
        """From dense kernels ``[S, V]``, each row truncated to its ``top_k`` largest entries
        and/or the fewest reaching ``mass`` (:func:`~spectheory.chain.sparse_rows.truncate_rows`;
        neither: exact), the dropped mass recorded as the tails."""
        t, tt = truncate_rows(target, top_k=top_k, mass=mass, name="target")
        d, dt = truncate_rows(draft, top_k=top_k, mass=mass, name="draft")
        return cls(t, d, initial, next_state, target_tail=tt, draft_tail=dt, atol=atol)

    @classmethod
    def from_top_k(
        cls: type[_C],
        target_ids: ArrayLike,
        target_probs: ArrayLike,
        draft_ids: ArrayLike,
        draft_probs: ArrayLike,
        *,
        vocab_size: int,
        target_tail: ArrayLike | None = None,
        draft_tail: ArrayLike | None = None,
        initial: ArrayLike | None = None,
        next_state: ArrayLike | None = None,
    ) -> _C:
        """From each state's kept token ids and probabilities (``[S, k]`` each; ``-1`` ids with
        probability 0 pad short rows) and the mass left out (default ``1 - probs.sum(1)``);
        rows are renormalised (:func:`~spectheory.chain.sparse_rows.rows_from_top_k`)."""
        V = check_int(vocab_size, "vocab_size", 1)
        t, tt = rows_from_top_k(target_ids, target_probs, V, target_tail, name="target")
        d, dt = rows_from_top_k(draft_ids, draft_probs, V, draft_tail, name="draft")
        if t.shape != d.shape:
            raise ValueError(f"target and draft: {t.shape[0]} vs {d.shape[0]} states")
        return cls(t, d, initial, next_state, target_tail=tt, draft_tail=dt)

    @classmethod
    def random(
        cls: type[_C],
        vocab_size: int,
        nnz: int,
        *,
        overlap: float = 0.75,
        similarity: float = 0.5,
        concentration: float = 0.3,
        tail: float = 1e-3,
        rng: RNGLike = None,
    ) -> _C:
        """A random first-order chain (state = last token) with ``nnz`` stored tokens per row.

        The target's row ``s`` keeps ``nnz`` consecutive token ids (mod ``V``) from a random
        start; the draft's the same ids shifted by ``round((1 - overlap) nnz)`` (its support
        shares about ``overlap`` of the target's, as a real draft's top-k); the target's
        probabilities are Dirichlet(``concentration``), the draft's ``similarity`` times the
        target's on the shared ids plus ``1 - similarity`` times a Dirichlet, each row scaled
        to ``1 - tail`` (every row's tail is ``tail``).

        Examples
        --------
        >>> from spectheory.chain import SparseDecodingChain
        >>> c = SparseDecodingChain.random(1000, 8, rng=0)
        >>> c.n_states, c.nnz_per_row, round(float(c.target_tail.max()), 9)
        (1000, 8.0, 0.001)
        """
        V = check_int(vocab_size, "vocab_size", 1)
        k = check_int(nnz, "nnz", 1)
        if k > V:
            raise ValueError(f"nnz: at most vocab_size ({V}), got {k}")
        share = float(check_prob(overlap, "overlap"))
        sim = float(check_prob(similarity, "similarity"))
        left = float(check_prob(tail, "tail", open_high=True))
        if not concentration > 0:
            raise ValueError(f"concentration: must be > 0, got {concentration!r}")
        gen = as_rng(rng)
        start = gen.integers(0, V, (V, 1))
        ids_t = (start + np.arange(k)) % V
        shift = int(round((1.0 - share) * k))
        ids_d = (ids_t + shift) % V
        alpha = np.full(k, float(concentration))
        pt = gen.dirichlet(alpha, V)
        shared = np.zeros((V, k))
        shared[:, : k - shift] = pt[:, shift:]  # the target's law on the draft's ids
        pd = sim * shared + (1.0 - sim) * gen.dirichlet(alpha, V)
        pd /= pd.sum(1, keepdims=True)
        return cls.from_top_k(ids_t, pt * (1.0 - left), ids_d, pd * (1.0 - left), vocab_size=V)
